#include "tiered/cache_identity.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "coldtier/entry_format.h"
#include "util/atomic_write.h"
#include "util/hex.h"

namespace ember {
namespace {

// Streams typed fields into one XXH3 state, each length-prefixed so field boundaries are unambiguous.
class Hasher {
 public:
  Hasher() : st_(XXH3_createState()) { XXH3_64bits_reset(st_); }
  ~Hasher() { XXH3_freeState(st_); }
  void Bytes(const void* p, size_t n) {
    U64(n);
    XXH3_64bits_update(st_, p, n);
  }
  // The same bytes as Bytes(p, n), fed in pieces: XXH3's streaming digest does not depend on how the
  // input is split, so the result equals Bytes(p, n). `tick` runs after each piece with its size.
  template <typename Tick>
  void BytesInPieces(const uint8_t* p, size_t n, size_t piece, Tick tick) {
    U64(n);
    for (size_t off = 0; off < n; off += piece) {
      const size_t len = std::min(piece, n - off);
      XXH3_64bits_update(st_, p + off, len);
      tick(len);
    }
  }
  void Str(std::string_view s) { Bytes(s.data(), s.size()); }
  void U64(uint64_t v) { XXH3_64bits_update(st_, &v, sizeof v); }
  uint64_t Digest() { return XXH3_64bits_digest(st_); }

