#include "format/model_summary.h"

#include <map>

namespace ember {

ModelSummary Summarize(const GgufFile& f) {
  ModelSummary s;
  s.arch = f.StrOr("general.architecture", "").value();
  auto hp = [&](const char* key) -> int64_t {
    auto v = f.IntOr(s.arch + "." + key, 0);
    return v.ok() ? *v : 0;
  };
  s.n_layer = hp("block_count");
  s.n_embd = hp("embedding_length");
  s.n_head = hp("attention.head_count");
  s.n_head_kv = hp("attention.head_count_kv");
  if (s.n_head_kv == 0) s.n_head_kv = s.n_head;
  s.n_ctx = hp("context_length");
  s.head_dim = hp("attention.key_length");
  if (s.head_dim == 0 && s.n_head > 0) s.head_dim = s.n_embd / s.n_head;
  const int64_t v_dim = hp("attention.value_length") ? hp("attention.value_length") : s.head_dim;
  s.kv_bytes_per_token_f16 = static_cast<uint64_t>(s.n_layer * s.n_head_kv * (s.head_dim + v_dim) * 2);

  std::map<std::string, uint64_t> bytes_by_type;
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  const bool tied = f.FindTensor("output.weight") == nullptr;
  for (const auto& t : f.tensors()) {
    s.n_params += t.n_elements;
    s.weight_bytes += t.n_bytes;
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
