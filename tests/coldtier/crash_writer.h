// The kill -9 harness of the cold tier (docs/cache-spec.md §7: "kill -9 during a write: no corrupt entry is
// ever served"). RunCrashWriter is the victim: it writes entries into a real directory through the real Env
// forever, with contents that are a pure function of the tokens, so after the process is killed at a
// random instant VerifyCrashDir can check, from the files alone, that
//   * the startup scan found no corrupt file (an atomic write never leaves a readable half entry),
//   * no temp file survives the scan and every entry file on disk is indexed (index == files),
//   * every indexed entry restores with verified checksums to exactly the expected bytes.
// A test aid, not product code: it is built into ember_coldtier_tests (crash_loop_test.cc: fork + SIGKILL,
// 200 rounds) and into the test tool `ember_crash_writer` (crash_writer_main.cc), which
// scripts/cache-crash-loop kills 1,000 times; the shipped `ember` binary links none of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/env.h"
#include "kv/kv_state.h"
#include "util/status.h"

namespace ember {

inline constexpr const char* kCrashIdentity = "crash-writer";

// The geometry the harness writes (a few KiB per position, so a write spans many syscalls).
KvConfig CrashWriterConfig();
// The state an entry with these tokens must hold: position p's values depend on (tokens[p], p) only, so
// a prefix of an entry is the entry of the prefix.
KvState CrashWriterState(const std::vector<int32_t>& tokens);

// Writes entries into <dir>/crash-writer/ forever (returns only on a setup error). Token lists come from
// a small family, so dedup, supersede and the byte cap all happen.
Status RunCrashWriter(const std::string& dir, uint64_t seed, uint64_t cap_bytes);

struct CrashCheck {
  uint64_t entries = 0;          // indexed after the scan
  uint64_t temp_deleted = 0;     // leftover temp files the scan removed (expected after a kill)
  uint64_t corrupt_deleted = 0;  // must be 0
};
// Opens the directory as a restarting server would and checks everything listed above.
StatusOr<CrashCheck> VerifyCrashDir(Env& env, const std::string& dir, uint64_t cap_bytes);

}  // namespace ember
