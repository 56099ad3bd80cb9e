#include "bench/ssd_bench.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <thread>

#include "bench/cache_bench.h"
#include "util/env_wrapper.h"
#include "session/cached_session.h"
#include "tiered/tiered_cache.h"
#include "coldtier/cold_store.h"
#include "coldtier/write_queue.h"
#include "util/stopwatch.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

double Since(const Stopwatch& t0) { return t0.ElapsedSeconds(); }

// Asks the kernel to drop the clean cached pages of every file under dir, so the next read comes from
// the device (a benchmark-only measure; a server never does this).
void DropPageCache(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    (void)::fdatasync(fd);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// PosixEnv without fsync: only for *creating* the scan benchmark's 10,000 files quickly. Never serves.
class NoSyncEnv final : public EnvWrapper {
 public:
  NoSyncEnv() : EnvWrapper(Env::Default()) {}
  class File final : public WritableFile {
   public:
    explicit File(std::unique_ptr<WritableFile> f) : f_(std::move(f)) {}
    Status Append(const void* d, size_t n) override { return f_->Append(d, n); }
    Status Sync() override { return Status::Ok(); }
    Status Close() override { return f_->Close(); }
    std::unique_ptr<WritableFile> f_;
  };
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    EMBER_ASSIGN_OR_RETURN(auto f, target()->NewWritableFile(path));
    return std::unique_ptr<WritableFile>(new File(std::move(f)));
  }
  Status SyncDir(const std::string&) override { return Status::Ok(); }
};

// A committed state of n positions (contents irrelevant to throughput: left as allocated).
StatusOr<KvState> Synthetic(const KvConfig& c, int64_t n) {
  EMBER_ASSIGN_OR_RETURN(KvState s, KvState::Create(c));
  EMBER_RETURN_IF_ERROR(s.Reserve(n));
  s.Commit(n);
  return s;
}

KvConfig BigConfig() { return KvConfig::Uniform(8, 8, 128, 128, KvDtype::kF16, 32); }  // 32 KiB per position

Status BenchRestart(Engine& engine, const SsdBenchOptions& o, SsdBenchResult* r) {
  const std::string root = o.dir + "/restart";
  const int32_t n_vocab = static_cast<int32_t>(engine.model().config().n_vocab);
  const std::vector<int32_t> prompt = SyntheticIds(o.prefix_tokens, 42, n_vocab);
  TieredCacheOptions to;
  to.ram_bytes = size_t{16} << 30;
  to.root = root;
  to.identity = "bench";
  to.kv = engine.kv_config();
  to.demote_idle_s = 0;
  {
    EMBER_ASSIGN_OR_RETURN(auto tiers, TieredCache::Open(to));
    CachedSession s(engine, tiers.get());
    EMBER_RETURN_IF_ERROR(s.Generate(BenchRequest(prompt, 1), nullptr).status());
    const Stopwatch t0;
    EMBER_RETURN_IF_ERROR(tiers->Flush());
    r->flush_s = Since(t0);
    r->entry_bytes = tiers->stats().bytes;
  }
  DropPageCache(root);
  const Stopwatch t0;
  EMBER_ASSIGN_OR_RETURN(auto tiers, TieredCache::Open(to));
  r->reopen_s = Since(t0);
  CachedSession s(engine, tiers.get());
  EMBER_ASSIGN_OR_RETURN(SessionResult warm, s.Generate(BenchRequest(prompt, 1), nullptr));
  r->prefix_tokens = o.prefix_tokens;
  r->cached_tokens = warm.cached_tokens;
  r->ttft_restore_s = warm.ttft_s;
  r->restore_s = warm.restore_ms / 1000;
  r->restart_tier = warm.tier;
  CachedSession off(engine, static_cast<PromptCache*>(nullptr));
  EMBER_ASSIGN_OR_RETURN(SessionResult cold, off.Generate(BenchRequest(prompt, 1), nullptr));
  r->ttft_recompute_s = cold.ttft_s;
  return Status::Ok();
}

