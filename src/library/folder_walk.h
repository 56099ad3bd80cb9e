// A bounded, read-only walk of the folders below one root (library-internal), for the store scanners.
//
// Deterministic: folders are visited depth-first, each folder's entries sorted bytewise. Bounded: no
// deeper than the walk's max_depth, and no more than ScanLimits::max_entries directory entries over
// every Walk of one FolderWalker; each cut is a warning in the ScanState naming the folder. Symbolic
// links: a link to a file is listed as the file it points at (the hub cache is made of them); a link to a
// folder is listed but never entered (as `find` does), so a link loop cannot trap the walk. An
// unreadable folder is a warning, and the walk goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "library/scan_state.h"

namespace ember::library {

struct DirEntry {
  enum class Kind {
    kFile,     // a regular file, or a link to one
    kDir,      // a folder (entered, within the depth bound)
    kDirLink,  // a link to a folder (not entered)
    kBroken,   // a link to nothing, or an entry that cannot be looked at
    kOther,    // a FIFO, socket or device: never opened
  };
  std::string name;
  Kind kind = Kind::kOther;
};

// What a visit sees: one folder, how far below the root it is (the root is 0), its entries.
using FolderVisit = std::function<void(const std::string& dir, int depth, const std::vector<DirEntry>& entries)>;

class FolderWalker {
 public:
  explicit FolderWalker(ScanState* state) : state_(state), entries_left_(state->limits().max_entries) {}

  // Visits `root` and every folder below it down to `max_depth` levels. Stops early once the scan is
  // full (ScanState::full) or this walker's entry budget is spent.
  void Walk(const std::string& root, int max_depth, const FolderVisit& visit);
  // Lists one folder (sorted, classified), charging the entry budget; false when it cannot be read
  // (warned) or the budget ran out (warned once).
  bool List(const std::string& dir, std::vector<DirEntry>* entries);

  bool exhausted() const { return exhausted_; }

 private:
  void WalkFrom(const std::string& dir, int depth, int max_depth, const FolderVisit& visit);

  ScanState* const state_;
  uint64_t entries_left_;
  bool exhausted_ = false;
};

// "a/b/c.gguf" -> "c.gguf"; "a/b/" -> "b".
std::string BaseName(const std::string& path);

// The size of a file a scan lists, through symbolic links (Env::FileSize refuses links, and the hub
// cache's files are links into its blob folder): mapping a file reads none of it.
StatusOr<uint64_t> FileSizeFollowingLinks(const std::string& path, Env* env);

}  // namespace ember::library
