#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace ember {

void RouteRow(const float* logits, int64_t n_expert, int64_t k, bool norm, int32_t* ids, float* weights) {
  // Softmax over all experts as ggml's soft_max (kernels::Softmax), then a partial selection sort: k is
  // small (8 of 128) and the order it leaves is the summation order.
  thread_local std::vector<float> p;
  p.assign(logits, logits + n_expert);
  kernels::Softmax(p.data(), static_cast<int>(n_expert));
  thread_local std::vector<bool> taken;
  taken.assign(static_cast<size_t>(n_expert), false);
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n_expert; ++e) {
      if (!taken[static_cast<size_t>(e)] && (best < 0 || p[static_cast<size_t>(e)] > p[static_cast<size_t>(best)])) best = e;
    }
    taken[static_cast<size_t>(best)] = true;
    ids[j] = static_cast<int32_t>(best);
    weights[j] = p[static_cast<size_t>(best)];
  }
  if (!norm) return;
  double sum = 0;  // ggml's sum_rows: in double, in order
  for (int64_t j = 0; j < k; ++j) sum += weights[j];
  const float div = std::max(static_cast<float>(sum), 6.103515625e-5f);  // the smallest normal fp16
  for (int64_t j = 0; j < k; ++j) weights[j] /= div;
}

void MoeScratch::Resize(const ModelConfig& c, int64_t max_rows) {
  const size_t T = static_cast<size_t>(max_rows), k = static_cast<size_t>(c.n_expert_used);
  logits_.resize(T * static_cast<size_t>(c.n_expert));
  views_.reserve(static_cast<size_t>(c.n_expert));  // no allocation per step
  groups_.reserve(2 * static_cast<size_t>(c.n_expert));
  ids_.resize(T * k);
  weights_.resize(T * k);
  slot_.resize(T * k);
  first_.resize(static_cast<size_t>(c.n_expert) + 1);
  xg_.resize(T * k * static_cast<size_t>(c.n_embd));
  gate_.resize(T * k * static_cast<size_t>(c.n_ff_exp));
  up_.resize(T * k * static_cast<size_t>(c.n_ff_exp));
  down_.resize(T * k * static_cast<size_t>(c.n_embd));
  if (c.n_ff_shexp > 0) {
    sh_gate_.resize(T * static_cast<size_t>(c.n_ff_shexp));
    sh_up_.resize(T * static_cast<size_t>(c.n_ff_shexp));
    sh_out_.resize(T * static_cast<size_t>(c.n_embd));
    sh_logit_.resize(T);
  }
}

void MoeScratch::Route(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows,
                       kernels::ThreadPool& pool, OpTimes* times) {
  {
    OpTimer timer(times, &times->matmul_s);
    kernels::MatMul(w.moe_router, xn, rows, logits_.data(), pool);  // [rows][n_expert]
  }
  OpTimer timer(times, &times->other_s);
  const int64_t k = c.n_expert_used;
  pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      RouteRow(logits_.data() + t * c.n_expert, c.n_expert, k, /*norm=*/true, ids_.data() + t * k,
               weights_.data() + t * k);
    }
  });
}

// Counting sort of the (row, choice) pairs by expert: expert e's rows land at [first_[e], first_[e+1])
// in row order, and xg_ gets a copy of each pair's input row.
void MoeScratch::Group(const ModelConfig& c, const float* xn, int64_t rows, kernels::ThreadPool& pool,
                       OpTimes* times) {
  OpTimer timer(times, &times->other_s);
  const int64_t k = c.n_expert_used, d = c.n_embd;
  std::fill(first_.begin(), first_.end(), 0);
  for (int64_t i = 0; i < rows * k; ++i) ++first_[static_cast<size_t>(ids_[static_cast<size_t>(i)]) + 1];
  for (int64_t e = 0; e < c.n_expert; ++e) first_[static_cast<size_t>(e) + 1] += first_[static_cast<size_t>(e)];
  std::vector<int64_t>& next = scratch_next_;
  next.assign(first_.begin(), first_.end() - 1);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = next[static_cast<size_t>(ids_[static_cast<size_t>(t * k + j)])]++;
      slot_[static_cast<size_t>(t * k + j)] = s;
    }
  }
  // The copies (a prefill chunk's k copies of every row: megabytes) split over the pool by source row.
  pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        std::memcpy(xg_.data() + slot_[static_cast<size_t>(t * k + j)] * d, xn + t * d,
                    static_cast<size_t>(d) * sizeof(float));
      }
    }
  });
}