Status BenchScan(const SsdBenchOptions& o, SsdBenchResult* r) {
  const std::string root = o.dir + "/scan";
  const KvConfig c = KvConfig::Uniform(2, 1, 8, 8, KvDtype::kF16, 16);
  ColdStoreOptions so{root, "bench", c, 0, true};
  {
    NoSyncEnv fast;
    EMBER_ASSIGN_OR_RETURN(auto store, ColdStore::Open(fast, so));
    EMBER_ASSIGN_OR_RETURN(KvState st, Synthetic(c, 256));
    for (int i = static_cast<int>(store->entries()); i < o.scan_entries; ++i) {
      std::vector<int32_t> tokens = SyntheticIds(256, static_cast<uint32_t>(i), 30000);
      tokens[0] = i;  // distinct first tokens: no entry is a prefix of another (nothing superseded)
      EMBER_RETURN_IF_ERROR(store->Put(i % 4 == 0 ? "tenant" : "", tokens, st));
    }
  }
  DropPageCache(root);
  Stopwatch t0;
  {
    EMBER_ASSIGN_OR_RETURN(auto cold, ColdStore::Open(*PosixEnv::Default(), so));
    r->scan_cold_s = Since(t0);
  }  // one store per directory at a time (its lock)
  t0.Reset();
  EMBER_ASSIGN_OR_RETURN(auto warm, ColdStore::Open(*PosixEnv::Default(), so));
  r->scan_warm_s = Since(t0);
  r->scan_entries = static_cast<int>(warm->entries());
  return Status::Ok();
}

// Reads path sequentially in 1 MiB pieces with plain read(2): what the disk gives, the bound a restore
// is measured against.
StatusOr<double> SequentialReadGbps(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  std::vector<uint8_t> buf(1 << 20);
  uint64_t total = 0;
  const Stopwatch t0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus("read", path, err);
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
  }
  const double s = Since(t0);
  ::close(fd);
  return static_cast<double>(total) / s / 1e9;
}

Status BenchRead(const SsdBenchOptions& o, SsdBenchResult* r) {
  const std::string root = o.dir + "/read";
  Env& env = *PosixEnv::Default();
  EMBER_RETURN_IF_ERROR(env.CreateDirs(root));
  const KvConfig c = BigConfig();
  const int64_t positions = std::max<int64_t>(1, o.read_bytes / static_cast<int64_t>(c.block_bytes() / c.block_size));
  ColdStoreOptions so{root, "bench", c, 0, true};
  std::vector<int32_t> tokens = SyntheticIds(positions, 9, 30000);
  {
    EMBER_ASSIGN_OR_RETURN(auto store, ColdStore::Open(env, so));
    EMBER_ASSIGN_OR_RETURN(KvState st, Synthetic(c, positions));
    EMBER_RETURN_IF_ERROR(store->Put("", tokens, st));
    r->read_bytes = store->bytes();
  }
  tokens.push_back(1);
  bool first = true;
  for (bool verify : {true, false}) {
    DropPageCache(root);
    so.verify_tensors = verify;
    EMBER_ASSIGN_OR_RETURN(auto store, ColdStore::Open(env, so));
    auto m = store->Find(tokens, "");
    if (!m) return Internal("ssd bench: the read entry is not indexed");
    if (first) {  // the entry file itself, read plainly from a dropped page cache: same blocks, same run
      first = false;
      EMBER_ASSIGN_OR_RETURN(r->seq_read_gbps, SequentialReadGbps(m->path));
      DropPageCache(root);
    }
    const Stopwatch t0;
    EMBER_RETURN_IF_ERROR(store->Restore(*m).status());
    (verify ? r->restore_gbps : r->restore_noverify_gbps) = static_cast<double>(m->bytes) / Since(t0) / 1e9;
  }
  return Status::Ok();
}

// A /proc/self/status figure ("VmRSS", "VmHWM") in bytes, or -1.
int64_t ProcStatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1) * 1024;
  }
  return -1;
}

// Lowers VmHWM to the current RSS (Linux >= 4.0), so the next VmHWM is the peak of what follows. Free
// heap memory is returned first: a freed state left resident in malloc's arenas would be reused unseen
// by whatever follows, hiding its allocations from the peak.
Status ResetPeakRss() {
  (void)::malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  if (!out) return Unimplemented("ssd bench: cannot reset the peak RSS (/proc/self/clear_refs)");
  return Status::Ok();
}

// Like Synthetic, but every byte written, so the state is resident before the baseline is taken.
StatusOr<KvState> Resident(const KvConfig& c, int64_t n) {
  EMBER_ASSIGN_OR_RETURN(KvState s, KvState::Create(c));
  EMBER_RETURN_IF_ERROR(s.Reserve(n));
  std::vector<float> row(static_cast<size_t>(c.n_kv_head) * static_cast<size_t>(c.head_dim_k), 0.25f);
  for (int l = 0; l < c.n_layer; ++l) {
    for (int64_t p = 0; p < n; ++p) {
      s.StoreK(l, p, row.data());
      s.StoreV(l, p, row.data());
    }
  }
  s.Commit(n);
  return s;
}

