// The cold tier's identity directory name (docs/cache-spec.md §4.2): a hash of everything that changes the
// numbers a cached KV state holds, so a server only ever reads entries its own model would compute.
//
//   weights    XXH3-64 of every tensor's name, type, shape and data bytes. The whole data section is
//              hashed — no sampling — because two fine-tunes of one base may differ in a few rows of one
//              tensor and a sampled fingerprint could miss that. It costs one pass over the file
//              (about memory bandwidth when the file is in the page cache), so the result is memoized in
//              <root>/weights-fingerprints keyed by (absolute path, size, mtime): later starts pay
//              nothing. A rewritten file changes size or mtime and is hashed again.
//   metadata   every GGUF metadata key/value except ones that cannot change the numbers for given
//              tokens: general.* naming keys (general.architecture is kept) and the chat template
//              (which changes tokens, and tokens are in every entry's key). This covers the tokenizer
//              (vocabulary, merges, special ids) and every hyperparameter (rope base, eps, ...).
//   kv         the KV geometry, dtype and block size the engine uses.
//   versions   the entry format version and kNumericsVersion.
//
// Thread-safety: pure functions over an Env.
#pragma once

#include <cstdint>
#include <string>

#include "util/env.h"
#include "format/gguf.h"
#include "kv/kv_state.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember {

// Bump whenever a kernel or forward-pass change alters any bit of computed K/V (or logits from a
// restored state): entries written by an older build then live in another identity directory.
inline constexpr uint32_t kNumericsVersion = 2;  // 2: softmax sums in ggml's grouped order

// XXH3-64 of the tensor table and all tensor data of `gguf` (no memo). `progress` (optional) gets the
// data bytes hashed so far of the total, per 64 MiB; the digest does not depend on it.
uint64_t HashWeights(const GgufFile& gguf, const ProgressFn& progress = {});
// XXH3-64 of the metadata that can change the numbers (see above).
uint64_t HashNumericMetadata(const GgufFile& gguf);

// HashWeights, memoized under <root>/weights-fingerprints (through env). A memo that cannot be read or
// written, is over 1 MiB, or has lines that do not parse (damaged, hostile) is ignored line by line and
// the hash recomputed; nothing in it can throw or stop the process. It is an optimisation, trusted only
// as far as the cache directory is (coldtier/private_dir.h: callers check <root> first).
// `progress` is called only when the hash is computed (not for a memo hit).
uint64_t WeightsFingerprint(Env& env, const std::string& root, const std::string& model_path, const GgufFile& gguf,
                            const ProgressFn& progress = {});

struct CacheIdentity {
  std::string dir_name;     // "<arch>-<16 hex digits>": one path component
  uint64_t weights = 0;
  uint64_t metadata = 0;
  std::string description;  // JSON text written to <root>/<dir_name>/identity.json (for `ember cache ls`)
};

CacheIdentity ComputeCacheIdentity(Env& env, const std::string& root, const std::string& model_path,
                                   const GgufFile& gguf, const KvConfig& kv, const ProgressFn& progress = {});

// Writes identity.json into <root>/<dir_name> atomically (best effort: it is documentation).
void WriteIdentityFile(Env& env, const std::string& root, const CacheIdentity& id);

}  // namespace ember
