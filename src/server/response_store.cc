#include "server/response_store.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "coldtier/private_dir.h"
#include "server/json_input.h"
#include "server/responses_conversation.h"
#include "server/responses_response.h"
#include "util/atomic_write.h"
#include "util/sha256.h"

namespace ember::server {
namespace {

using nlohmann::json;

constexpr std::string_view kMagic = "ember-response 1 ";
constexpr const char* kDirName = "responses";
constexpr const char* kFileExtension = ".json";
constexpr const char* kTempExtension = ".tmp";

std::string FileName(const std::string& id) { return id + kFileExtension; }

// A link or a FIFO where a response file should be is not ours: removed. A regular file that could not
// be sized is left for the next start.
bool IsRegular(Env& env, const std::string& path) {
  StatusOr<PathInfo> info = env.Stat(path, /*follow_symlinks=*/false);
  return info.ok() && info->type == PathInfo::Type::kFile;
}

void Log(const std::string& what) { std::fprintf(stderr, "ember: responses store: %s\n", what.c_str()); }

}  // namespace

std::string EncodeStoredResponse(const StoredResponse& r) {
  const json body = {{"id", r.id},
                     {"tenant", r.tenant},
                     {"stored_at_us", r.stored_at_us},
                     {"response", r.response},
                     {"conversation", ConversationToJson(r.conversation)}};
  // Invalid UTF-8 from a model is replaced, as on the wire (DumpJson never throws).
  const std::string text = DumpJson(body);
  return std::string(kMagic) + Sha256Hex(text) + "\n" + text;
}

StatusOr<StoredResponse> DecodeStoredResponse(std::string_view file, const std::string& expected_id) {
  if (file.substr(0, kMagic.size()) != kMagic) return Corrupt("not a stored response (bad header)");
  const size_t nl = file.find('\n');
  if (nl != kMagic.size() + 64) return Corrupt("bad header line");
  const std::string_view digest = file.substr(kMagic.size(), 64);
  const std::string_view text = file.substr(nl + 1);
  if (Sha256Hex(text) != digest) return Corrupt("checksum mismatch (damaged or truncated)");
  StatusOr<json> parsed = ParseJsonLimited(text);
  if (!parsed.ok()) return Corrupt("body: " + parsed.status().message());
  const json& b = parsed.value();
  if (!b.is_object()) return Corrupt("body is not an object");
  auto str = [&](const char* k) -> const std::string* {
    auto it = b.find(k);
    return it != b.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
  };
  const std::string* id = str("id");
  const std::string* tenant = str("tenant");
  auto at = b.find("stored_at_us");
  auto response = b.find("response");
  auto conversation = b.find("conversation");
  if (id == nullptr || tenant == nullptr || at == b.end() || !at->is_number_integer() || response == b.end() ||
      !response->is_object() || conversation == b.end()) {
    return Corrupt("missing or mistyped field");
  }
  if (*id != expected_id) return Corrupt("holds id '" + id->substr(0, 64) + "', not its file name's");
  StatusOr<std::vector<ChatMessage>> conv = ConversationFromJson(*conversation);
  if (!conv.ok()) return conv.status();
  StoredResponse r;
  r.id = *id;
  r.tenant = *tenant;
  r.stored_at_us = at->get<int64_t>();
  r.response = *response;
  r.conversation = std::move(conv).value();
  return r;
}

ResponseStore::ResponseStore(ResponseStoreOptions options)
    : env_(options.env != nullptr ? options.env : Env::Default()), options_(std::move(options)) {
  if (!options_.root.empty()) dir_ = JoinPath(options_.root, kDirName);
  std::sort(options_.tenants.begin(), options_.tenants.end());
  quota_ = options_.max_bytes / std::max<size_t>(1, options_.tenants.size());
  MutexLock l(&mu_);
  // An existing directory is read back now; a missing one is made on the first stored response, so a
  // server that never stores one leaves the cache directory as it found it.
  if (!dir_.empty() && options_.max_bytes > 0 && env_->DirExists(dir_) && EnsureDirLocked()) Load();
}

ResponseStore::~ResponseStore() = default;

bool ResponseStore::Expired(const Entry& e, int64_t now_us) const {
  return options_.ttl_s > 0 && static_cast<double>(now_us - e.stored_at_us) > options_.ttl_s * 1e6;
}

void ResponseStore::DisablePersistence(const Status& why) {
  dir_refused_ = true;
  Log("kept in RAM only: " + why.message());
}

bool ResponseStore::EnsureDirLocked() {
  if (dir_ready_) return true;
  if (dir_.empty() || dir_refused_) return false;
  // The root is the user's cache directory (checked as the SSD tier checks it); ours inside it is never a link.
  if (Status st = EnsurePrivateDir(*env_, options_.root, DirRole::kRoot); !st.ok()) return DisablePersistence(st), false;
  if (Status st = EnsurePrivateDir(*env_, dir_, DirRole::kOwn); !st.ok()) return DisablePersistence(st), false;
  StatusOr<std::unique_ptr<FileLock>> lock = env_->LockFile(JoinPath(dir_, "lock"));
  if (!lock.ok()) return DisablePersistence(lock.status()), false;
  lock_ = std::move(lock).value();
  dir_ready_ = counters_.persistent = true;
  return true;
}

void ResponseStore::Load() {
  StatusOr<std::vector<std::string>> names = env_->GetChildren(dir_);
  if (!names.ok()) return Log("cannot list " + dir_ + ": " + names.status().message());
  const int64_t now = env_->WallMicros();
  struct Loaded {
    std::string id;
    Entry entry;
  };
  std::vector<Loaded> found;
  uint64_t skipped = 0;  // counted here: the analysis does not see mu_ held inside the lambda below
  for (const std::string& name : *names) {
    const std::string path = JoinPath(dir_, name);
    if (name.ends_with(kTempExtension)) {
      (void)env_->RemoveFile(path);  // an interrupted write
      continue;
    }
    if (name == "lock" || !name.ends_with(kFileExtension)) continue;  // not ours to judge
    const std::string id = name.substr(0, name.size() - std::string_view(kFileExtension).size());
    // Bad contents are deleted (the directory is ours); a failed read may be passing, so that file stays.
    auto skip = [&](const std::string& why, bool remove = true) {
      ++skipped;
      Log("skipped " + path + ": " + why + (remove ? " (deleted)" : ""));
      if (remove) (void)env_->RemoveFile(path);  // unlinking a link never touches its target
    };
    if (!IsResponseId(id)) {
      ++skipped;
      Log("skipped " + path + ": not a response id (left alone)");
      continue;
    }
    StatusOr<uint64_t> size = env_->FileSize(path);  // refuses links and anything but a regular file
    if (!size.ok()) {
      skip(size.status().message(), /*remove=*/size.status().code() != StatusCode::kIoError || !IsRegular(*env_, path));
      continue;
    }
    if (*size > options_.max_bytes) {
      skip("larger than the store's cap");
      continue;
    }
    StatusOr<std::vector<uint8_t>> bytes = env_->ReadFile(path);
    if (!bytes.ok()) {
      skip(bytes.status().message(), /*remove=*/false);
      continue;
    }
    std::string file(bytes->begin(), bytes->end());
    StatusOr<StoredResponse> r = DecodeStoredResponse(file, id);
    if (!r.ok()) {
      skip(r.status().message());
      continue;
    }
    Entry e;
    e.tenant = r->tenant;
    e.stored_at_us = r->stored_at_us;
    e.body = std::move(file);
    if (Expired(e, now)) {
      ++counters_.expired;
      (void)env_->RemoveFile(path);
      continue;
    }
    found.push_back({id, std::move(e)});
  }
  counters_.skipped += skipped;
  // Oldest first: until used again, what was stored longest ago is evicted first.
  std::sort(found.begin(), found.end(),
            [](const Loaded& a, const Loaded& b) { return a.entry.stored_at_us < b.entry.stored_at_us; });
  for (Loaded& l : found) {
    InsertLocked(l.id, std::move(l.entry));
    ++counters_.loaded;
  }
  EvictLocked(now);  // the cap may have shrunk since the last run
}

bool ResponseStore::Known(const std::string& tenant) const {
  return options_.tenants.empty() || std::binary_search(options_.tenants.begin(), options_.tenants.end(), tenant);
}

void ResponseStore::InsertLocked(const std::string& id, Entry e) {
  Tenant& t = tenants_[e.tenant];
  t.bytes += e.body.size();
  bytes_ += e.body.size();
  e.lru = t.lru.insert(t.lru.end(), id);
  entries_.emplace(id, std::move(e));
}

void ResponseStore::RemoveLocked(const std::string& id_ref, bool remove_file) {
  const std::string id = id_ref;  // id_ref may be the lru element erased below
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  auto t = tenants_.find(it->second.tenant);
  t->second.bytes -= it->second.body.size();
  t->second.lru.erase(it->second.lru);
  if (t->second.lru.empty()) tenants_.erase(t);
  bytes_ -= it->second.body.size();
  entries_.erase(it);
  // Synced, so a deleted or evicted response does not come back after a power cut.
  if (remove_file && dir_ready_ && env_->RemoveFile(JoinPath(dir_, FileName(id))).ok()) (void)env_->SyncDir(dir_);
}

ResponseStore::Tenant* ResponseStore::OverflowVictimLocked() {
  Tenant* largest = nullptr;
  for (auto& [name, t] : tenants_) {
    if (!Known(name)) return &t;
    if (largest == nullptr || t.bytes > largest->bytes) largest = &t;
  }
  return largest;
}

void ResponseStore::EvictLocked(int64_t now_us) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const std::string id = it->first;
    const bool expired = Expired(it->second, now_us);
    ++it;
    if (expired) {
      ++counters_.expired;
      RemoveLocked(id, true);
    }
  }
  // Each tenant within its share: what a Put adds pushes out only the same tenant's entries.
  for (auto it = tenants_.begin(); it != tenants_.end();) {
    Tenant& t = it->second;
    ++it;  // RemoveLocked erases a tenant whose last entry goes
    while (t.bytes > quota_) {
      ++counters_.evicted;
      const bool last = t.lru.size() == 1;
      RemoveLocked(t.lru.front(), true);
      if (last) break;
    }
  }
  // Known tenants' shares add up to the cap, so only entries nobody can read now, or (without a tenant
  // list) the largest tenant's, go here.
  while (bytes_ > options_.max_bytes && !tenants_.empty()) {
    ++counters_.evicted;
    RemoveLocked(OverflowVictimLocked()->lru.front(), true);
  }
}

