#include "model/delta_net.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/fast_exp.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace ember {
namespace {

// One fixed summation order (16 partial sums, then pairwise) for every call: the recurrence's results
// depend only on its inputs, never on the tier or the row count.
float Dot(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  for (int w = 8; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0];
}

float Silu(float x) { return x / (1.0f + kernels::ExpF(-x)); }
float Sigmoid(float x) { return 1.0f / (1.0f + kernels::ExpF(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// x /= max(|x|, eps), the norm summed in double (ggml_l2_norm).
void L2Normalize(float* x, int64_t n, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
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
    g_[static_cast<size_t>(i)] = Softplus(g_[static_cast<size_t>(i)] + w.ssm_dt[h]) * w.ssm_a[h];
  }
  Conv(c, w, layer, slices, pool);
  Recurrence(c, layer, slices, pool);
  pool.ParallelFor(rows * H, [&](int64_t b, int64_t e, int) {  // gated RMS norm of each v head
    for (int64_t i = b; i < e; ++i) {
      float* o = o_.data() + i * S;
      const float* z = z_.data() + i * S;
      kernels::RmsNorm(o, w.ssm_norm, c.rms_eps, static_cast<int>(S), o);
      for (int64_t j = 0; j < S; ++j) o[j] *= Silu(z[j]);
    }
  });
  OpTimer mm(times, times ? &times->matmul_s : nullptr);
  kernels::MatMul(w.ssm_out, o_.data(), rows, out, pool);
}

// conv_[t][ch] = silu(Σ_k window[t + k][ch] * w[ch][k]) over the d_conv rows ending at t, the first
// d_conv - 1 of a slice's window coming from its state ([channel][d_conv - 1], oldest first), which then
// keeps the slice's last d_conv - 1 rows. Channels are independent: split over the pool.
void DeltaNetScratch::Conv(const ModelConfig& c, const LayerWeights& w, int layer,
                           std::span<const DeltaNetSlice> slices, kernels::ThreadPool& pool) {
  const int64_t C = c.ssm_conv_channels(), K = c.ssm_d_conv;
  pool.ParallelFor(C, [&](int64_t b, int64_t e, int) {
    float last[64];  // ssm.conv_kernel <= 64 (model_config.cc)
    for (const DeltaNetSlice& s : slices) {
      float* state = s.kv->RecurrentState(layer);
      for (int64_t ch = b; ch < e; ++ch) {
        float* st = state + ch * (K - 1);
        const float* wk = w.ssm_conv1d + ch * K;
        std::copy(st, st + K - 1, last);
        for (int64_t t = 0; t < s.n; ++t) {
          const int64_t row = s.row0 + t;
          last[K - 1] = qkv_[static_cast<size_t>(row * C + ch)];
          float sum = 0.0f;
          for (int64_t k = 0; k < K; ++k) sum += last[k] * wk[k];
          conv_[static_cast<size_t>(row * C + ch)] = Silu(sum);
          for (int64_t k = 0; k + 1 < K; ++k) last[k] = last[k + 1];
        }
        std::copy(last, last + K - 1, st);
      }
    }
  });
}

// Per (slice, v head), token by token: the delta rule on that head's S x S state (after the conv state
// in the layer's recurrent floats). Row j of M is one value dim, so each row is decayed, read, updated and
// read again in one pass.
void DeltaNetScratch::Recurrence(const ModelConfig& c, int layer, std::span<const DeltaNetSlice> slices,
                                 kernels::ThreadPool& pool) {
  const int64_t H = c.ssm_dt_rank, S = c.ssm_d_state, C = c.ssm_conv_channels(), key_dim = c.ssm_key_dim();
  const int64_t groups = c.ssm_n_group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  const float eps = c.rms_eps;
  // q and k heads are normalised once per row, before any head reads them.
  int64_t rows = 0;
  for (const DeltaNetSlice& s : slices) rows = std::max(rows, s.row0 + s.n);
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
      for (int64_t t = 0; t < s.n; ++t) {
        const int64_t row = s.row0 + t;
        const float* q = conv_.data() + row * C + kh * S;
        const float* k = conv_.data() + row * C + key_dim + kh * S;
        const float* v = conv_.data() + row * C + 2 * key_dim + h * S;
        const float decay = std::exp(g_[static_cast<size_t>(row * H + h)]);
        const float beta = beta_[static_cast<size_t>(row * H + h)];
        float* o = o_.data() + row * c.ssm_d_inner + h * S;
        for (int64_t j = 0; j < S; ++j) {
          float* m = M + j * S;
          for (int64_t x = 0; x < S; ++x) m[x] *= decay;
          const float d = (v[j] - Dot(m, k, S)) * beta;
          for (int64_t x = 0; x < S; ++x) m[x] += d * k[x];
          o[j] = Dot(m, q, S) * scale;
        }
      }
    }
  });
}

}  // namespace ember
