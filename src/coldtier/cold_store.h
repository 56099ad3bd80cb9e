// The SSD cold tier's index of entry files (spec: docs/cache-spec.md §4; format: entry_format.h).
//
// Layout: <root>/<identity>/<namespace-hash>/<id>.entry, where id is a hash of (namespace, tokens), so a
// second Put of the same tokens renames over the first file (dedup without a window where neither exists).
//
// Ownership: a store holds an exclusive advisory lock on <root>/<identity>/lock for its lifetime, so one
// process at a time uses an identity directory; other identities (other models) under one root are
// independent. Every directory it reads or writes must pass coldtier/private_dir.h.
//
// Invariant: every indexed entry has a complete, header-verified file under its path, whose identity,
// namespace and geometry match this store; bytes() is the sum of their sizes. Files that break this are
// deleted (and counted) as soon as they are seen: at Open, or when a restore fails.
// The store only ever lists, reads, writes or deletes inside <root>/<identity>/: directories of other
// identities (other models, tokenizers, dtypes, format versions) are never touched.
//
// Failure model: every method returns a Status and leaves the index consistent with the disk. A failed
// Put (ENOSPC -> kNoSpace, I/O) leaves no new file and keeps the old entries; a failed Restore deletes
// the file and returns the error so the caller falls back to RAM or a fresh prefill.
//
// Thread-safety: none, except Stage(), which touches no index state. The cache's tiered layer
// (tiered/tiered_cache.h) serializes every other call under one mutex and runs Stage() — the slow part of a
// write — outside it on the one serial writer thread, so a lookup never waits for a file to be written.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coldtier/entry_file.h"
#include "util/env.h"
#include "kv/kv_state.h"
#include "util/status.h"

namespace ember {

struct ColdStoreOptions {
  std::string root;       // <dir>
  std::string identity;   // hash of everything that changes the numbers; one path component
  KvConfig kv;            // geometry every entry must have (others are mismatched: deleted at Open)
  uint64_t cap_bytes = 0; // disk cap (0 = unlimited): oldest-mtime files are evicted past it
  bool verify_tensors = true;
};

struct ColdStoreCounters {
  uint64_t scanned = 0;            // entry files examined at Open
  uint64_t temp_deleted = 0;       // leftover .tmp files removed at Open
  uint64_t corrupt_deleted = 0;    // corrupt or mismatched files removed at Open
  uint64_t spills = 0;             // successful Puts
  uint64_t spill_failures = 0;     // failed Puts (disk full included)
  uint64_t no_space = 0;           // ... of which ENOSPC
  uint64_t dedup_replaced = 0;     // Puts that replaced an entry with identical tokens
  uint64_t superseded = 0;         // strict-prefix entries dropped by a Put
  uint64_t evictions = 0;          // entries removed for the byte cap
  uint64_t lookups = 0;
  uint64_t hits = 0;
  uint64_t restores = 0;
  uint64_t restore_failures = 0;
};

// A file written by Stage() and not yet indexed: Commit() makes it part of the store.
struct StagedEntry {
  std::string path;
  std::string ns;
  std::vector<int32_t> tokens;
  uint64_t bytes = 0;
  bool trimmable = true;
  int64_t min_reusable_offset = 0;
};

// What the index knows about one entry (for tooling: `ember cache ls`).
struct ColdEntryInfo {
  std::string path;
  std::string ns;
  int64_t n_tokens = 0;
  uint64_t bytes = 0;
  int64_t mtime_us = 0;
};

// One lookup result: restore entry `path` trimmed to `usable` positions.
struct ColdMatch {
  std::string path;
  int64_t usable = 0;        // p = min(LCP, len(prompt) - 1)
  int64_t entry_tokens = 0;  // len of the entry's token list
  uint64_t bytes = 0;        // file size (for a restore-vs-recompute estimate)
};

class ColdStore {
 public:
  // Creates <root>/<identity> if needed (0700), locks it and scans it (see Scan). Errors: InvalidArgument
  // for a bad identity (empty, '/', "." or ".."); FailedPrecondition for a directory this user does not
  // alone control (coldtier/private_dir.h) or one another store holds (another process, or another store
  // of this one); I/O errors creating or listing the directory. Every message names the path and the fix.
  static StatusOr<std::unique_ptr<ColdStore>> Open(Env& env, ColdStoreOptions options);

