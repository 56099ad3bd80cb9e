#include "coldtier/cold_store.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>

#include "coldtier/entry_format.h"
#include "coldtier/private_dir.h"
#include "util/hex.h"

namespace ember {

namespace {

bool AllFull(const KvConfig& c) {
  return std::all_of(c.kinds.begin(), c.kinds.end(),
                     [](const LayerStateSpec& s) { return s.kind == StateKind::kFull; });
}

size_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

ColdStore::ColdStore(Env& env, ColdStoreOptions options)
    : env_(env), options_(std::move(options)), dir_(JoinPath(options_.root, options_.identity)) {}

StatusOr<std::unique_ptr<ColdStore>> ColdStore::Open(Env& env, ColdStoreOptions options) {
  const std::string& id = options.identity;
  if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos) {
    return InvalidArgument("cold store identity must be one path component, got '" + id + "'");
  }
  std::unique_ptr<ColdStore> store(new ColdStore(env, std::move(options)));
  EMBER_RETURN_IF_ERROR(EnsurePrivateDir(env, store->options_.root, DirRole::kRoot).WithContext("cold store"));
  EMBER_RETURN_IF_ERROR(EnsurePrivateDir(env, store->dir_, DirRole::kOwn).WithContext("cold store"));
  // One store per identity directory, across processes: the index lives in memory, so a second one would
  // keep its own byte cap, delete the first one's in-flight temp files at its scan and go stale as the
  // first evicts (docs/coldtier.md "Two servers on one directory").
  StatusOr<std::unique_ptr<FileLock>> lock = env.LockFile(JoinPath(store->dir_, kLockFileName));
  if (!lock.ok()) {
    if (lock.status().code() != StatusCode::kFailedPrecondition) return lock.status().WithContext("cold store");
    return FailedPrecondition(store->dir_ + " is in use by another process (" + lock.status().message() +
                              "); two servers of one model cannot share a cache directory: give this one its "
                              "own --ssd-cache DIR, or stop the other");
  }
  store->lock_ = std::move(lock).value();
  EMBER_RETURN_IF_ERROR(store->Scan().WithContext("cold store scan"));
  return store;
}

std::string ColdStore::NamespaceDir(const std::string& ns) const {
  return JoinPath(dir_, Hex64(XXH3_64bits(ns.data(), ns.size())));
}

std::string ColdStore::EntryName(const std::string& ns, std::span<const int32_t> tokens) const {
  uint64_t seed = XXH3_64bits(ns.data(), ns.size());
  return Hex64(XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), seed));
}

Status ColdStore::Scan() {
  EMBER_ASSIGN_OR_RETURN(std::vector<std::string> children, env_.GetChildren(dir_));
  std::sort(children.begin(), children.end());
  for (const std::string& name : children) {
    const std::string path = JoinPath(dir_, name);
    StatusOr<PathInfo> info = env_.Stat(path, /*follow_symlinks=*/false);
    if (!info.ok()) continue;  // gone meanwhile
    if (info->type == PathInfo::Type::kDir) {
      // A namespace directory: only one this user alone controls is read (or has files deleted).
      EMBER_RETURN_IF_ERROR(EnsurePrivateDir(env_, path, DirRole::kOwn));
      ScanNamespaceDir(path, name);
    } else if (info->type == PathInfo::Type::kFile && name.ends_with(kTempExtension)) {
      if (env_.RemoveFile(path).ok()) ++counters_.temp_deleted;  // e.g. an interrupted identity.json write
    }
    // Anything else at this level (identity.json, the lock, links) is left alone and never followed.
  }
  EvictToCap("");  // the cap may have shrunk since the last run
  return Status::Ok();
}

