#include "library/gguf_describe.h"

#include <algorithm>
#include <cctype>

#include "format/model_summary.h"
#include "library/file_type_name.h"
#include "library/folder_walk.h"
#include "library/gguf_file_name.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_spec.h"

namespace ember::library {
namespace {

// One line for the table: the reader's messages start with the file's path, which the row shows already.
std::string Reason(const Status& st, const std::string& path) {
  std::string m = st.message();
  while (m.rfind(path + ": ", 0) == 0) m.erase(0, path.size() + 2);  // the model loader adds it once more
  std::replace(m.begin(), m.end(), '\n', ' ');
  return m;
}

// Vision projectors are GGUF files too (llama.cpp writes them with architecture "clip"); when the
// architecture cannot be read, the name ("mmproj-...", llama.cpp's cache: "<org>_<repo>_mmproj-...")
// still says so.
bool IsProjector(const std::string& arch, const std::string& path) {
  if (!arch.empty()) return arch == "clip";
  std::string name = BaseName(path);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name.find("mmproj") != std::string::npos;
}

// A split model's parameters are spread over its parts: each part's tensor table counts its own.
uint64_t CountParameters(const std::vector<std::string>& parts, uint64_t first_part, Env* env) {
  uint64_t total = first_part;
  for (size_t i = 1; i < parts.size(); ++i) {
    StatusOr<std::unique_ptr<GgufFile>> part = GgufFile::Open(parts[i], env);
    if (!part.ok()) continue;  // the row's why_not already says the split cannot run
    for (const GgufTensorInfo& t : (*part)->tensors()) total += t.n_elements;
  }
  return total;
}

std::string SplitReason(const std::vector<std::string>& parts, int split_count) {
  std::string why = kSplitNotSupported;
  if (static_cast<int>(parts.size()) < split_count) {
    why += " (" + std::to_string(parts.size()) + " of " + std::to_string(split_count) + " parts present)";
  }
  return why;
}

void FillColumns(const GgufFile& f, ModelRecord* r) {
  StatusOr<ModelSummary> s = Summarize(f);
  if (!s.ok()) return;  // the runnable check names the broken key
  r->arch = s->arch;
  r->parameters = s->n_params;
  r->context_length = s->n_ctx;
  r->quant = QuantLabel(s->file_type);
  if (StatusOr<int64_t> ft = f.IntOr("general.file_type", -1); ft.ok()) {
    if (std::string label = FileTypeName(*ft); !label.empty()) r->quant = label;
  }
}

}  // namespace

Status CheckRunnableGguf(std::unique_ptr<GgufFile> file) {
  // The model first: an architecture ember lacks is the reason a user most needs to see.
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::FromGguf(std::move(file)));
  EMBER_ASSIGN_OR_RETURN(TokenizerSpec spec, TokenizerSpecFromGguf(model->gguf(), VocabText::kCountOnly));
  return CheckTokenizerSpec(spec);
}

ModelRecord DescribeGguf(const std::vector<std::string>& parts, int split_count, Env* env) {
  EMBER_CHECK(!parts.empty());
  ModelRecord r;
  r.path = parts.front();
  r.format = "gguf";
  for (const std::string& part : parts) {
    if (StatusOr<uint64_t> size = FileSizeFollowingLinks(part, env); size.ok()) r.size_bytes += *size;
  }
  StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(r.path, env);
  if (!file.ok()) {
    r.why_not = IsProjector("", r.path) ? kProjectorNotRunnable : Reason(file.status(), r.path);
    return r;
  }
  FillColumns(**file, &r);
  if (IsProjector(r.arch, r.path)) {
    r.why_not = kProjectorNotRunnable;
    return r;
  }
  if (split_count > 1) {
    r.parameters = CountParameters(parts, r.parameters, env);
    r.why_not = SplitReason(parts, split_count);
    return r;
  }
  const Status st = CheckRunnableGguf(std::move(*file));
  r.runnable = st.ok();
  if (!st.ok()) r.why_not = Reason(st, r.path);
  return r;
}

}  // namespace ember::library
