// Quantize -> dequantize round trips: error bounds derived from each format's step size, exact
// reproduction of values already on a type's grid, zero/constant/extreme blocks, F16/BF16 exactness, and
// the error contract (bad element counts, unsupported types, non-finite input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "format/quant.h"

namespace ember {
namespace {

constexpr GgmlType kQuantizable[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                                     GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                     GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
constexpr GgmlType kBlockTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                    GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
constexpr size_t kN = 256 * 16;  // a whole number of blocks for every type

std::vector<uint8_t> QuantizeOk(GgmlType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowBytes(t, x.size()));
  const Status st = Quantize(t, x.data(), q.data(), x.size());
  EXPECT_TRUE(st.ok()) << GgmlTypeName(t) << ": " << st.ToString();
  return q;
}

std::vector<float> RoundTrip(GgmlType t, const std::vector<float>& x) {
  const std::vector<uint8_t> q = QuantizeOk(t, x);
  std::vector<float> y(x.size(), NAN);
  const Status st = Dequantize(t, q.data(), y.data(), x.size());
  EXPECT_TRUE(st.ok()) << GgmlTypeName(t) << ": " << st.ToString();
  return y;
}

std::vector<float> Gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = g(rng);
  return x;
}

// Data shaped to stress block-level choices: each 256-element super-block gets its own structure.
std::vector<float> Structured(size_t n) {
  std::vector<float> x = Gaussian(n, 7);
  for (size_t i = 0; i < n; ++i) {
    const size_t sb = (i / 256) % 8, j = (i % 256) / 32;
    switch (sb) {
      case 0: x[i] = static_cast<float>(i % 256) / 255.0f - 0.3f; break;    // ramp
      case 1: x[i] *= std::ldexp(1.0f, -static_cast<int>(j)); break;        // sub-block scales 1..2^-7
      case 2: x[i] = std::fabs(x[i]) + 3.0f; break;                          // all positive, offset
      case 3: x[i] = -std::fabs(x[i]) - 0.5f; break;                         // all negative
      case 4: if (i % 32 == 5) x[i] = 40.0f; break;                          // one outlier per block
      case 5: x[i] = (i % 17 == 0) ? x[i] * 10.0f : 0.0f; break;             // sparse spikes
      case 6: x[i] = (i % 2 ? 1.0f : -1.0f) * (1.0f + static_cast<float>(j)); break;  // two levels
      default: x[i] *= 1000.0f; break;                                       // large magnitude
    }
  }
  return x;
}

// Worst-case error of storing d as fp16 (round to nearest; subnormal spacing 2^-24 below 2^-14).
double HalfErr(double d) { return std::max(std::fabs(d) * std::ldexp(1.0, -11), std::ldexp(1.0, -25)); }

double AbsMax(const float* x, size_t n) {
  double a = 0;
  for (size_t i = 0; i < n; ++i) a = std::max(a, std::fabs(static_cast<double>(x[i])));
  return a;
}

// Signed value of largest magnitude (first on ties), as the symmetric legacy formats define their scale.
double SignedMax(const float* x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// Symmetric legacy types (q4_0: half = 8, q5_0: half = 16): d = max/-half, codes 0..2*half-1 for
// values (code - half)*d, so an element is within d/2 of the grid unless it lies past the top code
// (x/d > half - 0.5, the side opposite the extreme), where it clips by at most d.
void CheckSymmetricLegacy(GgmlType t, int half, const std::vector<float>& x) {
  const std::vector<float> y = RoundTrip(t, x);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* xb = &x[32 * b];
    const double d = SignedMax(xb, 32) / -half;
    const double slack = half * HalfErr(d) + 1e-6 * std::fabs(d);
    for (size_t i = 0; i < 32; ++i) {
      const double rel = d != 0 ? xb[i] / d : 0.0;
      const double bound = (rel > half - 0.5 ? std::fabs(d) : std::fabs(d) / 2) + slack;
      ASSERT_LE(std::fabs(y[32 * b + i] - xb[i]), bound) << GgmlTypeName(t) << " element " << 32 * b + i;
    }
  }
}

// Affine legacy types: d = (max - min)/(levels - 1), m = min, every element within d/2 of the grid.
void CheckAffineLegacy(GgmlType t, int levels, const std::vector<float>& x) {
  const std::vector<float> y = RoundTrip(t, x);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* xb = &x[32 * b];
    const double lo = *std::min_element(xb, xb + 32), hi = *std::max_element(xb, xb + 32);
    const double d = (hi - lo) / (levels - 1);
    const double bound = d / 2 + (levels - 1) * HalfErr(d) + HalfErr(lo) + 1e-6 * (hi - lo);
    for (size_t i = 0; i < 32; ++i)
      ASSERT_LE(std::fabs(y[32 * b + i] - xb[i]), bound) << GgmlTypeName(t) << " element " << 32 * b + i;
  }
}

