#include "library/safetensors_folder.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "library/file_type_name.h"
#include "library/safetensors_meta.h"

namespace ember::library {
namespace {

// A name with something before the extension (a file called just ".safetensors" is not one).
bool IsWeightsFile(const DirEntry& e) {
  constexpr std::string_view kExt = ".safetensors";
  return e.kind == DirEntry::Kind::kFile && e.name.size() > kExt.size() && e.name.ends_with(kExt);
}

// config.json's fields; the file is mapped (it may be a link into the hub's blobs) and bounded.
StatusOr<HfModelConfig> ReadConfig(const std::string& path, Env* env) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> map, env->MapFile(path));
  return ParseHfConfig(std::string_view(reinterpret_cast<const char*>(map->data()), map->size()));
}

// One weights file's header totals, added to `total`; its size to `bytes`.
Status AddWeightsFile(const std::string& path, Env* env, SafetensorsSummary* total, uint64_t* bytes) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> map, env->MapFile(path));
  *bytes += map->size();
  EMBER_ASSIGN_OR_RETURN(uint64_t n, SafetensorsHeaderLength(map->data(), map->size()));
  EMBER_ASSIGN_OR_RETURN(SafetensorsSummary s,
                         ParseSafetensorsHeader(std::string_view(reinterpret_cast<const char*>(map->data()) + 8, n)));
  // Each file's totals are below 2^64 and there are at most max_entries files: saturate rather than wrap.
  total->tensors += s.tensors;
  if (__builtin_add_overflow(total->parameters, s.parameters, &total->parameters)) total->parameters = UINT64_MAX;
  for (const auto& [dtype, b] : s.bytes_by_dtype) {
    uint64_t& sum = total->bytes_by_dtype[dtype];
    if (__builtin_add_overflow(sum, b, &sum)) sum = UINT64_MAX;
  }
  return Status::Ok();
}

}  // namespace

bool IsSafetensorsFolder(const std::vector<DirEntry>& entries) {
  const bool config = std::any_of(entries.begin(), entries.end(), [](const DirEntry& e) {
    return e.kind == DirEntry::Kind::kFile && e.name == "config.json";
  });
  return config && std::any_of(entries.begin(), entries.end(), IsWeightsFile);
}

ModelRecord DescribeSafetensorsFolder(const std::string& dir, const std::vector<DirEntry>& entries, Env* env) {
  ModelRecord r;
  r.path = dir;
  r.format = "safetensors";
  r.why_not = kSafetensorsNotSupported;
  std::string problem;
  StatusOr<HfModelConfig> config = ReadConfig(JoinPath(dir, "config.json"), env);
  if (config.ok()) {
    r.arch = config->model_type;
    r.context_length = config->context_length;
    r.quant = QuantLabel(config->quant_method);
  } else {
    problem = config.status().message();  // names config.json (or its path)
  }
  SafetensorsSummary total;
  for (const DirEntry& e : entries) {
    if (!IsWeightsFile(e)) continue;
    const Status st = AddWeightsFile(JoinPath(dir, e.name), env, &total, &r.size_bytes);
    if (!st.ok() && problem.empty()) problem = e.name + ": " + st.message();
  }
  r.parameters = total.parameters;
  if (r.quant.empty()) r.quant = DominantDtype(total);
  if (!problem.empty()) r.why_not += " (" + problem + ")";
  return r;
}

}  // namespace ember::library