// Each chosen expert once, over all its rows: every expert's gate and up in one grouped matmul (one
// parallel region for the layer, not one per expert), silu(gate) * up, then every expert's down.
void MoeScratch::RunExperts(const ModelConfig& c, const LayerWeights& w, int64_t rows, kernels::ThreadPool& pool,
                            OpTimes* times) {
  const int64_t ff = c.n_ff_exp, d = c.n_embd, n_rows = rows * c.n_expert_used;
  views_.clear();
  for (int64_t e = 0; e < c.n_expert; ++e) {
    if (first_[static_cast<size_t>(e) + 1] == first_[static_cast<size_t>(e)]) continue;  // never read
    views_.push_back({w.exp_gate.Expert(e), w.exp_up.Expert(e), w.exp_down.Expert(e), e});
  }
  experts_read_ = static_cast<int64_t>(views_.size());
  if (times != nullptr && times->enabled) {
    times->expert_bytes += views_.size() * (w.exp_gate.stride + w.exp_up.stride + w.exp_down.stride);
  }
  groups_.clear();
  for (const ExpertViews& v : views_) {
    const int64_t r0 = first_[static_cast<size_t>(v.e)], n = first_[static_cast<size_t>(v.e) + 1] - r0;
    groups_.push_back({&v.gate, r0, n, gate_.data() + r0 * ff});
    groups_.push_back({&v.up, r0, n, up_.data() + r0 * ff});
  }
  {
    OpTimer timer(times, &times->matmul_s);
    kernels::MatMulGrouped(groups_.data(), static_cast<int>(groups_.size()), xg_.data(), n_rows, pool);
  }
  {
    OpTimer timer(times, &times->other_s);
    pool.ParallelFor(n_rows, [&](int64_t b, int64_t end, int) {
      for (int64_t t = b; t < end; ++t) {
        kernels::SiluMul(gate_.data() + t * ff, up_.data() + t * ff, gate_.data() + t * ff, static_cast<int>(ff));
      }
    });
  }
  groups_.clear();
  for (const ExpertViews& v : views_) {
    const int64_t r0 = first_[static_cast<size_t>(v.e)], n = first_[static_cast<size_t>(v.e) + 1] - r0;
    groups_.push_back({&v.down, r0, n, down_.data() + r0 * d});
  }
  OpTimer timer(times, &times->matmul_s);
  kernels::MatMulGrouped(groups_.data(), static_cast<int>(groups_.size()), gate_.data(), n_rows, pool);
}

void MoeScratch::SharedExpert(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows, float* out,
                              kernels::ThreadPool& pool, OpTimes* times) {
  const int64_t ff = c.n_ff_shexp, d = c.n_embd;
  {
    OpTimer timer(times, &times->matmul_s);
    const kernels::MatMulOut outs[] = {{&w.shexp_gate, sh_gate_.data()}, {&w.shexp_up, sh_up_.data()}};
    kernels::MatMulShared(outs, 2, xn, rows, pool);
    kernels::MatMul(w.shexp_inp, xn, rows, sh_logit_.data(), pool);  // [rows][1]
  }
  {
    OpTimer timer(times, &times->other_s);
    pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {
      for (int64_t t = b; t < e; ++t) {
        kernels::SiluMul(sh_gate_.data() + t * ff, sh_up_.data() + t * ff, sh_gate_.data() + t * ff, static_cast<int>(ff));
      }
    });
  }
  {
    OpTimer timer(times, &times->matmul_s);
    kernels::MatMul(w.shexp_down, sh_gate_.data(), rows, sh_out_.data(), pool);
  }
  OpTimer timer(times, &times->other_s);
  pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {  // out += shared * sigmoid(gate), as ggml: mul, then add
    for (int64_t t = b; t < e; ++t) {
      const float g = 1.0f / (1.0f + std::exp(-sh_logit_[static_cast<size_t>(t)]));
      for (int64_t i = 0; i < d; ++i) {
        const float gated = sh_out_[static_cast<size_t>(t * d + i)] * g;
        out[t * d + i] += gated;
      }
    }
  });
}

void MoeScratch::Forward(const ModelConfig& c, const LayerWeights& w, const float* xn, int64_t rows, float* out,
                         kernels::ThreadPool& pool, OpTimes* times) {
  Route(c, w, xn, rows, pool, times);
  Group(c, xn, rows, pool, times);
  RunExperts(c, w, rows, pool, times);
  Combine(c, rows, out, pool, times);
  if (c.n_ff_shexp > 0) SharedExpert(c, w, xn, rows, out, pool, times);
}

// out = w_0 * down_0 + w_1 * down_1 + ...: ggml's weighted views added in choice order.
void MoeScratch::Combine(const ModelConfig& c, int64_t rows, float* out, kernels::ThreadPool& pool, OpTimes* times) {
  OpTimer timer(times, &times->other_s);
  const int64_t k = c.n_expert_used, d = c.n_embd;
  pool.ParallelFor(rows, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      float* o = out + t * d;
      for (int64_t j = 0; j < k; ++j) {
        const float wj = weights_[static_cast<size_t>(t * k + j)];
        const float* x = down_.data() + slot_[static_cast<size_t>(t * k + j)] * d;
        if (j == 0) {
          for (int64_t i = 0; i < d; ++i) o[i] = x[i] * wj;
        } else {
          for (int64_t i = 0; i < d; ++i) o[i] += x[i] * wj;
        }
      }
    }
  });
}

}  // namespace ember