 private:
  XXH3_state_t* st_;
};

bool AffectsNumbers(const std::string& key) {
  if (key.rfind("tokenizer.chat_template", 0) == 0) return false;
  if (key.rfind("general.", 0) == 0) return key == "general.architecture" || key == "general.alignment";
  return true;
}

struct MemoKey {
  std::string path;
  uint64_t size = 0;
  int64_t mtime = 0;
};

// Hashing reports progress every this many bytes (tens of milliseconds at memory bandwidth).
constexpr size_t kProgressPiece = size_t{64} << 20;

std::string MemoPath(const std::string& root) { return JoinPath(root, "weights-fingerprints"); }

// A memo is a few lines per model file; anything bigger is not ours (or is damaged): ignored, rewritten.
constexpr uint64_t kMaxMemoBytes = 1 << 20;

struct MemoLine {
  MemoKey key;
  uint64_t hash = 0;
};

// Parses "<size> <mtime_us> <16 hex digits> <absolute path>". The memo is untrusted bytes (a damaged
// disk, an old format, someone's editor): a line that does not parse exactly is skipped, never thrown on.
std::optional<MemoLine> ParseMemoLine(std::string_view line) {
  MemoLine m;
  const char* p = line.data();
  const char* end = p + line.size();
  auto field = [&](auto& v, int base) {
    auto r = std::from_chars(p, end, v, base);
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != ' ') return false;
    p = r.ptr + 1;
    return true;
  };
  const char* hex_begin = nullptr;
  if (!field(m.key.size, 10) || !field(m.key.mtime, 10)) return std::nullopt;
  hex_begin = p;
  if (!field(m.hash, 16) || p - hex_begin != 17) return std::nullopt;  // exactly 16 digits and a space
  m.key.path.assign(p, end);
  if (m.key.path.empty()) return std::nullopt;
  return m;
}

// The memo's well-formed lines ({} if it is missing, unreadable, a link or oversized).
std::vector<MemoLine> ReadMemo(Env& env, const std::string& root) {
  StatusOr<uint64_t> size = env.FileSize(MemoPath(root));
  if (!size.ok() || *size > kMaxMemoBytes) return {};
  StatusOr<std::vector<uint8_t>> raw = env.ReadFile(MemoPath(root));
  if (!raw.ok()) return {};
  std::vector<MemoLine> out;
  std::string_view text(reinterpret_cast<const char*>(raw->data()), raw->size());
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (std::optional<MemoLine> m = ParseMemoLine(text.substr(0, nl))) out.push_back(std::move(*m));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

bool LookupMemo(Env& env, const std::string& root, const MemoKey& k, uint64_t* out) {
  for (const MemoLine& m : ReadMemo(env, root)) {
    if (m.key.path == k.path && m.key.size == k.size && m.key.mtime == k.mtime) {
      *out = m.hash;
      return true;
    }
  }
  return false;
}

// Rewrites the memo with this model's line replacing any older one for the same path. Lines that did not
// parse are dropped: a damaged memo heals on the next start.
void StoreMemo(Env& env, const std::string& root, const MemoKey& k, uint64_t hash) {
  std::string text;
  for (const MemoLine& m : ReadMemo(env, root)) {
    if (m.key.path == k.path || m.key.path.find('\n') != std::string::npos) continue;
    text += std::to_string(m.key.size) + " " + std::to_string(m.key.mtime) + " " + Hex64(m.hash) + " " +
            m.key.path + "\n";
  }
  if (k.path.find('\n') != std::string::npos) return;  // a path with a newline cannot be a memo line
  text += std::to_string(k.size) + " " + std::to_string(k.mtime) + " " + Hex64(hash) + " " + k.path + "\n";
  // Best effort, as identity.json below: the memo is a convenience (util/atomic_write.h).
  if (env.CreateDirs(root).ok()) (void)WriteFileAtomically(env, root, "weights-fingerprints", text);
}

}  // namespace

uint64_t HashWeights(const GgufFile& gguf, const ProgressFn& progress) {
  uint64_t total = 0, done = 0;
  for (const GgufTensorInfo& t : gguf.tensors()) total += t.n_bytes;
  uint64_t since_report = 0;
  auto tick = [&](size_t len) {
    done += len;
    since_report += len;
    if (progress && (since_report >= kProgressPiece || done == total)) {
      progress(done, total);
      since_report = 0;
    }
  };
  Hasher h;
  for (const GgufTensorInfo& t : gguf.tensors()) {
    h.Str(t.name);
    h.U64(static_cast<uint64_t>(t.type));
    for (uint64_t d : t.ne) h.U64(d);
    h.BytesInPieces(t.data, t.n_bytes, kProgressPiece, tick);
  }
  return h.Digest();
}

uint64_t HashNumericMetadata(const GgufFile& gguf) {
  Hasher h;
  for (const auto& [key, v] : gguf.metadata()) {
    if (!AffectsNumbers(key)) continue;
    h.Str(key);
    h.U64(static_cast<uint64_t>(v.type));
    h.U64(v.u);
    h.U64(static_cast<uint64_t>(v.i));
    uint64_t fbits;
    static_assert(sizeof(fbits) == sizeof(v.f));
    std::memcpy(&fbits, &v.f, sizeof fbits);
    h.U64(fbits);
    h.Str(v.str);
    h.U64(static_cast<uint64_t>(v.elem_type));
    h.U64(v.count);
    if (v.elems != nullptr) h.Bytes(v.elems, v.count * GgufScalarSize(v.elem_type));
    for (std::string_view s : v.strings) h.Str(s);
  }
  return h.Digest();
}

uint64_t WeightsFingerprint(Env& env, const std::string& root, const std::string& model_path, const GgufFile& gguf,
                            const ProgressFn& progress) {
  MemoKey k;
  // Keyed by the file the engine mapped: a model reached through a link (a hub snapshot's
  // `model.gguf -> ../blobs/<sha>`) is the link's target, whose size and mtime the Env reports (it never
  // follows a link itself). Repointing the link changes the key.
  std::error_code ec;
  k.path = std::filesystem::canonical(model_path, ec).string();
  if (ec) {
    ec.clear();
    k.path = std::filesystem::absolute(model_path, ec).lexically_normal().string();
    if (ec) k.path = model_path;
  }
  StatusOr<uint64_t> size = env.FileSize(k.path);
  StatusOr<int64_t> mtime = env.GetMtimeMicros(k.path);
  const bool keyed = size.ok() && mtime.ok() && *size == gguf.file_size();
  if (keyed) {
    k.size = *size;
    k.mtime = *mtime;
    uint64_t memo = 0;
    if (LookupMemo(env, root, k, &memo)) return memo;
  }
  const uint64_t hash = HashWeights(gguf, progress);
  if (keyed) StoreMemo(env, root, k, hash);
  return hash;
}

CacheIdentity ComputeCacheIdentity(Env& env, const std::string& root, const std::string& model_path,
                                   const GgufFile& gguf, const KvConfig& kv, const ProgressFn& progress) {
  CacheIdentity id;
  id.weights = WeightsFingerprint(env, root, model_path, gguf, progress);
  id.metadata = HashNumericMetadata(gguf);
  Hasher h;
  h.U64(id.weights);
  h.U64(id.metadata);
  for (int64_t v : {int64_t{kv.n_layer}, int64_t{kv.n_kv_head}, int64_t{kv.head_dim_k}, int64_t{kv.head_dim_v},
                    int64_t{kv.block_size}, int64_t(kv.dtype)}) {
    h.U64(static_cast<uint64_t>(v));
  }
  for (const LayerStateSpec& s : kv.kinds) {
    h.U64(static_cast<uint64_t>(s.kind));
    h.U64(static_cast<uint64_t>(s.window));
  }
  h.U64(kEntryFormatVersion);
  h.U64(kNumericsVersion);
  std::string arch = "model";
  if (StatusOr<std::string> a = gguf.Str("general.architecture"); a.ok() && !a->empty()) arch = *a;
  for (char& c : arch) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  }
  id.dir_name = arch + "-" + Hex64(h.Digest());
  nlohmann::ordered_json j = {{"model_path", model_path},
                              {"architecture", arch},
                              {"weights_xxh3", Hex64(id.weights)},
                              {"metadata_xxh3", Hex64(id.metadata)},
                              {"kv_dtype", KvDtypeName(kv.dtype)},
                              {"kv_block_size", kv.block_size},
                              {"n_layer", kv.n_layer},
                              {"entry_format_version", kEntryFormatVersion},
                              {"numerics_version", kNumericsVersion}};
  id.description = j.dump(2) + "\n";
  return id;
}

void WriteIdentityFile(Env& env, const std::string& root, const CacheIdentity& id) {
  const std::string dir = JoinPath(root, id.dir_name);
  if (env.CreateDirs(dir).ok()) (void)WriteFileAtomically(env, dir, "identity.json", id.description);
}

}  // namespace ember
