#include "format/model_summary.h"

#include <algorithm>
#include <map>

#include "format/hparam_limits.h"

namespace ember {
namespace {

// `{arch}.key`: 0 when absent, else an integer in 0..max.
StatusOr<int64_t> Hparam(const GgufFile& f, const std::string& arch, const char* key, int64_t max) {
  const std::string full = arch + "." + key;
  EMBER_ASSIGN_OR_RETURN(int64_t v, f.IntOr(full, 0));
  EMBER_RETURN_IF_ERROR(hparams::CheckRange(full, v, 0, max).WithContext(f.name()));
  return v;
}

// The tokenizer keys every loader reads, when present, must have the types the loaders expect, so
// `ember inspect` reports a file `ember serve` would refuse.
Status CheckTokenizerKeys(const GgufFile& f) {
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.chat_template"}) {
    if (f.Has(key)) EMBER_RETURN_IF_ERROR(f.Str(key).status());
  }
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
    if (f.Has(key)) EMBER_RETURN_IF_ERROR(f.StrArray(key).status());
  }
  if (f.Has("tokenizer.ggml.scores")) EMBER_RETURN_IF_ERROR(f.F32Array("tokenizer.ggml.scores").status());
  if (f.Has("tokenizer.ggml.token_type")) EMBER_RETURN_IF_ERROR(f.IntArray("tokenizer.ggml.token_type").status());
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.unknown_token_id"}) {
    if (f.Has(key)) EMBER_RETURN_IF_ERROR(f.Int(key).status());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelSummary> Summarize(const GgufFile& f) {
  ModelSummary s;
  EMBER_RETURN_IF_ERROR(CheckTokenizerKeys(f));
  EMBER_ASSIGN_OR_RETURN(s.arch, f.StrOr("general.architecture", ""));
  if (!s.arch.empty()) {
    EMBER_ASSIGN_OR_RETURN(s.n_layer, Hparam(f, s.arch, "block_count", hparams::kMaxLayers));
    EMBER_ASSIGN_OR_RETURN(s.n_embd, Hparam(f, s.arch, "embedding_length", hparams::kMaxWidth));
    EMBER_ASSIGN_OR_RETURN(s.n_head, Hparam(f, s.arch, "attention.head_count", hparams::kMaxHeads));
    EMBER_ASSIGN_OR_RETURN(s.n_head_kv, Hparam(f, s.arch, "attention.head_count_kv", hparams::kMaxHeads));
    EMBER_ASSIGN_OR_RETURN(s.n_ctx, Hparam(f, s.arch, "context_length", hparams::kMaxContext));
    EMBER_ASSIGN_OR_RETURN(s.head_dim, Hparam(f, s.arch, "attention.key_length", hparams::kMaxHeadDim));
    EMBER_ASSIGN_OR_RETURN(int64_t v_dim, Hparam(f, s.arch, "attention.value_length", hparams::kMaxHeadDim));
    if (s.n_head_kv == 0) s.n_head_kv = s.n_head;
    if (s.head_dim == 0 && s.n_head > 0) s.head_dim = s.n_embd / s.n_head;
    if (v_dim == 0) v_dim = s.head_dim;
    EMBER_ASSIGN_OR_RETURN(s.n_expert, Hparam(f, s.arch, "expert_count", 4096));
    EMBER_ASSIGN_OR_RETURN(s.n_expert_used, Hparam(f, s.arch, "expert_used_count", 4096));
    s.n_expert_used = std::min(s.n_expert_used, s.n_expert);
    // Bounded above: at most 2^12 * 2^14 * 2^15 * 2 = 2^42.
    s.kv_bytes_per_token_f16 = static_cast<uint64_t>(s.n_layer * s.n_head_kv * (s.head_dim + v_dim) * 2);
  }

  // Tensor sizes were validated by the reader (each within the file, no overlap), so these sums are
  // bounded by a few times the file size.
  std::map<std::string, uint64_t> bytes_by_type;
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  const bool tied = f.FindTensor("output.weight") == nullptr;
  const auto is_experts = [&](const GgufTensorInfo& t) {
    return s.n_expert_used > 0 && t.n_dims == 3 && static_cast<int64_t>(t.ne[2]) == s.n_expert &&
           t.name.size() > 12 && t.name.compare(t.name.size() - 12, 12, "_exps.weight") == 0;
  };
  for (const auto& t : f.tensors()) {
    s.n_params += t.n_elements;
    s.weight_bytes += t.n_bytes;
    if (is_experts(t)) {  // a token reads its n_expert_used experts' slices of these
      const uint64_t used = static_cast<uint64_t>(s.n_expert_used), all = static_cast<uint64_t>(s.n_expert);
      s.active_params += t.n_elements / all * used;
      s.decode_bytes_per_token += t.n_bytes / all * used;
      bytes_by_type[GgmlTypeName(t.type)] += t.n_bytes;
      continue;
    }
    s.active_params += t.n_elements;
    if (t.n_dims >= 2) bytes_by_type[GgmlTypeName(t.type)] += t.n_bytes;
    if (&t == embd) {
      s.n_vocab = static_cast<int64_t>(t.ne[1]);
      // Decode reads one embedding row, plus the whole matrix again when it doubles as the output layer.
      s.decode_bytes_per_token += t.n_bytes / t.ne[1] + (tied ? t.n_bytes : 0);
    } else {
      s.decode_bytes_per_token += t.n_bytes;
    }
  }
  uint64_t best = 0;
  for (const auto& [type, bytes] : bytes_by_type)
    if (bytes > best) { best = bytes; s.file_type = type; }
  return s;
}

}  // namespace ember
