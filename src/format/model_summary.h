// Derived numbers about a GGUF model for `ember inspect` and benchmarks: parameter count, weight bytes
// read per decoded token, KV bytes per token.
#pragma once

#include <cstdint>
#include <string>

#include "format/gguf.h"
#include "util/status.h"

namespace ember {

struct ModelSummary {
  std::string arch;
  uint64_t n_params = 0;
  uint64_t active_params = 0;         // used per token: n_params less the experts a token is not routed to
  uint64_t weight_bytes = 0;          // all tensor data
  uint64_t decode_bytes_per_token = 0;  // weights streamed per decode step (one embedding row, every matrix;
                                        // of a MoE's *_exps tensors, expert_used_count of expert_count)
  int64_t n_expert = 0, n_expert_used = 0;  // 0: dense
  uint64_t kv_bytes_per_token_f16 = 0;  // 0 when the hyperparameters are missing
  int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0, n_vocab = 0;
  std::string file_type;              // dominant matrix type, e.g. "q8_0"
};

// Missing keys count as 0 (a vocabulary-only file has no hyperparameters); a key that is present with
// the wrong type (general.architecture as a number, context_length as a string, tokenizer.ggml.tokens
// not an array of strings) or an out-of-range value (a negative or absurd dimension) is an
// InvalidArgument naming the key.
StatusOr<ModelSummary> Summarize(const GgufFile& f);

}  // namespace ember