Status ResponseStore::Put(StoredResponse r) {
  MutexLock l(&mu_);
  const int64_t now = env_->WallMicros();
  r.stored_at_us = now;
  std::string file = EncodeStoredResponse(r);
  if (file.size() > quota_) {
    return ResourceExhausted("the response (" + std::to_string(file.size()) + " bytes stored) exceeds " +
                             (quota_ == options_.max_bytes ? std::string("--responses-store-size (")
                                                           : "one API key's share of --responses-store-size (") +
                             std::to_string(quota_) + " bytes)");
  }
  RemoveLocked(r.id, false);  // the file is replaced below
  Status written = Status::Ok();
  if (EnsureDirLocked()) {
    written = WriteFileAtomically(*env_, dir_, FileName(r.id), file);
    if (!written.ok()) {
      ++counters_.write_failures;
      Log("cannot write " + JoinPath(dir_, FileName(r.id)) + ": " + written.message() + " (kept in RAM)");
    }
  }
  Entry e;
  e.tenant = std::move(r.tenant);
  e.stored_at_us = now;
  e.body = std::move(file);
  InsertLocked(r.id, std::move(e));
  EvictLocked(now);
  return written;
}

std::optional<StoredResponse> ResponseStore::Get(const std::string& id, const std::string& tenant) {
  MutexLock l(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.tenant != tenant) return std::nullopt;
  if (Expired(it->second, env_->WallMicros())) {
    ++counters_.expired;
    RemoveLocked(id, true);
    return std::nullopt;
  }
  std::list<std::string>& lru = tenants_[tenant].lru;
  lru.splice(lru.end(), lru, it->second.lru);
  StatusOr<StoredResponse> r = DecodeStoredResponse(it->second.body, id);
  if (!r.ok()) return std::nullopt;  // cannot happen: the bytes were written or checked by this store
  return std::move(r).value();
}

bool ResponseStore::Delete(const std::string& id, const std::string& tenant) {
  MutexLock l(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.tenant != tenant) return false;
  RemoveLocked(id, true);
  return true;
}

size_t ResponseStore::tenant_bytes(const std::string& tenant) const {
  MutexLock l(&mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.bytes;
}

ResponseStoreStats ResponseStore::stats() const {
  MutexLock l(&mu_);
  ResponseStoreStats s = counters_;
  s.entries = entries_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace ember::server