void ColdStore::ScanNamespaceDir(const std::string& ns_dir, const std::string& ns_hash) {
  StatusOr<std::vector<std::string>> names = env_.GetChildren(ns_dir);
  if (!names.ok()) return;  // unreadable directory: its entries are simply not indexed
  for (const std::string& name : *names) {
    std::string path = JoinPath(ns_dir, name);
    if (name.ends_with(kTempExtension)) {
      if (env_.RemoveFile(path).ok()) ++counters_.temp_deleted;  // unlinking a link never touches its target
      continue;
    }
    if (!name.ends_with(kEntryExtension)) continue;  // not ours to judge
    ++counters_.scanned;
    StatusOr<EntryHeader> h = ReadHeader(env_, path);  // a link is refused (never read through): deleted
    bool ok = h.ok() && h->identity == options_.identity && SameGeometry(h->config, options_.kv) &&
              JoinPath(dir_, ns_hash) == NamespaceDir(h->ns) &&
              name == EntryName(h->ns, h->tokens) + kEntryExtension;
    StatusOr<int64_t> mtime = ok ? env_.GetMtimeMicros(path) : StatusOr<int64_t>(int64_t{0});
    if (!ok || !mtime.ok()) {
      (void)env_.RemoveFile(path);
      ++counters_.corrupt_deleted;
      continue;
    }
    Indexed e{h->ns, h->tokens, h->file_size, *mtime, h->Trimmable(), h->MinReusableOffset()};
    bytes_ += e.bytes;
    index_[path] = std::move(e);
  }
}

void ColdStore::Drop(const std::string& path) {
  (void)env_.RemoveFile(path);  // already gone is fine: the goal is "not indexed, not on disk"
  auto it = index_.find(path);
  if (it == index_.end()) return;
  bytes_ -= it->second.bytes;
  index_.erase(it);
}

std::string ColdStore::EntryPath(const std::string& ns, std::span<const int32_t> tokens) const {
  return JoinPath(NamespaceDir(ns), EntryName(ns, tokens) + kEntryExtension);
}

Status ColdStore::Put(const std::string& ns, std::span<const int32_t> tokens, const KvState& state) {
  StatusOr<StagedEntry> staged = Stage(ns, tokens, state);
  if (!staged.ok()) {
    NoteStageFailure(ns, tokens, staged.status());
    return staged.status();
  }
  return Commit(std::move(staged).value());
}

StatusOr<StagedEntry> ColdStore::Stage(const std::string& ns, std::span<const int32_t> tokens,
                                       const KvState& state) const {
  if (!SameGeometry(state.config(), options_.kv)) return InvalidArgument("cold store put: geometry mismatch");
  const std::string ns_dir = NamespaceDir(ns);
  const std::string name = EntryName(ns, tokens);
  EMBER_RETURN_IF_ERROR(EnsurePrivateDir(env_, ns_dir, DirRole::kOwn));
  EMBER_ASSIGN_OR_RETURN(uint64_t size, WriteEntry(env_, ns_dir, name, {options_.identity, ns, tokens, &state}));
  return StagedEntry{JoinPath(ns_dir, name + kEntryExtension), ns, {tokens.begin(), tokens.end()}, size,
                     AllFull(state.config()), state.min_reusable_offset()};
}

void ColdStore::NoteStageFailure(const std::string& ns, std::span<const int32_t> tokens, const Status& st) {
  if (st.code() == StatusCode::kInvalidArgument) return;  // a caller bug, not a disk event
  ++counters_.spill_failures;
  if (st.code() == StatusCode::kNoSpace) ++counters_.no_space;
  // A failure after the rename (directory fsync) leaves a whole file that may not survive a crash.
  // An unindexed one is removed; an indexed one (same tokens) is complete either way and kept.
  const std::string path = EntryPath(ns, tokens);
  if (index_.count(path) == 0 && env_.FileSize(path).ok()) (void)env_.RemoveFile(path);
}

Status ColdStore::Commit(StagedEntry staged) {
  const std::string path = staged.path;
  auto old = index_.find(path);
  if (old != index_.end()) {
    ++counters_.dedup_replaced;
    bytes_ -= old->second.bytes;
    index_.erase(old);
  }
  StatusOr<int64_t> mtime = env_.GetMtimeMicros(path);
  Indexed e{std::move(staged.ns), std::move(staged.tokens), staged.bytes, mtime.ok() ? *mtime : env_.WallMicros(),
            staged.trimmable, staged.min_reusable_offset};
  bytes_ += e.bytes;
  index_[path] = std::move(e);
  ++counters_.spills;
  if (options_.cap_bytes > 0 && staged.bytes > options_.cap_bytes) {
    Drop(path);
    return ResourceExhausted("cold entry of " + std::to_string(staged.bytes) + " bytes exceeds the disk cap");
  }
  Supersede(path);
  EvictToCap(path);
  return Status::Ok();
}

