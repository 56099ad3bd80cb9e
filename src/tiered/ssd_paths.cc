#include "tiered/ssd_paths.h"

#include <cstdlib>

namespace ember {

std::string DefaultSsdCacheDir() {
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x == '/') return std::string(x) + "/ember";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/ember";
  return "";
}

}  // namespace ember
