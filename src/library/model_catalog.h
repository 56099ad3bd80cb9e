// The model library: every model file ember can find on this machine, from its own data dir, the
// folders the user names (--models-dir), and the stores other tools keep (llama.cpp's cache, LM Studio,
// Ollama's blob store, the Hugging Face hub cache). Read-only: a scan opens files to read their headers
// and never writes, moves or deletes anything. Where each store lives and how it is laid out:
// docs/library.md.
//
// `ember models` prints a scan; `ember serve --models-dir DIR` (or no MODEL) serves the runnable ones by
// name (server/model_router.h).
//
// Cost: a scan maps each candidate file and parses its header (the GGUF metadata and tensor table, a
// safetensors JSON header); tensor data is never read. Thread-safety: ScanModels / ScanLibrary share no
// state between calls and may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/env.h"
#include "util/status.h"

namespace ember::library {

// Where a model was found; also the order names are claimed in when two sources offer the same name.
enum class ModelSource { kModelsDir, kEmberData, kLlamaCpp, kLmStudio, kOllama, kHuggingFace };
const char* ModelSourceName(ModelSource s);  // "models-dir", "ember", "llama.cpp", "lm-studio", "ollama", "hf"

struct ModelRecord {
  // What a request's `model` names: unique within one scan. A file's stem ("qwen3-0.6b-q8_0"; a split
  // GGUF's stem without "-00001-of-00003"; a safetensors folder's name), Ollama's "name:tag" (with
  // "namespace/" when not "library", and "registry/" when not registry.ollama.ai), the hub's
  // "org/repo:file-stem" (a safetensors repo: "org/repo"). Names are claimed in source order (the enum's),
  // then in the scan's path order; a later claimant of a taken name gets its source as a suffix
  // ("x@lm-studio"), then a number ("x@lm-studio-2").
  std::string name;
  // The GGUF file (for Ollama: the blob its manifest points at; a split GGUF: its first part); a
  // safetensors model: its folder.
  std::string path;
  ModelSource source = ModelSource::kModelsDir;
  std::string format;        // "gguf" or "safetensors"
  std::string arch;          // general.architecture, config.json's model_type ("" when unreadable)
  uint64_t parameters = 0;
  std::string quant;         // the file type ("Q4_K_M", from general.file_type), else the dominant matrix type
  uint64_t size_bytes = 0;   // on disk (every part of a split GGUF; every *.safetensors of a folder)
  int64_t context_length = 0;
  bool runnable = false;
  std::string why_not;       // when !runnable: one line ("architecture 'mamba' is not supported", ...)
};

// Bounds on one scan, so a huge or looping tree cannot hold it: when one cuts a walk, ScanResult's
// warnings say where.
struct ScanLimits {
  int max_depth = 6;              // folder levels walked below a root (its own files are level 0)
  uint64_t max_entries = 100000;  // directory entries looked at, per root
  size_t max_models = 5000;       // models listed, per scan
};

struct ScanOptions {
  std::vector<std::string> models_dirs;  // --models-dir folders, searched first
  std::string data_dir;                  // ember's own ($XDG_DATA_HOME/ember); "" = skip
  // Look in the other tools' stores (under `home`, and their env overrides such as LLAMA_CACHE,
  // OLLAMA_MODELS, HF_HUB_CACHE/HF_HOME). Off: only models_dirs and data_dir.
  bool include_stores = true;
  std::string home;                      // $HOME; "" = skip the stores kept under it
  Env* env = Env::Default();
  // The variables the stores' locations come from (LLAMA_CACHE, XDG_CACHE_HOME, OLLAMA_MODELS,
  // HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME; see StoreRoots). nullopt: this process's environment.
  std::optional<std::map<std::string, std::string>> env_vars;
  // Stores kept outside any home: the Linux Ollama service's. Searched when include_stores.
  std::vector<std::string> ollama_system_dirs = {"/usr/share/ollama/.ollama/models"};
  ScanLimits limits;
};

// One place a scan looked, in search order.
struct ScanLocation {
  ModelSource source = ModelSource::kModelsDir;
  std::string path;
  std::string origin;    // why there: "--models-dir", "data dir", "LLAMA_CACHE", "default", ...
  bool present = false;  // a directory (or a link to one) was there
  int models = 0;        // models listed from it
};

struct ScanResult {
  std::vector<ModelRecord> models;       // as ScanModels returns them
  std::vector<ScanLocation> locations;
  // Folders that could not be read, bounds that cut a walk, store files that were refused (a manifest
  // that is not JSON). At most a few dozen; the last one says how many more there were.
  std::vector<std::string> warnings;
};

// Finds every model; unreadable or unsupported files are listed with runnable=false and why_not, never
// skipped silently. Sorted by name.
std::vector<ModelRecord> ScanModels(const ScanOptions& options);
// The same scan, with where it looked and what it could not read.
ScanResult ScanLibrary(const ScanOptions& options);

// ember's data dir: $XDG_DATA_HOME/ember when that is absolute, else <home>/.local/share/ember; "" when
// home is empty too.
std::string DefaultDataDir(const std::string& xdg_data_home, const std::string& home);
// The options for this process: home from $HOME, data_dir from DefaultDataDir, the stores' variables
// left to the scan (env_vars unset), everything else default.
ScanOptions ProcessScanOptions();

// Whether ember can run the GGUF file at `path`: Ok, or the reason it cannot (what `why_not` says).
// Reads the header only (tokenizer and model checks bind tensors without touching their data).
Status CheckRunnable(const std::string& path, Env* env = Env::Default());

// One GGUF file's row as a scan of its folder would give it (columns, runnable, why_not), without
// scanning the folder: what `ember serve MODEL` shows for MODEL. Name and source are left empty. A
// split part is described alone (its siblings are not looked for), so it is not runnable.
ModelRecord DescribeModelFile(const std::string& path, Env* env = Env::Default());

}  // namespace ember::library