  // Writes an entry for (ns, tokens, state) atomically, then applies dedup, supersede and the cap.
  // state.n_pos() must equal tokens.size(). An entry bigger than the whole cap is not kept
  // (kResourceExhausted). On error the index and disk hold what they held before.
  Status Put(const std::string& ns, std::span<const int32_t> tokens, const KvState& state);

  // Put in two steps, so the slow step can run without the caller's lock. Stage writes the file
  // atomically and reads no index state (safe concurrently with every other method; one Stage per name
  // at a time). Commit indexes it (dedup, supersede, cap). A failed Stage must be reported with
  // NoteStageFailure, which counts it and keeps the disk consistent with the index.
  StatusOr<StagedEntry> Stage(const std::string& ns, std::span<const int32_t> tokens, const KvState& state) const;
  Status Commit(StagedEntry staged);
  void NoteStageFailure(const std::string& ns, std::span<const int32_t> tokens, const Status& st);

  // Whether an entry with exactly these tokens is indexed in ns (a write of it would be a no-op).
  bool Contains(const std::string& ns, std::span<const int32_t> tokens) const;
  // Every indexed entry, path order.
  std::vector<ColdEntryInfo> List() const;
  uint64_t cap_bytes() const { return options_.cap_bytes; }

  // The entry of namespace ns with the longest usable prefix for prompt, if longer than `better_than`
  // (the best RAM candidate: a cold entry is used only if strictly longer). Skips entries that cannot
  // be trimmed to p or whose min_reusable_offset exceeds p. Ties keep the earlier entry (path order).
  std::optional<ColdMatch> Find(std::span<const int32_t> prompt, const std::string& ns,
                                int64_t better_than = 0);

  // Reads m's file (verifying tensors if configured), checks it still is the indexed entry, trims to
  // m.usable and touches the file's mtime. Any failure deletes the file, counts restore_failures and
  // returns the error.
  StatusOr<KvState> Restore(const ColdMatch& m);

  size_t entries() const { return index_.size(); }
  uint64_t bytes() const { return bytes_; }
  const ColdStoreCounters& counters() const { return counters_; }
  const std::string& dir() const { return dir_; }
  // Directory of namespace ns (exposed for tests and tooling).
  std::string NamespaceDir(const std::string& ns) const;

 private:
  struct Indexed {
    std::string ns;
    std::vector<int32_t> tokens;
    uint64_t bytes = 0;
    int64_t mtime = 0;
    bool trimmable = true;
    int64_t min_reusable_offset = 0;
  };

  ColdStore(Env& env, ColdStoreOptions options);
  // Startup: deletes *.tmp, indexes verified headers, deletes and counts corrupt or mismatched files.
  // A namespace directory that fails private_dir.h fails the scan (and so Open).
  Status Scan();
  void ScanNamespaceDir(const std::string& ns_dir, const std::string& ns_hash);
  std::string EntryName(const std::string& ns, std::span<const int32_t> tokens) const;
  std::string EntryPath(const std::string& ns, std::span<const int32_t> tokens) const;
  void Drop(const std::string& path);  // removes the file (best effort) and the index entry
  void Supersede(const std::string& fresh_path);
  void EvictToCap(const std::string& fresh_path);

  Env& env_;
  std::unique_ptr<FileLock> lock_;  // <dir>/lock: this store owns the identity directory (released last)
  ColdStoreOptions options_;
  std::string dir_;  // <root>/<identity>
  std::map<std::string, Indexed> index_;  // by path: a deterministic order for tie-breaking
  uint64_t bytes_ = 0;
  ColdStoreCounters counters_;
};

}  // namespace ember
