#include "tiered/tiered_cache.h"

#include <algorithm>
#include <cstdio>

#include "cache/kv_entry_state.h"

namespace ember {
namespace {

std::string PendingKey(const std::string& ns, std::span<const int32_t> tokens) {
  std::string key = ns;
  key.push_back('\0');  // a (harmless) collision would only merge two debounces: Pending keeps both fields
  key.append(reinterpret_cast<const char*>(tokens.data()), tokens.size_bytes());
  return key;
}

// Exponentially weighted: recent measurements dominate, one outlier does not.
double Ewma(double old, double sample) { return old <= 0 ? sample : 0.7 * old + 0.3 * sample; }

}  // namespace

void MsHistogram::Observe(double ms) {
  size_t i = 0;
  while (i < bounds.size() && ms > bounds[i]) ++i;
  if (i < counts.size()) ++counts[i];
  ++count;
  sum += ms;
}

TieredCache::TieredCache(TieredCacheOptions options) : opts_(std::move(options)) {
  env_ = opts_.env != nullptr ? opts_.env : Env::Default();
  st_.restore_ms.bounds = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
  st_.restore_ms.counts.assign(st_.restore_ms.bounds.size(), 0);
  st_.cold_enabled = !opts_.root.empty();  // Open fails (and drops this object) if the store does not open
}

StatusOr<std::unique_ptr<TieredCache>> TieredCache::Open(TieredCacheOptions options) {
  std::unique_ptr<TieredCache> t(new TieredCache(std::move(options)));
  const bool cold = !t->opts_.root.empty();
  PromptCacheOptions ram;
  ram.capacity_bytes = t->opts_.ram_bytes;
  ram.env = t->env_;
  TieredCache* self = t.get();
  if (cold) ram.spill = [self](std::shared_ptr<const CacheEntry> e) { self->Spill(std::move(e)); };
  t->ram_ = std::make_unique<PromptCache>(std::move(ram));
  if (!cold) return t;
  ColdStoreOptions so;
  so.root = t->opts_.root;
  so.identity = t->opts_.identity;
  so.kv = t->opts_.kv;
  so.cap_bytes = t->opts_.disk_cap_bytes;
  so.verify_tensors = t->opts_.verify_tensors;
  EMBER_ASSIGN_OR_RETURN(t->store_, ColdStore::Open(*t->env_, std::move(so)));
  t->queue_ = std::make_unique<WriteQueue>(t->opts_.queue_cap_bytes,
                                           static_cast<int64_t>(std::max(0.0, t->opts_.queue_max_defer_s) * 1e6), t->env_);
  if (t->opts_.background) t->maint_ = std::thread([self] { self->Maintain(); });
  return t;
}

TieredCache::~TieredCache() {
  {
    MutexLock lock(&maint_mu_);
    stopping_ = true;
  }
  maint_cv_.SignalAll();
  if (maint_.joinable()) maint_.join();
  if (queue_) queue_->Stop();  // jobs reference this object: none may run past here
}

int64_t TieredCache::Now() const { return env_->MonotonicMicros(); }

void TieredCache::Maintain() {
  for (;;) {
    {
      MutexLock lock(&maint_mu_);
      const int64_t deadline = env_->MonotonicMicros() + 100'000;  // a pass every 100 ms
      while (!stopping_ && !env_->WaitUntil(&maint_cv_, &maint_mu_, deadline)) {
      }
      if (stopping_) return;
    }
    Tick();
  }
}

ColdLookup TieredCache::LookupCold(std::span<const int32_t> prompt, const std::string& ns, int64_t ram_p) {
  ColdLookup out;
  if (!store_) return out;
  double read_bw = 0, prefill_tps = 0;
  {
    MutexLock lock(&mu_);
    read_bw = st_.read_bytes_per_s;
    prefill_tps = st_.prefill_tokens_per_s;
  }
  ReleasableMutexLock store_lock(&store_mu_);
  std::optional<ColdMatch> m = store_->Find(prompt, ns, ram_p);
  if (!m) return out;
  // Restore or recompute (§4.10): both estimates need a measurement; until then restore, which also
  // takes the first bandwidth measurement.
  const double restore_s = read_bw > 0 ? static_cast<double>(m->bytes) / read_bw : 0;
  const double recompute_s = prefill_tps > 0 ? static_cast<double>(m->usable - ram_p) / prefill_tps : 0;
  if (read_bw > 0 && prefill_tps > 0 && recompute_s < restore_s) {
    store_lock.Release();
    MutexLock lock(&mu_);
    ++st_.recompute_chosen;
    out.decision = "recompute";
    return out;
  }
  const int64_t t0 = Now();
  StatusOr<KvState> state = store_->Restore(*m);
  store_lock.Release();
  const double secs = static_cast<double>(Now() - t0) / 1e6;
  MutexLock lock(&mu_);
  ++st_.restore_chosen;
  if (!state.ok()) {
    // The store already deleted the file and counted it; the request goes on without it.
    std::fprintf(stderr, "ember: warning: ssd cache restore failed (file deleted): %s\n",
                 state.status().ToString().c_str());
    out.decision = "failed";
    return out;
  }
  out.p = m->usable;
  out.state = std::move(state).value();
  out.decision = "restore";
  out.restore_ms = secs * 1000;
  st_.restore_ms.Observe(out.restore_ms);
  st_.tokens_served += static_cast<uint64_t>(out.p);
  if (secs > 0) st_.read_bytes_per_s = Ewma(st_.read_bytes_per_s, static_cast<double>(m->bytes) / secs);
  return out;
}

Status TieredCache::Insert(std::vector<int32_t> tokens, std::unique_ptr<EntryState> state, const std::string& ns) {
  std::vector<int32_t> key_tokens;
  const bool behind = store_ && opts_.write_behind_s >= 0 && ram_->enabled();
  if (behind) key_tokens = tokens;
  EMBER_RETURN_IF_ERROR(ram_->Insert(std::move(tokens), std::move(state), ns));
  if (!behind) return Status::Ok();
  const int64_t due = Now() + static_cast<int64_t>(opts_.write_behind_s * 1e6);
  MutexLock lock(&mu_);
  std::string key = PendingKey(ns, key_tokens);
  pending_[std::move(key)] = Pending{std::move(key_tokens), ns, due};  // a re-insert restarts the debounce
  return Status::Ok();
}

void TieredCache::NotePrefill(int64_t tokens, double seconds) {
  MutexLock lock(&mu_);
  st_.tokens_recomputed += static_cast<uint64_t>(std::max<int64_t>(tokens, 0));
  // Short prefills are dominated by fixed per-call costs and would understate the rate.
  if (tokens >= 32 && seconds > 0) st_.prefill_tokens_per_s = Ewma(st_.prefill_tokens_per_s, tokens / seconds);
}

Status TieredCache::Persist(const CacheEntry& e) {
  const auto* kv = dynamic_cast<const KvEntryState*>(e.state.get());
  if (kv == nullptr) return InvalidArgument("ssd cache: only KV states can be written");
  bool durable;
  {
    MutexLock lock(&store_mu_);
    durable = store_->Contains(e.ns, e.tokens);
  }
  if (durable) {  // same tokens, same namespace, same identity: the file holds these very bytes
    MutexLock lock(&mu_);
    ++st_.already_durable;
    return Status::Ok();
  }
  StatusOr<StagedEntry> staged = StoreForStage().Stage(e.ns, e.tokens, kv->kv());  // the slow part, unlocked
  Status st;
  {
    MutexLock lock(&store_mu_);
    if (staged.ok()) {
      st = store_->Commit(std::move(staged).value());
    } else {
      store_->NoteStageFailure(e.ns, e.tokens, staged.status());
      st = staged.status();
    }
  }
  if (!st.ok()) {
    MutexLock lock(&mu_);
    // Disk full repeats on every write: log the first failure and then every 100th.
    if (failure_logs_++ % 100 == 0) {
      std::fprintf(stderr, "ember: warning: ssd cache write failed (serving continues): %s\n", st.ToString().c_str());
    }
  }
  return st;
}

void TieredCache::Spill(std::shared_ptr<const CacheEntry> e) {
  {
    MutexLock lock(&mu_);
    ++st_.spills_queued;
  }
  WriteJob job;
  job.kind = "spill";
  job.bytes = e->bytes;
  job.run = [this, e] { return Persist(*e); };
  queue_->Push(std::move(job));
}

void TieredCache::QueueWriteBehinds(bool all) {
  std::vector<Pending> due;
  {
    const int64_t now = Now();
    MutexLock lock(&mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (all || it->second.due_us <= now) {
        due.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Pending& p : due) {
    std::shared_ptr<const CacheEntry> e = ram_->FindExact(p.tokens, p.ns);
    if (!e) continue;  // superseded, replaced or evicted (an eviction spills it anyway)
    {
      MutexLock lock(&mu_);
      ++st_.write_behind_queued;
    }
    WriteJob job;
    job.kind = "write_behind";
    job.bytes = 0;  // the entry is still in RAM: queueing it holds no extra memory
    job.run = [this, e] { return Persist(*e); };
    queue_->Push(std::move(job));
  }
}

void TieredCache::Tick() {
  if (!store_) return;
  QueueWriteBehinds(false);
  if (opts_.demote_idle_s <= 0) return;
  const int64_t cutoff = Now() - static_cast<int64_t>(opts_.demote_idle_s * 1e6);
  for (const std::shared_ptr<const CacheEntry>& e : ram_->IdleSince(cutoff)) {
    bool durable;
    {
      MutexLock lock(&store_mu_);
      durable = store_->Contains(e->ns, e->tokens);
    }
    if (durable) {
      if (ram_->Remove(e.get(), cutoff)) {
        MutexLock lock(&mu_);
        ++st_.demotions;
      }
      continue;
    }
    {
      MutexLock lock(&mu_);
      if (!demoting_.insert(e.get()).second) continue;  // its write is already queued
    }
    WriteJob job;
    job.kind = "demote";
    job.bytes = 0;  // still in RAM until durable
    job.run = [this, e] { return Persist(*e); };
    job.done = [this, e, cutoff](const Status& st) {
      // Leaves RAM only once durable, and only if nobody used it since it was found idle.
      const bool removed = st.ok() && ram_->Remove(e.get(), cutoff);
      MutexLock lock(&mu_);
      demoting_.erase(e.get());
      if (removed) ++st_.demotions;
    };
    queue_->Push(std::move(job));
  }
}

Status TieredCache::WriteNow(const std::shared_ptr<const CacheEntry>& victim) {
  {
    MutexLock lock(&store_mu_);
    if (store_->Contains(victim->ns, victim->tokens)) return Status::Ok();
  }
  auto result = std::make_shared<Status>();
  WriteJob job;
  job.kind = "relief";
  job.urgent = true;
  job.run = [this, victim] { return Persist(*victim); };
  job.done = [result](const Status& st) { *result = st; };
  const uint64_t ticket = queue_->Push(std::move(job));
  queue_->WaitFor(ticket);
  MutexLock lock(&mu_);
  if (!result->ok()) {
    ++st_.relief_failures;
    return *result;
  }
  ++st_.relief_writes;
  return Status::Ok();
}

Status TieredCache::RelieveFor(uint64_t incoming_bytes) {
  if (!store_ || !opts_.relieve_pressure || !ram_->enabled()) return Status::Ok();
  std::set<const CacheEntry*> tried;  // an entry whose removal freed nothing shared is not retried
  for (;;) {
    const PromptCacheStats s = ram_->stats();
    if (s.bytes + incoming_bytes <= s.capacity) return Status::Ok();
    std::shared_ptr<const CacheEntry> victim;
    for (const auto& e : ram_->EntriesByRecency()) {
      if (!tried.count(e.get())) {
        victim = e;
        break;
      }
    }
    if (!victim) return Status::Ok();  // nothing left to free
    tried.insert(victim.get());
    EMBER_RETURN_IF_ERROR(WriteNow(victim));  // the entry stays resident; relief stops
    if (ram_->Remove(victim.get())) {
      MutexLock lock(&mu_);
      ++st_.relief_freed;
    }
  }
}

uint64_t TieredCache::ShrinkTo(uint64_t target_bytes) {
  std::set<const CacheEntry*> tried;
  for (;;) {
    const uint64_t bytes = ram_->stats().bytes;
    if (bytes <= target_bytes) return bytes;
    std::shared_ptr<const CacheEntry> victim;
    for (const auto& e : ram_->EntriesByRecency()) {
      if (!tried.count(e.get())) {
        victim = e;
        break;
      }
    }
    if (!victim) return bytes;
    tried.insert(victim.get());
    if (store_) (void)WriteNow(victim);  // a failed write is counted; the entry goes anyway
    if (ram_->Remove(victim.get())) {
      MutexLock lock(&mu_);
      ++st_.shrink_freed;
    }
  }
}

Status TieredCache::Flush(int64_t deadline_us) {
  if (!store_) return Status::Ok();
  const WriteQueueStats before = queue_->stats();
  QueueWriteBehinds(true);
  if (!queue_->WaitFor(queue_->last_ticket(), deadline_us)) {
    return FailedPrecondition("ssd cache flush: writes still queued at the deadline");
  }
  const WriteQueueStats after = queue_->stats();
  const uint64_t lost = (after.failed - before.failed) + (after.dropped - before.dropped);
  if (lost > 0) return IoError("ssd cache flush: " + std::to_string(lost) + " queued writes failed or were dropped");
  MutexLock lock(&mu_);
  st_.last_flush_unix_s = static_cast<double>(env_->WallMicros()) / 1e6;
  return Status::Ok();
}

TieredStats TieredCache::stats() const {
  TieredStats s;
  {
    MutexLock lock(&mu_);
    s = st_;
  }
  if (!store_) return s;
  s.queue = queue_->stats();
  MutexLock lock(&store_mu_);
  s.store = store_->counters();
  s.entries = store_->entries();
  s.bytes = store_->bytes();
  s.cap = store_->cap_bytes();
  return s;
}

}  // namespace ember
