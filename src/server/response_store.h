// Stored responses (POST /v1/responses with store:true): what GET /v1/responses/{id} returns and what a
// later request's previous_response_id continues. Each entry keeps the whole conversation (its input
// resolved through its own previous_response_id chain, plus its output), so a chain never depends on an
// older entry still being there.
//
// Bounds: a byte cap and a TTL on the wall clock (so it holds across restarts). Tenancy: an entry is
// visible only to the tenant that stored it (the API key's cache tenant); to any other it does not exist.
// Each of the N known tenants (one per API key) may hold cap / N bytes, and a Put evicts only the storing
// tenant's least recently used entries, so no tenant can push another's responses out. Entries of tenants
// no longer known (a key removed since they were stored: nobody can read them) go first when the whole
// store is over its cap.
//
// Persistence: with a root directory (the SSD tier's, --ssd-cache), entries are files
// <root>/responses/<id>.json, written atomically through the Env, each with a SHA-256 of its body. The
// directory is made (0700) on the first stored response and locked (<root>/responses/lock) by one server at
// a time; a directory that fails the private-directory checks, or is locked by another server, leaves the
// store in RAM only with a warning. At start the files are read back: a damaged, truncated, foreign or
// hostile file is logged and deleted, never trusted, never a crash. Without a root the store is RAM only.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/backend.h"
#include "util/env.h"
#include "util/mutex.h"
#include "util/status.h"

namespace ember::server {

struct StoredResponse {
  std::string id;                          // resp_<32 hex>
  std::string tenant;                      // CacheNamespace::TenantOf(key identity, ""): a digest, never a key
  int64_t stored_at_us = 0;                // wall clock, set by Put
  nlohmann::json response;                 // the response object as GET returns it
  std::vector<ChatMessage> conversation;   // prompt messages (no instructions) + the reply
};

struct ResponseStoreOptions {
  Env* env = nullptr;                      // files and the wall clock; null: Env::Default()
  std::string root;                        // the SSD tier's directory; "" = RAM only
  size_t max_bytes = size_t{256} << 20;    // --responses-store-size; 0 = nothing is stored
  double ttl_s = 30 * 24 * 3600.0;         // --responses-ttl; 0 = entries never expire
  // The tenants that may store (one per API key); each gets max_bytes / tenants.size(). Empty: any
  // tenant may use the whole cap (one tenant, no keys).
  std::vector<std::string> tenants;
};

struct ResponseStoreStats {
  size_t entries = 0;
  size_t bytes = 0;
  bool persistent = false;                 // files are being written
  uint64_t loaded = 0, skipped = 0, evicted = 0, expired = 0, write_failures = 0;
};

class ResponseStore {
 public:
  explicit ResponseStore(ResponseStoreOptions options);  // reads back what the directory holds
  ~ResponseStore();
  ResponseStore(const ResponseStore&) = delete;
  ResponseStore& operator=(const ResponseStore&) = delete;

  // Keeps `r` (replacing an entry of the same id), evicting r.tenant's least recently used entries beyond
  // its share. kResourceExhausted when the entry alone exceeds the share (nothing stored). A failed file write keeps
  // the entry in RAM and is returned (and logged) too.
  Status Put(StoredResponse r);
  // The entry if `tenant` stored it and it has not expired; counts as a use.
  std::optional<StoredResponse> Get(const std::string& id, const std::string& tenant);
  // True when `tenant`'s entry existed (it is gone, file included).
  bool Delete(const std::string& id, const std::string& tenant);
  ResponseStoreStats stats() const;

  // Bytes one tenant may hold: max_bytes / the number of known tenants.
  size_t tenant_quota() const { return quota_; }
  // Bytes `tenant` holds now.
  size_t tenant_bytes(const std::string& tenant) const;

  // The directory the files go to ("" without a root).
  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    std::string tenant;
    int64_t stored_at_us = 0;
    std::string body;                      // the file's JSON body (what bytes count)
    std::list<std::string>::iterator lru;  // position in its tenant's lru (front = least recently used)
  };
  struct Tenant {
    size_t bytes = 0;
    std::list<std::string> lru;            // ids, least recently used first
  };

  bool Expired(const Entry& e, int64_t now_us) const;
  void RemoveLocked(const std::string& id, bool remove_file) REQUIRES(mu_);
  void EvictLocked(int64_t now_us) REQUIRES(mu_);
  // Appends a new entry at its tenant's most recently used end.
  void InsertLocked(const std::string& id, Entry e) REQUIRES(mu_);
  bool Known(const std::string& tenant) const;
  // The tenant whose entries go first when the store is over its whole cap: an unknown one, else the largest.
  Tenant* OverflowVictimLocked() REQUIRES(mu_);
  // Makes the directory usable for writes (creates and locks it) once; false when the store is RAM only.
  bool EnsureDirLocked() REQUIRES(mu_);
  void Load() REQUIRES(mu_);
  void DisablePersistence(const Status& why) REQUIRES(mu_);

  Env* env_;
  ResponseStoreOptions options_;
  std::string dir_;
  size_t quota_ = 0;
  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ GUARDED_BY(mu_);
  std::map<std::string, Tenant> tenants_ GUARDED_BY(mu_);
  size_t bytes_ GUARDED_BY(mu_) = 0;
  bool dir_ready_ GUARDED_BY(mu_) = false;     // created, checked and locked
  bool dir_refused_ GUARDED_BY(mu_) = false;   // RAM only from now on
  std::unique_ptr<FileLock> lock_ GUARDED_BY(mu_);
  ResponseStoreStats counters_ GUARDED_BY(mu_);
};

// The file format (also for tests): "ember-response 1 <sha256 hex of body>\n" + body, where body is
// {"id","tenant","stored_at_us","response","conversation"}.
std::string EncodeStoredResponse(const StoredResponse& r);
// kCorrupt naming what is wrong: header, checksum, JSON, a field, or an id other than `expected_id`.
StatusOr<StoredResponse> DecodeStoredResponse(std::string_view file, const std::string& expected_id);

}  // namespace ember::server
