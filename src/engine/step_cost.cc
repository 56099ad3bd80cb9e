#include "engine/step_cost.h"

#include <algorithm>
#include <cmath>

namespace ember {

double AttentionWork(int64_t held, int64_t rows) {
  const double r = static_cast<double>(std::max<int64_t>(rows, 0));
  return r * static_cast<double>(std::max<int64_t>(held, 0)) + r * (r + 1) / 2;
}

void StepCostModel::Record(const StepShape& shape, double ms) {
  if (shape.rows <= 0 || !(ms >= 0) || !std::isfinite(ms)) return;
  samples_[static_cast<size_t>(next_)] = {static_cast<double>(shape.rows), shape.attn, ms};
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
  Refit();
}

double StepCostModel::PredictMs(const StepShape& s) const {
  if (!ready_) return 0;
  return c0_ + c_rows_ * static_cast<double>(s.rows) + c_attn_ * s.attn;
}

int64_t StepCostModel::PromptRowsWithin(const StepShape& base, int64_t held, double target_ms, int64_t min_rows,
                                        int64_t max_rows) const {
  max_rows = std::max<int64_t>(max_rows, 0);
  min_rows = std::clamp<int64_t>(min_rows, 0, max_rows);
  if (!ready_ || target_ms <= 0) return max_rows;
  auto fits = [&](int64_t n) {
    return PredictMs({base.rows + n, base.attn + AttentionWork(held, n)}) <= target_ms;
  };
  if (fits(max_rows)) return max_rows;
  // The prediction grows with n (the coefficients are never negative): the largest n that fits.
  int64_t lo = min_rows, hi = max_rows;  // fits(hi) is false
  if (!fits(lo)) return min_rows;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// Least squares over the features selected by `mask` (bit 0: constant, 1: rows, 2: attention), by the
// normal equations. Features are scaled to comparable sizes first. false: singular or a negative
// coefficient (a step never gets cheaper with more work, so such a fit is noise).
struct Fit {
  double c[3] = {0, 0, 0};
  double sse = 0;
};

bool FitSubset(const double (*x)[3], const double* y, int n, int mask, Fit* out) {
  int idx[3], k = 0;
  for (int j = 0; j < 3; ++j)
    if (mask & (1 << j)) idx[k++] = j;
  double scale[3] = {1, 1, 1};
  for (int a = 0; a < k; ++a) {
    double m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i][idx[a]]));
    scale[a] = m > 0 ? m : 1;
  }
  double A[3][4] = {};
  for (int i = 0; i < n; ++i) {
    for (int a = 0; a < k; ++a) {
      const double xa = x[i][idx[a]] / scale[a];
      for (int b = 0; b < k; ++b) A[a][b] += xa * x[i][idx[b]] / scale[b];
      A[a][3] += xa * y[i];
    }
  }
  for (int col = 0; col < k; ++col) {  // Gauss-Jordan with partial pivoting
    int piv = col;
    for (int r = col + 1; r < k; ++r)
      if (std::fabs(A[r][col]) > std::fabs(A[piv][col])) piv = r;
    if (std::fabs(A[piv][col]) < 1e-9 * n) return false;
    for (int c = 0; c < 4; ++c) std::swap(A[col][c], A[piv][c]);
    for (int r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = A[r][col] / A[col][col];
      for (int c = col; c < 4; ++c) A[r][c] -= f * A[col][c];
    }
  }
  Fit f;
  for (int a = 0; a < k; ++a) {
    const double c = A[a][3] / A[a][a] / scale[a];
    if (!(c >= 0) || !std::isfinite(c)) return false;
    f.c[idx[a]] = c;
  }
  for (int i = 0; i < n; ++i) {
    const double e = f.c[0] * x[i][0] + f.c[1] * x[i][1] + f.c[2] * x[i][2] - y[i];
    f.sse += e * e;
  }
  *out = f;
  return true;
}

}  // namespace

void StepCostModel::Refit() {
  ready_ = false;
  if (count_ < kMinSamples) return;
  double x[kWindow][3], y[kWindow];
  for (int i = 0; i < count_; ++i) {
    const Sample& s = samples_[static_cast<size_t>(i)];
    x[i][0] = 1;
    x[i][1] = s.rows;
    x[i][2] = s.attn;
    y[i] = s.ms;
  }
  // The best non-negative fit over the feature subsets that include rows (steps always have rows; data
  // of one shape leaves only the rows-only fit solvable).
  bool any = false;
  Fit best;
  for (int mask : {7, 3, 6, 2}) {
    Fit f;
    if (!FitSubset(x, y, count_, mask, &f)) continue;
    if (!any || f.sse < best.sse * (1 - 1e-9)) best = f;
    any = true;
  }
  if (!any) return;
  c0_ = best.c[0];
  c_rows_ = best.c[1];
  c_attn_ = best.c[2];
  ready_ = true;
}

}  // namespace ember