TEST(QuantRoundTrip, Q8_0WithinHalfStepOfAbsMaxOver127) {
  for (const auto& x : {Gaussian(kN, 1), Structured(kN)}) {
    const std::vector<float> y = RoundTrip(GgmlType::Q8_0, x);
    for (size_t b = 0; b < kN / 32; ++b) {
      const double d = AbsMax(&x[32 * b], 32) / 127;
      const double bound = d / 2 + 127 * HalfErr(d) + 1e-6 * d;
      for (size_t i = 32 * b; i < 32 * b + 32; ++i) ASSERT_LE(std::fabs(y[i] - x[i]), bound) << i;
    }
  }
}

TEST(QuantRoundTrip, Q4_0AndQ5_0WithinStepBounds) {
  for (const auto& x : {Gaussian(kN, 2), Structured(kN)}) {
    CheckSymmetricLegacy(GgmlType::Q4_0, 8, x);
    CheckSymmetricLegacy(GgmlType::Q5_0, 16, x);
  }
}

TEST(QuantRoundTrip, Q4_1AndQ5_1WithinHalfStep) {
  for (const auto& x : {Gaussian(kN, 3), Structured(kN)}) {
    CheckAffineLegacy(GgmlType::Q4_1, 16, x);
    CheckAffineLegacy(GgmlType::Q5_1, 32, x);
  }
}

// RMS error of a plain per-sub-block quantizer with unquantized float scales: affine min/max over
// [min(x, 0), max(x)] with nmax steps (the K4/K5 shape) or symmetric with the extreme at +-32 (q6_K's
// 16-element sub-blocks). A sound K-quant search must beat it even though its scales cost 6-8 bits.
double NaiveRms(const std::vector<float>& x, int sub, int nmax, bool symmetric) {
  double se = 0;
  for (size_t s = 0; s < x.size() / sub; ++s) {
    const float* xs = &x[sub * s];
    double lo = std::min(0.0, static_cast<double>(*std::min_element(xs, xs + sub)));
    double step = (*std::max_element(xs, xs + sub) - lo) / nmax;
    if (symmetric) {
      step = AbsMax(xs, sub) / 32;
      lo = 0;
    }
    for (int i = 0; i < sub; ++i) {
      const double q = step > 0 ? std::round((xs[i] - lo) / step) : 0;
      const double v = lo + std::clamp(q, symmetric ? -32.0 : 0.0, symmetric ? 31.0 : nmax) * step;
      se += (v - xs[i]) * (v - xs[i]);
    }
  }
  return std::sqrt(se / x.size());
}

double Rms(const std::vector<float>& a, const std::vector<float>& b) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return std::sqrt(se / a.size());
}

struct KCase {
  GgmlType type;
  int sub, nmax;
  bool symmetric;
  double gaussian_rms;  // bound on RMS error / sigma for N(0, 1) data
};

// Gaussian bounds: a uniform quantizer with step D has RMS error D/sqrt(12). Expected sub-block ranges
// of N(0,1) samples are ~4.1 (32 samples, K4/K5: D = 4.1/15, 4.1/31) and amax ~1.9 (16 samples, q6_K:
// D = 1.9/32), giving 0.079, 0.038 and 0.017; the bounds allow ~5% over those plain-quantizer values.
constexpr KCase kKCases[] = {{GgmlType::Q4_K, 32, 15, false, 0.083},
                             {GgmlType::Q5_K, 32, 31, false, 0.040},
                             {GgmlType::Q6_K, 16, 31, true, 0.018}};

TEST(QuantRoundTrip, KQuantsBeatPlainQuantizerRms) {
  for (const KCase& c : kKCases) {
    for (const auto& x : {Gaussian(kN, 4), Structured(kN)}) {
      const double rms = Rms(RoundTrip(c.type, x), x);
      const double naive = NaiveRms(x, c.sub, c.nmax, c.symmetric);
      EXPECT_LT(rms, naive) << GgmlTypeName(c.type);
    }
    // The same relative bound at weight-like and tiny magnitudes, where the fp16 super-block steps are
    // subnormal and coarse.
    for (float sigma : {1.0f, 0.02f, 1e-4f}) {
      const std::vector<float> g = Gaussian(kN, 5, sigma);
      EXPECT_LT(Rms(RoundTrip(c.type, g), g), c.gaussian_rms * sigma) << GgmlTypeName(c.type) << " sigma " << sigma;
    }
  }
}

