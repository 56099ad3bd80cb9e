// The models in one folder's listing (library-internal), for every store whose models are plain files:
// --models-dir folders, ember's data dir, llama.cpp's cache, LM Studio's folders, hub snapshots.
//
// Each *.gguf file is one model; the parts of a split model ("<stem>-00001-of-00003.gguf") are one
// model, listed once under their stem; a folder holding config.json and *.safetensors is one model. A
// *.gguf entry that is a broken link or not a regular file is listed too, with why_not saying so.
#pragma once

#include <string>
#include <vector>

#include "library/folder_walk.h"

namespace ember::library {

struct FolderNaming {
  std::string gguf_prefix;  // put before each GGUF stem ("org/repo:" in the hub cache, else "")
  std::string folder_name;  // the name of a safetensors model in this folder
};

void AddFolderModels(const std::string& dir, const std::vector<DirEntry>& entries, ModelSource source,
                     const FolderNaming& naming, ScanState* state);

// Walks `root` (ScanLimits::max_depth levels) and adds every folder's models, each safetensors folder
// named after itself.
void ScanModelFolder(const std::string& root, ModelSource source, ScanState* state);

}  // namespace ember::library
