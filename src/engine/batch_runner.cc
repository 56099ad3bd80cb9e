// The step thread of engine/batch_runner.h: admits queued jobs into its StepLoop under the admission
// rule, turns the loop, and hands finished jobs back to their Run() calls.
#include "engine/batch_runner.h"

#include <algorithm>

#include "engine/drafter.h"
#include "grammar/mask_budget.h"

namespace ember {

struct BatchRunner::Active {
  std::shared_ptr<GenSequence> gen;
  uint64_t id = 0;          // arrival order (the queue's)
  bool released = false;    // Run() may return (guarded by mu_)
  bool memory_blocked = false;  // refused for memory at the queue's head (guarded by mu_)
};

BatchRunner::BatchRunner(Engine& engine, BatchRunnerOptions options)
    : engine_(engine), opts_(std::move(options)), env_(opts_.env != nullptr ? opts_.env : Env::Default()) {
  opts_.max_seqs = std::max(1, opts_.max_seqs);
  opts_.step_tokens = std::max<int64_t>(1, opts_.step_tokens);
  opts_.draft_rows_per_step = std::max(0, opts_.draft_rows_per_step);
  opts_.kv_budget_bytes = std::max<int64_t>(0, opts_.kv_budget_bytes);
  opts_.memory_poll_micros = std::max<int64_t>(1000, opts_.memory_poll_micros);
  st_.max_seqs = opts_.max_seqs;
  thread_ = std::thread([this] { Loop(); });
}

BatchRunner::~BatchRunner() { Shutdown(); }

void BatchRunner::Shutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

BatchRunnerStats BatchRunner::stats() const {
  MutexLock lock(&mu_);
  BatchRunnerStats s = st_;
  s.waiting = static_cast<int>(waiting_.size());
  if (waiting_.empty()) s.waiting_for_memory = 0;  // the head it counted was cancelled
  return s;
}

int64_t BatchRunner::OutsideBytes() const { return opts_.kv_outside_bytes ? opts_.kv_outside_bytes() : 0; }

int64_t BatchRunner::OutsideRoomLocked(int64_t kv_bytes) const {
  return opts_.kv_budget_bytes - st_.kv_reserved_bytes - kv_bytes;
}

StatusOr<BatchJobResult> BatchRunner::Run(BatchJob job) {
  EMBER_RETURN_IF_ERROR(ValidateJob(job));
  if (opts_.kv_budget_bytes > 0 && job.kv_bytes > opts_.kv_budget_bytes) {
    return ResourceExhausted("batch: the job reserves " + std::to_string(job.kv_bytes) +
                             " bytes of KV, more than the whole budget (" + std::to_string(opts_.kv_budget_bytes) + ")");
  }
  auto a = std::make_shared<Active>();
  a->gen = std::make_shared<GenSequence>(std::move(job), env_);
  const BatchJob& j = a->gen->job();
  if (opts_.kv_budget_bytes > 0 && j.make_room) {  // room first, so a fitting job is admitted at once
    int64_t room = 0;
    {
      MutexLock lock(&mu_);
      room = OutsideRoomLocked(j.kv_bytes);
    }
    if (room >= 0 && OutsideBytes() > room) j.make_room(room);
  }
  MutexLock lock(&mu_);
  if (stopping_) return FailedPrecondition("batch: the runner is shutting down");
  a->id = next_id_++;
  waiting_.push_back(a);
  cv_.SignalAll();
  AwaitRelease(a);
  if (!a->gen->status().ok()) return a->gen->status();
  return std::move(a->gen->result());
}

void BatchRunner::AwaitRelease(const std::shared_ptr<Active>& a) {
  while (!a->released) {
    auto queued = std::find(waiting_.begin(), waiting_.end(), a);
    if (queued == waiting_.end()) {  // holding a slot: the step thread releases it
      cv_.Wait(&mu_);
      continue;
    }
    if (a->gen->cancel_requested()) {  // left while queued: nothing ran, nothing to release
      waiting_.erase(queued);
      a->gen->Cancel();
      a->released = true;
      ++st_.cancelled;
      cv_.SignalAll();  // the next job may be the head now
      return;
    }
    const BatchJob& j = a->gen->job();
    const int64_t room = OutsideRoomLocked(j.kv_bytes);
    if (a->memory_blocked && j.make_room && room >= 0) {
      // Unlocked: shrinking the cache may write to disk; the step thread admits meanwhile.
      mu_.Unlock();
      j.make_room(room);
      mu_.Lock();
      cv_.SignalAll();  // the step thread retries the admission
    }
    (void)env_->WaitUntil(&cv_, &mu_, env_->MonotonicMicros() + opts_.memory_poll_micros);
  }
}

std::vector<std::shared_ptr<BatchRunner::Active>> BatchRunner::AdmitLocked(int running, int64_t outside) {
  std::vector<QueuedSeq> queue;
  for (const auto& w : waiting_) queue.push_back({w->id, w->gen->job().kv_bytes});
  StepBudget budget;
  budget.max_seqs = opts_.max_seqs;
  if (opts_.kv_budget_bytes > 0) budget.kv_free_bytes = opts_.kv_budget_bytes - st_.kv_reserved_bytes - outside;
  const QueueAdmission adm = AdmitFromQueue(queue, running, budget);
  std::vector<std::shared_ptr<Active>> admitted(waiting_.begin(), waiting_.begin() + static_cast<long>(adm.admitted.size()));
  waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<long>(adm.admitted.size()));
  for (const auto& x : admitted) {
    if (x->gen->job().kv_bytes <= 0) continue;
    ++st_.kv_admitted;
    ++st_.kv_reservations;
  }
  st_.kv_reserved_bytes += adm.kv_bytes;
  running_.insert(running_.end(), admitted.begin(), admitted.end());
  st_.waiting_for_memory = adm.head_blocked_by_memory ? 1 : 0;
  if (adm.head_blocked_by_memory && !waiting_.front()->memory_blocked) {
    waiting_.front()->memory_blocked = true;
    ++st_.admission_waits;
  }
  return admitted;
}