// Max error per sub-block: within one step of the sub-block's own range (the search trades a fraction
// of a step on an outlier for a better fit of the rest), plus what coding its scale against the
// super-block costs. Coded scales are within 1.5 super-block steps D of the fitted ones (nearest code,
// then a +-1 neighbour search), which moves the top code by 1.5*D*nmax and the offset by 1.5*Dmin.
// D <= (largest sub-block range)/(nmax-1)/63 (q6_K: largest amax/30/128), Dmin <= largest offset/63.
double KSubBlockBound(const KCase& c, const float* sb, int s) {
  double max_range = 0, max_offset = 0, step = 0;
  for (int j = 0; j < 256 / c.sub; ++j) {
    const float* xs = sb + c.sub * j;
    const double lo = std::min(0.0f, *std::min_element(xs, xs + c.sub));
    const double range = c.symmetric ? AbsMax(xs, c.sub) : *std::max_element(xs, xs + c.sub) - lo;
    max_range = std::max(max_range, range);
    max_offset = std::max(max_offset, -lo);
    if (j == s) step = c.symmetric ? range / 31 : range / c.nmax;
  }
  const double coding = c.symmetric ? 1.5 * 32 * max_range / 30 / 128
                                    : 1.5 * (c.nmax * max_range / (c.nmax - 1) / 63 + max_offset / 63);
  return step + coding + 1e-6 * max_range;
}

TEST(QuantRoundTrip, KQuantsMaxErrorWithinSubBlockStepPlusScaleCoding) {
  for (const KCase& c : kKCases) {
    for (const auto& x : {Gaussian(kN, 6), Structured(kN)}) {
      const std::vector<float> y = RoundTrip(c.type, x);
      for (size_t i = 0; i < kN; ++i) {
        const double bound = KSubBlockBound(c, &x[i / 256 * 256], static_cast<int>(i % 256) / c.sub);
        ASSERT_LE(std::fabs(y[i] - x[i]), bound) << GgmlTypeName(c.type) << " element " << i;
      }
    }
  }
}

// ---- Values already on a type's grid come back exactly -------------------------------------------

// Integer codes in [lo, hi] for n elements, with every block of `block` elements containing `forced`.
std::vector<int> Codes(size_t n, int lo, int hi, size_t block, int forced, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = i % block == (i / block) % block ? forced : u(rng);
  return q;
}

TEST(QuantRoundTrip, LegacyTypesExactOnGrid) {
  struct Grid {
    GgmlType type;
    int lo, hi, forced;  // code range; `forced` is the code that fixes the block scale
    float step, offset;
  };
  // Symmetric types: the extreme sits on the code that maps to -half (negative step: the extreme is
  // positive). Affine types: both ends present so that (max - min)/(levels - 1) is exactly the step.
  const Grid grids[] = {{GgmlType::Q8_0, -127, 127, 127, 0.03125f, 0.0f},
                        {GgmlType::Q8_0, -127, 127, -127, 0.5f, 0.0f},
                        {GgmlType::Q4_0, -8, 7, -8, 0.25f, 0.0f},
                        {GgmlType::Q4_0, -8, 7, -8, -0.0625f, 0.0f},
                        {GgmlType::Q5_0, -16, 15, -16, 0.125f, 0.0f},
                        {GgmlType::Q5_0, -16, 15, -16, -2.0f, 0.0f},
                        {GgmlType::Q4_1, 0, 15, 15, 0.125f, -1.25f},
                        {GgmlType::Q5_1, 0, 31, 31, 0.0625f, 0.75f}};
  for (const Grid& g : grids) {
    std::vector<int> q = Codes(kN, g.lo, g.hi, 32, g.forced, 11);
    if (g.type == GgmlType::Q4_1 || g.type == GgmlType::Q5_1) {
      for (size_t b = 0; b < kN / 32; ++b) q[32 * b + (b + 7) % 32] = 0;  // the block minimum
    }
    std::vector<float> x(kN);
    for (size_t i = 0; i < kN; ++i) x[i] = g.offset + static_cast<float>(q[i]) * g.step;
    const std::vector<float> y = RoundTrip(g.type, x);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << GgmlTypeName(g.type) << " step " << g.step << " i " << i;
  }
}