Status BenchPeak(const SsdBenchOptions& o, SsdBenchResult* r) {
  const std::string root = o.dir + "/peak";
  Env& env = *PosixEnv::Default();
  const KvConfig c = BigConfig();
  const int64_t positions = std::max<int64_t>(1, o.peak_bytes / static_cast<int64_t>(c.block_bytes() / c.block_size));
  ColdStoreOptions so{root, "bench", c, 0, true};
  std::vector<int32_t> tokens = SyntheticIds(positions, 11, 30000);
  EMBER_ASSIGN_OR_RETURN(auto store, ColdStore::Open(env, so));
  {
    EMBER_ASSIGN_OR_RETURN(KvState st, Resident(c, positions));
    EMBER_RETURN_IF_ERROR(ResetPeakRss());
    const int64_t base = ProcStatusBytes("VmRSS");
    const Stopwatch t0;
    EMBER_RETURN_IF_ERROR(store->Put("", tokens, st));
    r->peak_write_s = Since(t0);
    r->peak_write_extra = ProcStatusBytes("VmHWM") - base;
    r->peak_entry_bytes = store->bytes();
  }
  DropPageCache(root);
  tokens.push_back(1);
  auto m = store->Find(tokens, "");
  if (!m) return Internal("ssd bench: the peak entry is not indexed");
  EMBER_RETURN_IF_ERROR(ResetPeakRss());
  const int64_t base = ProcStatusBytes("VmRSS");
  const Stopwatch t0;
  EMBER_ASSIGN_OR_RETURN(KvState back, store->Restore(*m));
  r->peak_restore_s = Since(t0);
  r->peak_restore_extra = ProcStatusBytes("VmHWM") - base - static_cast<int64_t>(back.bytes());
  return Status::Ok();
}

StatusOr<double> DecodeRate(Engine& engine, const std::vector<int32_t>& prompt, int64_t n) {
  CachedSession off(engine, static_cast<PromptCache*>(nullptr));
  EMBER_ASSIGN_OR_RETURN(SessionResult r, off.Generate(BenchRequest(prompt, n), nullptr));
  return r.gen.decode_s > 0 ? static_cast<double>(r.gen.decode_tokens) / r.gen.decode_s : 0.0;
}

Status BenchDecode(Engine& engine, const SsdBenchOptions& o, SsdBenchResult* r) {
  const std::vector<int32_t> prompt = SyntheticIds(64, 5, static_cast<int32_t>(engine.model().config().n_vocab));
  EMBER_ASSIGN_OR_RETURN(double idle1, DecodeRate(engine, prompt, o.decode_tokens));
  // Keep the serial writer busy with 32 MiB spill writes (real fsyncs) for the whole generation.
  const std::string root = o.dir + "/decode";
  const KvConfig c = BigConfig();
  EMBER_ASSIGN_OR_RETURN(auto store, ColdStore::Open(*PosixEnv::Default(), ColdStoreOptions{root, "bench", c, 256ull << 20, true}));
  EMBER_ASSIGN_OR_RETURN(KvState st, Synthetic(c, 1024));
  WriteQueue queue(1ull << 30);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread pusher([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (queue.stats().queued_jobs >= 2) {
        Env::Default()->SleepForMicros(5000);
        continue;
      }
      WriteJob j;
      j.kind = "spill";
      j.bytes = st.bytes();
      j.run = [&, i] {
        std::vector<int32_t> t = SyntheticIds(1024, static_cast<uint32_t>(i), 30000);
        Status s = store->Put("", t, st);
        if (s.ok()) written += st.bytes();
        return s;
      };
      queue.Push(std::move(j));
    }
  });
  Env::Default()->SleepForMicros(200'000);  // the writer is mid-flight
  StatusOr<double> busy = [&] {
    // As CachedSession does for a request: queued writes wait (bounded by max_defer) while we decode.
    WriteQueue::Foreground fg(&queue);
    return DecodeRate(engine, prompt, o.decode_tokens);
  }();
  stop = true;
  pusher.join();
  queue.Stop();
  EMBER_RETURN_IF_ERROR(busy.status());
  EMBER_ASSIGN_OR_RETURN(double idle2, DecodeRate(engine, prompt, o.decode_tokens));
  r->decode_idle_tps = (idle1 + idle2) / 2;
  r->decode_busy_tps = *busy;
  r->busy_bytes_written = written.load();
  return Status::Ok();
}

}  // namespace