bool ColdStore::Contains(const std::string& ns, std::span<const int32_t> tokens) const {
  auto it = index_.find(EntryPath(ns, tokens));
  return it != index_.end() && it->second.ns == ns &&
         std::equal(it->second.tokens.begin(), it->second.tokens.end(), tokens.begin(), tokens.end());
}

std::vector<ColdEntryInfo> ColdStore::List() const {
  std::vector<ColdEntryInfo> out;
  for (const auto& [path, e] : index_) {
    out.push_back({path, e.ns, static_cast<int64_t>(e.tokens.size()), e.bytes, e.mtime});
  }
  return out;
}

void ColdStore::Supersede(const std::string& fresh_path) {
  const Indexed& fresh = index_.at(fresh_path);
  if (!fresh.trimmable) return;  // an untrimmable entry cannot serve its ancestors' prompts
  std::vector<std::string> victims;
  for (const auto& [path, e] : index_) {
    if (path == fresh_path || e.ns != fresh.ns || e.tokens.size() >= fresh.tokens.size()) continue;
    if (static_cast<int64_t>(e.tokens.size()) < fresh.min_reusable_offset) continue;
    if (std::equal(e.tokens.begin(), e.tokens.end(), fresh.tokens.begin())) victims.push_back(path);
  }
  for (const std::string& v : victims) {
    Drop(v);
    ++counters_.superseded;
  }
}

void ColdStore::EvictToCap(const std::string& fresh_path) {
  while (options_.cap_bytes > 0 && bytes_ > options_.cap_bytes) {
    const std::string* oldest = nullptr;
    int64_t oldest_mtime = 0;
    for (const auto& [path, e] : index_) {
      if (path == fresh_path) continue;  // the entry just written is never the victim
      if (oldest == nullptr || e.mtime < oldest_mtime) {
        oldest = &path;
        oldest_mtime = e.mtime;
      }
    }
    if (oldest == nullptr) return;
    std::string victim = *oldest;  // copy: Drop erases the key
    Drop(victim);
    ++counters_.evictions;
  }
}

std::optional<ColdMatch> ColdStore::Find(std::span<const int32_t> prompt, const std::string& ns,
                                         int64_t better_than) {
  ++counters_.lookups;
  if (prompt.empty()) return std::nullopt;
  std::optional<ColdMatch> best;
  for (const auto& [path, e] : index_) {
    if (e.ns != ns) continue;
    int64_t p = std::min<int64_t>(CommonPrefix(e.tokens, prompt), int64_t(prompt.size()) - 1);
    if (!e.trimmable && p != static_cast<int64_t>(e.tokens.size())) continue;
    if (e.min_reusable_offset > p || p <= better_than) continue;
    if (best && p <= best->usable) continue;  // ties keep the earlier candidate
    best = ColdMatch{path, p, static_cast<int64_t>(e.tokens.size()), e.bytes};
  }
  if (best) ++counters_.hits;
  return best;
}

StatusOr<KvState> ColdStore::Restore(const ColdMatch& m) {
  auto it = index_.find(m.path);
  if (it == index_.end()) return NotFound("cold entry " + m.path + " is no longer indexed");
  auto fail = [&](const Status& st) {
    Drop(m.path);
    ++counters_.restore_failures;
    return st.WithContext("cold restore");
  };
  StatusOr<LoadedEntry> loaded = ReadEntry(env_, m.path, options_.verify_tensors);
  if (!loaded.ok()) return fail(loaded.status());
  const EntryHeader& h = loaded->header;
  if (h.identity != options_.identity || h.ns != it->second.ns || h.tokens != it->second.tokens ||
      !SameGeometry(h.config, options_.kv)) {
    return fail(Corrupt(m.path + ": entry no longer matches its index record"));
  }
  KvState state = std::move(loaded->state);
  if (Status st = state.TrimTo(m.usable); !st.ok()) return fail(st);
  int64_t now = env_.WallMicros();
  // Recency for the byte cap lives in the file's mtime, so it survives restarts. Failing to touch it only
  // makes the entry look older; the restore itself succeeded.
  if (env_.SetMtimeMicros(m.path, now).ok()) it->second.mtime = now;
  ++counters_.restores;
  return state;
}

}  // namespace ember
