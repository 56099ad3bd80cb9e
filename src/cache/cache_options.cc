#include "cache/cache_options.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ember {

size_t DefaultPromptCacheBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{1} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page) / 4;
}

StatusOr<size_t> ParseByteSize(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || !std::isfinite(v) || v < 0) return InvalidArgument("bad byte size '" + text + "'");
  std::string unit(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && (unit.ends_with("IB") || unit.ends_with("B"))) {
    unit.resize(unit.size() - (unit.ends_with("IB") ? 2 : 1));
  } else if (unit == "B") {
    unit.clear();
  }
  double mult = 1;
  if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return InvalidArgument("bad byte size unit in '" + text + "' (use K, M, G or T)");
  const double bytes = v * mult;
  if (bytes > 1.8e19) return InvalidArgument("byte size '" + text + "' is too large");
  return static_cast<size_t>(bytes);
}

std::string FormatBytes(size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

}  // namespace ember
