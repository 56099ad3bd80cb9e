#include "model/delta_net.h"

#include <algorithm>
#include <cmath>

#include "kernels/delta_rule.h"
#include "kernels/fast_exp.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace ember {
namespace {

float Sigmoid(float x) { return 1.0f / (1.0f + kernels::ExpF(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// x /= max(|x|, eps), the norm summed in double (ggml_l2_norm).
void L2Normalize(float* x, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

// The conv's channel group: up to kConvLanes channels, one lane each, their taps transposed to [tap][lane].
constexpr int64_t kConvLanes = 64;
constexpr int64_t kMaxConvTaps = 64;  // ssm.conv_kernel <= 64 (model_config.cc)

// Channels [c0, c0 + nl) of one slice's n rows (qkv and out point at its first row's channel c0; rows
// `stride` apart); state [channel][K - 1] as in the layer's recurrent floats, updated to the slice's last
// K - 1 rows. Per channel and token: sum = fma(x_k, w_k, sum) for taps k = 0..K-1 in order from +0, then
// silu(sum) = sum / (1 + ExpF(-sum)): the same sequence in whatever group or lane a channel falls.
void ConvGroup(const float* wt, int64_t K, int64_t nl, float* state, const float* qkv, int64_t n, int64_t stride,
               float* out) {
  float hist[(kMaxConvTaps - 1) * kConvLanes];  // the state's rows, oldest first, [row][lane]
  for (int64_t k = 0; k + 1 < K; ++k) {
    for (int64_t l = 0; l < nl; ++l) hist[k * kConvLanes + l] = state[l * (K - 1) + k];
  }
  // Row r of the window, relative to the slice's first row (negative: from the state).
  auto row = [&](int64_t r) { return r < 0 ? hist + (K - 1 + r) * kConvLanes : qkv + r * stride; };
  for (int64_t t = 0; t < n; ++t) {
    float sum[kConvLanes] = {}, e[kConvLanes];
    for (int64_t k = 0; k < K; ++k) {
      const float* x = row(t + k - (K - 1));
      const float* w = wt + k * kConvLanes;
      for (int64_t l = 0; l < nl; ++l) sum[l] = std::fma(x[l], w[l], sum[l]);
    }
    for (int64_t l = 0; l < nl; ++l) e[l] = -sum[l];
    kernels::ExpArray(e, e, static_cast<int>(nl));
    float* o = out + t * stride;
    for (int64_t l = 0; l < nl; ++l) o[l] = sum[l] / (1.0f + e[l]);
  }
  for (int64_t k = 0; k + 1 < K; ++k) {
    const float* x = row(n - (K - 1) + k);
    for (int64_t l = 0; l < nl; ++l) state[l * (K - 1) + k] = x[l];
  }
}

}  // namespace

void DeltaNetScratch::Resize(const ModelConfig& c, int64_t max_rows) {
  const auto T = static_cast<size_t>(max_rows);
  qkv_.resize(T * c.ssm_conv_channels());
  conv_.resize(T * c.ssm_conv_channels());
  z_.resize(T * c.ssm_d_inner);
  beta_.resize(T * c.ssm_dt_rank);
  g_.resize(T * c.ssm_dt_rank);
  o_.resize(T * c.ssm_d_inner);
}

void DeltaNetScratch::Forward(const ModelConfig& c, const LayerWeights& w, int layer,
                              std::span<const DeltaNetSlice> slices, const float* xn, int64_t rows, float* out,
                              kernels::ThreadPool& pool, OpTimes* times) {
  const int64_t H = c.ssm_dt_rank, S = c.ssm_d_state;
  {
    OpTimer timer(times, times ? &times->matmul_s : nullptr);
    const kernels::MatMulOut outs[] = {
        {&w.ssm_qkv, qkv_.data()}, {&w.ssm_z, z_.data()}, {&w.ssm_beta, beta_.data()}, {&w.ssm_alpha, g_.data()}};
    kernels::MatMulShared(outs, 4, xn, rows, pool);
  }
  OpTimer timer(times, times ? &times->other_s : nullptr);
  for (int64_t i = 0; i < rows * H; ++i) {
    beta_[static_cast<size_t>(i)] = Sigmoid(beta_[static_cast<size_t>(i)]);
    const int64_t h = i % H;
    // The decay exp(g), g = softplus(alpha + dt) * a: what the recurrence multiplies the state by.
    g_[static_cast<size_t>(i)] = std::exp(Softplus(g_[static_cast<size_t>(i)] + w.ssm_dt[h]) * w.ssm_a[h]);
  }
  Conv(c, w, layer, slices, pool);
  Recurrence(c, layer, slices, rows, pool);
  pool.ParallelFor(rows * H, [&](int64_t b, int64_t e, int) {  // gated RMS norm of each v head
    for (int64_t i = b; i < e; ++i) {
      float* o = o_.data() + i * S;
      const float* z = z_.data() + i * S;
      kernels::RmsNorm(o, w.ssm_norm, c.rms_eps, static_cast<int>(S), o);
      kernels::SiluMul(z, o, o, static_cast<int>(S));  // o *= silu(z), vectorised
    }
  });
  OpTimer mm(times, times ? &times->matmul_s : nullptr);
  kernels::MatMul(w.ssm_out, o_.data(), rows, out, pool);
}

// conv_[t][ch] = silu(Σ_k window[t + k][ch] * w[ch][k]) over the d_conv rows ending at t, the first
// d_conv - 1 of a slice's window coming from its state ([channel][d_conv - 1], oldest first), which then
// keeps the slice's last d_conv - 1 rows. Channels are independent: split over the pool, and within a
// thread's range taken kConvLanes at a time across the rows (ConvGroup), so the loads are contiguous and
// the taps and SiLU vectorise; a channel's arithmetic never depends on its group.
void DeltaNetScratch::Conv(const ModelConfig& c, const LayerWeights& w, int layer,
                           std::span<const DeltaNetSlice> slices, kernels::ThreadPool& pool) {
  const int64_t C = c.ssm_conv_channels(), K = c.ssm_d_conv;
  pool.ParallelFor(C, [&](int64_t b, int64_t e, int) {
    float wt[kMaxConvTaps * kConvLanes];  // the group's weights, [tap][lane]
    for (int64_t c0 = b; c0 < e; c0 += kConvLanes) {
      const int64_t nl = std::min(kConvLanes, e - c0);
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t l = 0; l < nl; ++l) wt[k * kConvLanes + l] = w.ssm_conv1d[(c0 + l) * K + k];
      }
      for (const DeltaNetSlice& s : slices) {
        ConvGroup(wt, K, nl, s.kv->RecurrentState(layer) + c0 * (K - 1), qkv_.data() + s.row0 * C + c0, s.n, C,
                  conv_.data() + s.row0 * C + c0);
      }
    }
  });
}

// Per (slice, v head), token by token: the delta rule on that head's S x S state (after the conv state
// in the layer's recurrent floats), all of the slice's rows in one kernels::DeltaRuleHeadTokens call (its
// fixed per-row sequence, kernels/delta_rule.h, is the same whatever the tier or the tokens per call).
void DeltaNetScratch::Recurrence(const ModelConfig& c, int layer, std::span<const DeltaNetSlice> slices,
                                 int64_t rows, kernels::ThreadPool& pool) {
  const int64_t H = c.ssm_dt_rank, S = c.ssm_d_state, C = c.ssm_conv_channels(), key_dim = c.ssm_key_dim();
  const int64_t groups = c.ssm_n_group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const float eps = c.rms_eps;
  // q and k heads are normalised once per row, before any head reads them.
  pool.ParallelFor(rows * groups, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = i / groups, g = i % groups;
      L2Normalize(conv_.data() + row * C + g * S, S, eps);
      L2Normalize(conv_.data() + row * C + key_dim + g * S, S, eps);
    }
  });
  const int64_t tasks = static_cast<int64_t>(slices.size()) * H;
  pool.ParallelFor(tasks, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const DeltaNetSlice& s = slices[static_cast<size_t>(i / H)];
      const int64_t h = i % H, kh = h % groups;
      float* M = s.kv->RecurrentState(layer) + c.ssm_conv_state_floats() + h * S * S;
      const float* in = conv_.data() + s.row0 * C;
      const size_t gate = static_cast<size_t>(s.row0 * H + h);
      const kernels::DeltaRuleSteps steps{in + kh * S, in + key_dim + kh * S, in + 2 * key_dim + h * S, C,
                                          g_.data() + gate, beta_.data() + gate, H,
                                          o_.data() + s.row0 * c.ssm_d_inner + h * S, c.ssm_d_inner, s.n};
      kernels::DeltaRuleHeadTokens(M, S, steps, scale);
    }
  });
}

}  // namespace ember