void BatchRunner::NoteTurnLocked(const StepLoop& loop, const std::vector<std::shared_ptr<GenSequence>>& released) {
  for (const auto& g : released) {
    if (!g->status().ok()) {
      ++st_.failed;
    } else if (g->result().gen.stop == StopReason::kCancelled) {
      ++st_.cancelled;
    } else {
      ++st_.completed;
    }
    st_.shared_tokens += static_cast<uint64_t>(g->result().shared_tokens);
    st_.kv_reserved_bytes -= g->job().kv_bytes;
    if (g->job().kv_bytes > 0) --st_.kv_reservations;
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& a) { return a->gen == g; });
    if (it != running_.end()) {
      (*it)->released = true;
      running_.erase(it);
    }
  }
  const StepCounters& c = loop.counters();
  st_.steps = c.steps;
  st_.step_rows = c.step_rows;
  st_.decode_rows = c.decode_rows;
  st_.prompt_rows = c.prompt_rows;
  st_.draft_rows = c.draft_rows;
  st_.draft_accepted = c.draft_accepted;
  st_.mask_waits = c.mask_waits;
  st_.occupancy_sum = c.occupancy_sum;
  st_.step_seconds = c.step_seconds;
  st_.last_step_ms = c.last_step_ms;
  st_.last_predicted_ms = c.last_predicted_ms;
  int pre = 0, dec = 0;
  for (const auto& a : loop.active()) (a->decoding() ? dec : pre)++;
  st_.running = static_cast<int>(loop.active().size());
  st_.prefilling = pre;
  st_.decoding = dec;
}

void BatchRunner::Loop() {
  StepLoopOptions so;
  so.max_seqs = opts_.max_seqs;
  so.step_tokens = opts_.step_tokens;
  so.prefill_rows = std::max(opts_.step_tokens, engine_.options().ubatch);
  so.step_ms = opts_.step_ms;
  so.draft_rows_per_step = opts_.draft_rows_per_step;
  so.mask_step_work = grammar::kMaskStepWork;
  so.env = env_;
  StepLoop loop(engine_, so);
  while (true) {
    const int64_t outside = OutsideBytes();  // before the lock: it may take the cache's
    std::vector<std::shared_ptr<Active>> admitted;
    {
      MutexLock lock(&mu_);
      if (loop.empty() && waiting_.empty() && stopping_) return;
      admitted = AdmitLocked(static_cast<int>(loop.active().size()), outside);
      if (loop.empty() && admitted.empty()) {
        // Idle, or the head waits for memory: an arrival, a cancellation, a lane that made room (each
        // signals) or stopping wakes it, and the budget is read again.
        cv_.Wait(&mu_);
        continue;
      }
    }
    for (auto& a : admitted) loop.Add(a->gen);
    const std::vector<std::shared_ptr<GenSequence>> released = loop.Turn();
    MutexLock lock(&mu_);
    NoteTurnLocked(loop, released);
    if (!released.empty()) cv_.SignalAll();
  }
}

}  // namespace ember