// K-quant grids built from the format formula: sub-block scales that are integer multiples of a
// power-of-two super-block step, with the largest code multiple at the end of its range (63 for K4/K5
// scales and mins, -128 for q6_K) so the super-block step is recoverable, and both ends of the code
// range present in every sub-block so each sub-block's scale is too.
TEST(QuantRoundTrip, KQuantsExactOnGrid) {
  const float d = 1.0f / 64, dmin = 1.0f / 128;
  const int sc[8] = {63, 40, 17, 5, 63, 33, 1, 50};
  const int mn[8] = {63, 0, 12, 30, 7, 63, 2, 44};
  for (const auto& [type, nmax] : {std::pair{GgmlType::Q4_K, 15}, std::pair{GgmlType::Q5_K, 31}}) {
    std::vector<int> q = Codes(kN, 0, nmax, 32, nmax, 12);
    for (size_t b = 0; b < kN / 32; ++b) q[32 * b + (b + 3) % 32] = 0;
    std::vector<float> x(kN);
    for (size_t i = 0; i < kN; ++i) {
      const int j = static_cast<int>(i % 256) / 32;
      x[i] = d * static_cast<float>(sc[j]) * static_cast<float>(q[i]) - dmin * static_cast<float>(mn[j]);
    }
    const std::vector<float> y = RoundTrip(type, x);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << GgmlTypeName(type) << " element " << i;
  }

  const float d6 = 1.0f / 512;
  const int sc6[16] = {-128, 100, -37, 5, 1, 127, -1, 64, -64, 3, 90, -100, 12, -33, 2, 77};
  const std::vector<int> q6 = Codes(kN, -32, 31, 16, -32, 13);
  std::vector<float> x(kN);
  for (size_t i = 0; i < kN; ++i) x[i] = d6 * static_cast<float>(sc6[(i % 256) / 16]) * static_cast<float>(q6[i]);
  const std::vector<float> y = RoundTrip(GgmlType::Q6_K, x);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i]) << "q6_K element " << i;
}

// ---- Zero, constant and extreme blocks ----------------------------------------------------------

TEST(QuantRoundTrip, AllZeroBlocksStayZero) {
  const std::vector<float> zeros(kN, 0.0f);
  for (GgmlType t : kQuantizable) {
    const std::vector<float> y = RoundTrip(t, zeros);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], 0.0f) << GgmlTypeName(t) << " element " << i;
  }
}

// A constant block is one grid point away from exact: the error is the fp16 rounding of its scale
// (relative 2^-11, or subnormal spacing 2^-24 for tiny scales, times at most 128 codes).
TEST(QuantRoundTrip, ConstantBlocksWithinScaleRounding) {
  for (float c : {0.3f, -2.5f, 7.0f, -1e-3f}) {
    const std::vector<float> x(kN, c);
    for (GgmlType t : kBlockTypes) {
      const std::vector<float> y = RoundTrip(t, x);
      for (size_t i = 0; i < kN; ++i)
        ASSERT_NEAR(y[i], c, std::fabs(c) * 1e-3 + 128 * std::ldexp(1.0, -25)) << GgmlTypeName(t) << " " << c;
    }
  }
}

// Tiny, huge and mixed magnitudes: outputs stay finite; within fp16's scale range the per-type step
// bounds still hold, beyond it the scales saturate (largest values clip) instead of becoming inf.
TEST(QuantRoundTrip, ExtremeMagnitudesStayFinite) {
  std::vector<float> x = Gaussian(kN, 9);
  for (size_t i = 0; i < kN; ++i) {
    switch ((i / 256) % 4) {
      case 0: x[i] *= 1e-30f; break;                      // scales underflow fp16
      case 1: x[i] = (i % 2 ? 1.0f : -1.0f) * 6e4f; break;  // near fp16's max, as values
      case 2: x[i] *= (i % 32 == 0) ? 1e7f : 1e-3f; break;  // scales beyond fp16's range
      default: x[i] = (i % 3 == 0) ? FLT_MAX : -FLT_MAX; break;
    }
  }
  for (GgmlType t : kBlockTypes) {
    const bool symmetric = t == GgmlType::Q4_0 || t == GgmlType::Q5_0 || t == GgmlType::Q8_0 || t == GgmlType::Q6_K;
    const std::vector<float> y = RoundTrip(t, x);
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << GgmlTypeName(t) << " element " << i << " of " << x[i];
      ASSERT_LE(std::fabs(y[i]), 1.01 * AbsMax(&x[i / 256 * 256], 256)) << GgmlTypeName(t) << " element " << i;
      if ((i / 256) % 4 == 0) {
        ASSERT_LE(std::fabs(y[i] - x[i]), 1e-29f) << GgmlTypeName(t);
      }
      // Symmetric types round x/d to the nearest code: saturated or not, the sign is kept (or zeroed).
      if (symmetric) {
        ASSERT_GE(y[i] * x[i], 0.0f) << GgmlTypeName(t) << " element " << i;
      }
    }
  }
  CheckSymmetricLegacy(GgmlType::Q4_0, 8, std::vector<float>(x.begin() + 256, x.begin() + 512));
  CheckAffineLegacy(GgmlType::Q5_1, 32, std::vector<float>(x.begin() + 256, x.begin() + 512));
}

}  // namespace
}  // namespace ember
