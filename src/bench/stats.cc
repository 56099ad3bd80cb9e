#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ember::bench {

double Median(std::vector<double> v) { return Percentile(std::move(v), 50.0); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  p = std::clamp(p, 0.0, 100.0);
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

double SpreadRatio(const std::vector<double>& v) {
  if (v.empty()) return 1.0;
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  if (*mn <= 0.0) return std::numeric_limits<double>::infinity();
  return *mx / *mn;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace ember::bench