StatusOr<SsdBenchResult> RunSsdBench(Engine& engine, const SsdBenchOptions& o) {
  if (o.dir.empty()) return InvalidArgument("ssd bench: a scratch directory is required");
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  SsdBenchResult r;
  struct Phase {
    bool on;
    const char* name;
    std::function<Status()> run;
  };
  const Phase phases[] = {{o.restart, "restart", [&] { return BenchRestart(engine, o, &r); }},
                          {o.scan, "scan", [&] { return BenchScan(o, &r); }},
                          {o.read, "read", [&] { return BenchRead(o, &r); }},
                          {o.decode, "decode", [&] { return BenchDecode(engine, o, &r); }},
                          {o.peak, "peak", [&] { return BenchPeak(o, &r); }}};
  for (const Phase& p : phases) {
    if (p.on && o.progress != nullptr) o.progress->AddTotal(1);
  }
  for (const Phase& p : phases) {
    if (!p.on) continue;
    LabelBar(o.progress, p.name);
    EMBER_RETURN_IF_ERROR(p.run().WithContext(p.name));
    AdvanceBar(o.progress, p.name);
  }
  for (const char* sub : {"restart", "scan", "read", "decode", "peak"}) fs::remove_all(fs::path(o.dir) / sub, ec);
  return r;
}

void PrintSsdBench(const SsdBenchResult& r, const SsdBenchOptions& o, std::ostream& out) {
  char line[512];
  if (o.restart) {
    std::snprintf(line, sizeof line,
                  "restart: %lld-token prefix, entry %.1f MiB; flush %.3f s; reopen %.3f s; after restart cached %lld "
                  "(%s): TTFT %.3f s (restore %.3f s) vs re-prefill %.3f s (%.1fx)\n",
                  static_cast<long long>(r.prefix_tokens), r.entry_bytes / 1048576.0, r.flush_s, r.reopen_s,
                  static_cast<long long>(r.cached_tokens), r.restart_tier.c_str(), r.ttft_restore_s, r.restore_s,
                  r.ttft_recompute_s, r.ttft_restore_s > 0 ? r.ttft_recompute_s / r.ttft_restore_s : 0);
    out << line;
  }
  if (o.scan) {
    std::snprintf(line, sizeof line, "scan: %d entries: %.3f s page cache dropped, %.3f s warm\n", r.scan_entries,
                  r.scan_cold_s, r.scan_warm_s);
    out << line;
  }
  if (o.read) {
    std::snprintf(line, sizeof line,
                  "read: %.1f MiB: sequential read of the entry file %.2f GB/s; restore %.2f GB/s verified (%.0f%%), "
                  "%.2f GB/s unverified (%.0f%%)\n",
                  r.read_bytes / 1048576.0, r.seq_read_gbps, r.restore_gbps,
                  r.seq_read_gbps > 0 ? 100 * r.restore_gbps / r.seq_read_gbps : 0, r.restore_noverify_gbps,
                  r.seq_read_gbps > 0 ? 100 * r.restore_noverify_gbps / r.seq_read_gbps : 0);
    out << line;
  }
  if (o.decode) {
    std::snprintf(line, sizeof line, "decode: %.2f tok/s idle, %.2f tok/s while the write queue drains (%.1f%% slower; %.1f MiB written)\n",
                  r.decode_idle_tps, r.decode_busy_tps,
                  r.decode_idle_tps > 0 ? 100.0 * (1 - r.decode_busy_tps / r.decode_idle_tps) : 0,
                  r.busy_bytes_written / 1048576.0);
    out << line;
  }
  if (o.peak) {
    std::snprintf(line, sizeof line,
                  "peak: %.1f MiB entry: write %.3f s, peak RSS +%.1f MiB over the state; restore %.3f s, peak RSS "
                  "+%.1f MiB over the restored state\n",
                  r.peak_entry_bytes / 1048576.0, r.peak_write_s, r.peak_write_extra / 1048576.0, r.peak_restore_s,
                  r.peak_restore_extra / 1048576.0);
    out << line;
  }
}

}  // namespace ember
