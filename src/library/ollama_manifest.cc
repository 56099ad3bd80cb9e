#include "library/ollama_manifest.h"

#include <nlohmann/json.hpp>

#include "util/json_limited.h"

namespace ember::library {
namespace {

using nlohmann::json;

constexpr std::string_view kModelType = "application/vnd.ollama.image.model";
constexpr std::string_view kProjectorType = "application/vnd.ollama.image.projector";
constexpr std::string_view kAdapterType = "application/vnd.ollama.image.adapter";

// "sha256:<64 lowercase hex>" -> "sha256-<hex>", the blob's file name.
StatusOr<std::string> BlobName(const json& digest, size_t layer) {
  const std::string where = "layer " + std::to_string(layer) + ": digest";
  if (!digest.is_string()) return InvalidArgument(where + " is not a string");
  const std::string& d = digest.get_ref<const std::string&>();
  constexpr std::string_view kPrefix = "sha256:";
  if (d.size() != kPrefix.size() + 64 || d.compare(0, kPrefix.size(), kPrefix) != 0) {
    return InvalidArgument(where + " is not sha256:<64 hex digits>");
  }
  for (size_t i = kPrefix.size(); i < d.size(); ++i) {
    const char c = d[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return InvalidArgument(where + " is not lowercase hex");
  }
  return "sha256-" + d.substr(kPrefix.size());
}

}  // namespace

StatusOr<OllamaManifest> ParseOllamaManifest(std::string_view text) {
  if (text.size() > kMaxManifestBytes) {
    return InvalidArgument("manifest is larger than " + std::to_string(kMaxManifestBytes) + " bytes");
  }
  EMBER_ASSIGN_OR_RETURN(json j, ParseJsonLimited(text));
  if (!j.is_object()) return InvalidArgument("manifest is not a JSON object");
  const auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) return InvalidArgument("manifest has no 'layers' array");
  if (layers->size() > kMaxManifestLayers) {
    return InvalidArgument("manifest has more than " + std::to_string(kMaxManifestLayers) + " layers");
  }
  OllamaManifest m;
  bool found = false;
  for (size_t i = 0; i < layers->size(); ++i) {
    const json& layer = (*layers)[i];
    if (!layer.is_object()) return InvalidArgument("layer " + std::to_string(i) + " is not an object");
    const auto type = layer.find("mediaType");
    if (type == layer.end() || !type->is_string()) {
      return InvalidArgument("layer " + std::to_string(i) + ": mediaType is not a string");
    }
    const std::string& t = type->get_ref<const std::string&>();
    m.has_projector = m.has_projector || t == kProjectorType;
    m.has_adapter = m.has_adapter || t == kAdapterType;
    if (t != kModelType) continue;
    if (found) return InvalidArgument("manifest has more than one model layer");
    found = true;
    const auto digest = layer.find("digest");
    if (digest == layer.end()) return InvalidArgument("layer " + std::to_string(i) + " has no digest");
    EMBER_ASSIGN_OR_RETURN(m.model_blob, BlobName(*digest, i));
    if (const auto size = layer.find("size"); size != layer.end()) {
      if (!size->is_number_unsigned()) return InvalidArgument("layer " + std::to_string(i) + ": size is not a count");
      m.model_size = size->get<uint64_t>();
    }
  }
  if (!found) return InvalidArgument("manifest has no layer of type " + std::string(kModelType));
  return m;
}

}  // namespace ember::library
