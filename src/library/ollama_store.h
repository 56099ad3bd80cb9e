// Ollama's model store (library-internal): <root>/manifests/<registry>/<namespace>/<model>/<tag> name
// the models; each manifest's model layer is a GGUF blob at <root>/blobs/sha256-<hex>. A model is
// listed as "model:tag", with "namespace/" before it when the namespace is not "library", and
// "registry/" before that when the registry is not registry.ollama.ai (as `ollama list` names them).
// A manifest that cannot be read, a missing or short blob, and an adapter layer are listed with why_not.
#pragma once

#include <string>

#include "library/scan_state.h"

namespace ember::library {

// `source`: kOllama, or the source of a folder the user named that turned out to be an Ollama store.
void ScanOllamaStore(const std::string& root, ModelSource source, ScanState* state);

// "registry.ollama.ai", "library", "qwen3", "0.6b" -> "qwen3:0.6b".
std::string OllamaModelName(const std::string& registry, const std::string& name_space, const std::string& model,
                            const std::string& tag);

}  // namespace ember::library
