// 64-bit values as fixed-width lower-case hex: cache file names, identity directories, DB keys.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ember {

inline std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace ember
