// An Ollama manifest (library-internal; fuzzed: model_store_fuzz): the JSON file at
// manifests/<registry>/<namespace>/<model>/<tag> that names a model's layers by digest. The layer with
// mediaType application/vnd.ollama.image.model is the GGUF weights, stored at blobs/sha256-<hex>.
//
// Outside input: bounded in size (kMaxManifestBytes) and depth (ParseJsonLimited), every field checked
// for type; a digest must be "sha256:" and 64 lowercase hex digits, so the blob path built from it can
// never leave the store (no "/", no "..").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace ember::library {

inline constexpr size_t kMaxManifestBytes = size_t{1} << 20;
inline constexpr size_t kMaxManifestLayers = 1024;

struct OllamaManifest {
  std::string model_blob;   // "sha256-<64 hex>": the weights' file name under blobs/
  uint64_t model_size = 0;  // the size the manifest gives for it
  bool has_projector = false;  // an application/vnd.ollama.image.projector layer (a vision model)
  bool has_adapter = false;    // a LoRA adapter layer, which ember would not apply
};

// Errors: not JSON, nested too deep, larger than kMaxManifestBytes, a layer of the wrong shape, a
// digest that is not sha256 hex, no model layer or more than one.
StatusOr<OllamaManifest> ParseOllamaManifest(std::string_view text);

}  // namespace ember::library
