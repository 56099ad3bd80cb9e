// Where the other tools keep their models on Linux (library-internal): each store's folders in search
// order, from the environment variables that move them and the user's home. docs/library.md has the
// table. A folder is listed whether or not it exists (the scan reports which were there).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "library/model_catalog.h"

namespace ember::library {

using EnvVars = std::map<std::string, std::string>;

// The variables StoreRoots reads.
inline constexpr const char* kStoreVarNames[] = {"LLAMA_CACHE",  "XDG_CACHE_HOME",        "OLLAMA_MODELS",
                                                 "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME"};

struct StoreRoot {
  ModelSource source = ModelSource::kLlamaCpp;
  std::string path;
  std::string origin;  // the variable it came from, "default", or the file that said so
};

// llama.cpp: $LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp.
// LM Studio: <home>/models with home ~/.lmstudio or the path in ~/.lmstudio-home-pointer; the folder
//   <home>/settings.json's downloadsFolder names; the older ~/.cache/lm-studio/models.
// Ollama: $OLLAMA_MODELS, else ~/.ollama/models; then each of `ollama_system_dirs`.
// Hugging Face: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
//   $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
// An empty `home` drops every folder under it. XDG_CACHE_HOME counts only when absolute (the XDG rule).
// LM Studio's two files are read through `env` (bounded); one that is there but unreadable adds a
// warning.
std::vector<StoreRoot> StoreRoots(const EnvVars& vars, const std::string& home,
                                  const std::vector<std::string>& ollama_system_dirs, Env* env,
                                  std::vector<std::string>* warnings);

// kStoreVarNames from this process's environment (those set and non-empty).
EnvVars ProcessStoreVars();

}  // namespace ember::library
