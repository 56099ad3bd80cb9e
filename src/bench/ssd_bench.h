// `ember bench-ssd`: measurements of the SSD cold tier (not tests: numbers to read, machine-dependent).
//
//   restart   an N-token prefix is cached and flushed, the tier is closed (its files dropped from the page
//             cache with posix_fadvise), reopened, and the same prompt is answered: TTFT with the restore
//             vs TTFT re-prefilling it from scratch.
//   scan      startup scan (ColdStore::Open) of `scan_entries` entry files, page cache warm and dropped.
//   read      restore throughput of one large entry vs a plain sequential read(2) of that same entry file,
//             each from a dropped page cache.
//   decode    decode rate of a generation with the write queue idle vs while it drains spill writes.
//   peak      peak resident memory (VmHWM) above what is resident anyway while one `peak_bytes` entry is
//             written and while it is restored, i.e. the serializer's own buffers (not in the default set:
//             it needs ~3x peak_bytes of RAM and disk).
//
// Thread-safety: runs on the calling thread (plus the cold tier's writer); nothing else should use the
// engine meanwhile.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "engine/engine.h"
#include "util/progress.h"
#include "util/status.h"

namespace ember {

struct SsdBenchOptions {
  std::string dir;               // scratch directory (created; entries written under it are removed)
  int64_t prefix_tokens = 8192;  // restart benchmark prompt length
  int scan_entries = 10000;
  int64_t read_bytes = 256ll << 20;  // size of the read benchmark's entry and plain file
  int64_t decode_tokens = 64;
  int64_t peak_bytes = 1ll << 30;  // size of the peak benchmark's entry
  bool restart = true, scan = true, read = true, decode = true, peak = false;
  ProgressBar* progress = nullptr;  // optional: one unit per measurement
};

struct SsdBenchResult {
  // restart
  int64_t prefix_tokens = 0, cached_tokens = 0;
  uint64_t entry_bytes = 0;
  double flush_s = 0, reopen_s = 0, ttft_restore_s = 0, restore_s = 0, ttft_recompute_s = 0;
  std::string restart_tier;
  // scan
  int scan_entries = 0;
  double scan_warm_s = 0, scan_cold_s = 0;
  // read
  uint64_t read_bytes = 0;
  double seq_read_gbps = 0, restore_gbps = 0, restore_noverify_gbps = 0;
  // decode
  double decode_idle_tps = 0, decode_busy_tps = 0;
  uint64_t busy_bytes_written = 0;
  // peak: resident bytes above the baseline (the state being written / the state restored excluded)
  uint64_t peak_entry_bytes = 0;
  double peak_write_s = 0, peak_restore_s = 0;
  int64_t peak_write_extra = 0, peak_restore_extra = 0;
};

StatusOr<SsdBenchResult> RunSsdBench(Engine& engine, const SsdBenchOptions& options);
void PrintSsdBench(const SsdBenchResult& r, const SsdBenchOptions& options, std::ostream& out);

}  // namespace ember
