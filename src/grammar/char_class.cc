// CharClass membership: an ASCII bitmap for the common case, binary search over the ranges otherwise.
#include <algorithm>

#include "grammar/grammar_impl.h"

namespace ember::grammar {

void CharClass::Finish() {
  ascii[0] = ascii[1] = 0;
  for (const auto& [lo, hi] : ranges) {
    for (uint32_t c = lo; c <= hi && c < 128; ++c) ascii[c >> 6] |= uint64_t{1} << (c & 63);
  }
}

bool CharClass::ContainsSlow(uint32_t c) const {
  // The first range whose upper end is >= c is the only one that can hold it.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), c,
                             [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= c;
}

bool CharClass::Intersects(uint32_t lo, uint32_t hi) const {
  auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                             [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= hi;
}

}  // namespace ember::grammar
