// The model library: every model file ember can find on this machine, from its own data dir, the
// folders the user names (--models-dir), and the stores other tools keep (llama.cpp's cache, LM Studio,
// Ollama's blob store, the Hugging Face hub cache). Read-only: a scan opens files to read their headers
// and never writes, moves or deletes anything.
//
// `ember models` prints a scan; `ember serve --models-dir DIR` (or no MODEL) serves the runnable ones by
// name (server/model_router.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace ember::library {

// Where a model was found; also the order names are claimed in when two sources offer the same name.
enum class ModelSource { kModelsDir, kEmberData, kLlamaCpp, kLmStudio, kOllama, kHuggingFace };
const char* ModelSourceName(ModelSource s);  // "models-dir", "ember", "llama.cpp", "lm-studio", "ollama", "hf"

struct ModelRecord {
  // What a request's `model` names: unique within one scan. A file's stem ("qwen3-0.6b-q8_0"), Ollama's
  // "name:tag", the hub's "org/repo:file-stem"; a clash gets the source as a suffix ("x@lm-studio").
  std::string name;
  std::string path;          // the GGUF file (for Ollama: the blob its manifest points at)
  ModelSource source = ModelSource::kModelsDir;
  std::string format;        // "gguf"
  std::string arch;          // general.architecture ("" when unreadable)
  uint64_t parameters = 0;
  std::string quant;         // dominant matrix type, e.g. "Q8_0", "Q4_K"
  uint64_t size_bytes = 0;   // on disk
  int64_t context_length = 0;
  bool runnable = false;
  std::string why_not;       // when !runnable: one line ("architecture 'mamba' is not supported", ...)
};

struct ScanOptions {
  std::vector<std::string> models_dirs;  // --models-dir folders, searched first
  std::string data_dir;                  // ember's own ($XDG_DATA_HOME/ember); "" = skip
  // Look in the other tools' stores (under `home`, and their env overrides such as LLAMA_CACHE,
  // OLLAMA_MODELS, HF_HUB_CACHE/HF_HOME). Off: only models_dirs and data_dir.
  bool include_stores = true;
  std::string home;                      // $HOME; "" = skip the stores kept under it
  Env* env = Env::Default();
};

// Finds every model; unreadable or unsupported files are listed with runnable=false and why_not, never
// skipped silently. Sorted by name.
std::vector<ModelRecord> ScanModels(const ScanOptions& options);

// Whether ember can run the GGUF file at `path`: Ok, or the reason it cannot (what `why_not` says).
Status CheckRunnable(const std::string& path, Env* env = Env::Default());

}  // namespace ember::library
