#include "crash_writer.h"

#include <set>

#include "coldtier/cold_store.h"
#include "coldtier/entry_file.h"
#include "coldtier/entry_format.h"

namespace ember {
namespace {

// splitmix64: a tiny deterministic generator (the writer and the checker need no shared state).
uint64_t Mix(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<uint8_t> Serialized(const KvState& s) {
  VectorSink sink;
  if (!s.Serialize(sink).ok()) return {};
  return sink.Take();
}

}  // namespace

KvConfig CrashWriterConfig() { return KvConfig::Uniform(4, 4, 32, 32, KvDtype::kF16, 16); }

KvState CrashWriterState(const std::vector<int32_t>& tokens) {
  const KvConfig c = CrashWriterConfig();
  KvState s = std::move(KvState::Create(c)).value();
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (!s.Reserve(n).ok()) return s;
  std::vector<float> k(c.kv_dim_k()), v(c.kv_dim_v());
  for (int64_t p = 0; p < n; ++p) {
    for (int l = 0; l < c.n_layer; ++l) {
      // Small integers and halves: exact in f16, so the check compares bytes, not tolerances.
      for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>((tokens[p] * 7 + l * 13 + p + int(i)) % 512) * 0.5f;
      for (size_t i = 0; i < v.size(); ++i) v[i] = -static_cast<float>((tokens[p] * 3 + l * 5 + p * 2 + int(i)) % 512);
      s.StoreK(l, p, k.data());
      s.StoreV(l, p, v.data());
    }
  }
  s.Commit(n);
  return s;
}

Status RunCrashWriter(const std::string& dir, uint64_t seed, uint64_t cap_bytes) {
  ColdStoreOptions o;
  o.root = dir;
  o.identity = kCrashIdentity;
  o.kv = CrashWriterConfig();
  o.cap_bytes = cap_bytes;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ColdStore> store, ColdStore::Open(*Env::Default(), std::move(o)));
  uint64_t x = seed;
  for (;;) {
    // 8 conversation roots x lengths 1..256: many strict prefixes (supersede) and repeats (dedup).
    const int32_t root = static_cast<int32_t>(Mix(x) % 8);
    const int64_t n = 1 + static_cast<int64_t>(Mix(x) % 256);
    const std::string ns = Mix(x) % 4 == 0 ? "tenant-b" : "";
    std::vector<int32_t> tokens(n);
    for (int64_t i = 0; i < n; ++i) tokens[i] = 1000 * root + static_cast<int32_t>((i * 31 + root) % 997);
    Status st = store->Put(ns, tokens, CrashWriterState(tokens));
    if (!st.ok() && st.code() != StatusCode::kResourceExhausted) return st;
  }
}

StatusOr<CrashCheck> VerifyCrashDir(Env& env, const std::string& dir, uint64_t cap_bytes) {
  ColdStoreOptions o;
  o.root = dir;
  o.identity = kCrashIdentity;
  o.kv = CrashWriterConfig();
  o.cap_bytes = cap_bytes;
  o.verify_tensors = true;
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<ColdStore> store, ColdStore::Open(env, std::move(o)));
  CrashCheck check;
  check.corrupt_deleted = store->counters().corrupt_deleted;
  check.temp_deleted = store->counters().temp_deleted;
  if (check.corrupt_deleted != 0) {
    return Corrupt("startup scan deleted " + std::to_string(check.corrupt_deleted) + " corrupt entry file(s)");
  }
  // Index == files: every entry file on disk is indexed, and no temp file survived the scan.
  std::set<std::string> indexed;
  for (const ColdEntryInfo& e : store->List()) indexed.insert(e.path);
  EMBER_ASSIGN_OR_RETURN(std::vector<std::string> ns_dirs, env.GetChildren(store->dir()));
  for (const std::string& d : ns_dirs) {
    const std::string ns_dir = JoinPath(store->dir(), d);
    if (!env.DirExists(ns_dir)) continue;
    EMBER_ASSIGN_OR_RETURN(std::vector<std::string> names, env.GetChildren(ns_dir));
    for (const std::string& name : names) {
      const std::string path = JoinPath(ns_dir, name);
      if (name.ends_with(kTempExtension)) return Corrupt(path + ": temp file survived the scan");
      if (name.ends_with(kEntryExtension) && !indexed.count(path)) return Corrupt(path + ": on disk, not indexed");
    }
  }
  // Every indexed entry restores, checksums verified, to exactly the bytes its tokens imply.
  for (const ColdEntryInfo& e : store->List()) {
    EMBER_ASSIGN_OR_RETURN(EntryHeader h, ReadHeader(env, e.path));
    ColdMatch m{e.path, static_cast<int64_t>(h.tokens.size()), static_cast<int64_t>(h.tokens.size()), e.bytes};
    StatusOr<KvState> state = store->Restore(m);
    if (!state.ok()) return state.status().WithContext("indexed entry does not restore");
    if (Serialized(*state) != Serialized(CrashWriterState(h.tokens))) {
      return Corrupt(e.path + ": restored bytes differ from what its tokens imply");
    }
    ++check.entries;
  }
  return check;
}

}  // namespace ember
