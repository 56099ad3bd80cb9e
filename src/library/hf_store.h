// The Hugging Face hub cache (library-internal): <root>/models--<org>--<repo>/snapshots/<revision>/...
// holds each downloaded revision's files as links into the repo's blobs/ folder; refs/main names the
// revision `main` pointed at when last fetched. A GGUF file is listed as "org/repo:<stem>" (a split
// model under its stem without the part suffix), a safetensors model as "org/repo" (or
// "org/repo:<subfolder>"). The revision refs/main names is read first; an older revision's file whose
// path the newer one also has is not listed again. datasets--*, spaces--* and other entries are skipped.
#pragma once

#include <optional>
#include <string>

#include "library/scan_state.h"

namespace ember::library {

// `source`: kHuggingFace, or the source of a folder the user named that turned out to be a hub cache.
void ScanHfHubCache(const std::string& root, ModelSource source, ScanState* state);

// "models--Qwen--Qwen3-0.6B-GGUF" -> "Qwen/Qwen3-0.6B-GGUF"; "models--gpt2" -> "gpt2"; nullopt for any
// other folder (the hub refuses "--" inside an owner or repo name, so the first one splits them).
std::optional<std::string> HfRepoId(const std::string& folder_name);

}  // namespace ember::library
