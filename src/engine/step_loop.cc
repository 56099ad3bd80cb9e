#include "engine/step_loop.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <unordered_map>

namespace ember {

namespace {

int64_t CommonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

}  // namespace

StepLoop::StepLoop(Engine& engine, StepLoopOptions options)
    : engine_(engine), opts_(std::move(options)), env_(opts_.env != nullptr ? opts_.env : Env::Default()) {
  opts_.max_seqs = std::max(1, opts_.max_seqs);
  opts_.step_tokens = std::max<int64_t>(1, opts_.step_tokens);
  opts_.prefill_rows = std::max(opts_.prefill_rows, opts_.step_tokens);
  opts_.draft_rows_per_step = std::max(0, opts_.draft_rows_per_step);
}

void StepLoop::Add(std::shared_ptr<GenSequence> s) {
  s->Begin(engine_, next_order_++, opts_.draft_rows_per_step > 0);
  active_.push_back(std::move(s));
}

std::vector<std::shared_ptr<GenSequence>> StepLoop::Turn() {
  for (auto& a : active_) {
    if (!a->finished() && a->cancel_requested()) a->Cancel();
  }
  ShareInFlight();  // before any finished sequence is released: its state may be viewed
  std::vector<std::shared_ptr<GenSequence>> released = ReleaseFinished();
  if (active_.empty()) return released;
  const std::vector<PlannedSeq> described = Describe();
  StepBudget budget;
  budget.max_seqs = opts_.max_seqs;
  budget.max_rows = opts_.step_tokens;
  budget.max_prefill_rows = opts_.prefill_rows;
  budget.target_ms = opts_.step_ms;
  budget.min_prompt_rows = opts_.min_prompt_rows;
  const StepPlan plan = PlanStep(described, budget, cost_);
  // An empty plan: everyone left waits on a donor that finished or failed this turn (the next sharing
  // pass lets them compute), or sits out for a mask that the next turn works on further.
  if (!plan.slices.empty()) RunStep(plan);
  return released;
}

// A prefilling sequence adopts the longest prefix an earlier sequence of its share_key holds, and
// notes the earlier one (if any) that is still prefilling more of that prefix: it waits for it.
void StepLoop::ShareInFlight() {
  waits_.clear();
  share_cuts_.clear();
  for (auto& jp : active_) {
    GenSequence& j = *jp;
    if (j.finished() || j.decoding() || j.job().share_key.empty()) continue;
    const std::span<const int32_t> want = j.job().prompt.first(static_cast<size_t>(j.prompt_len() - 1));
    int64_t best = j.seq().n_pos(), will_reach = best;
    const GenSequence* donor = nullptr;
    uint64_t wait_on = 0;
    for (auto& lp : active_) {
      const GenSequence& l = *lp;
      if (l.order() >= j.order() || l.job().share_key != j.job().share_key || !l.status().ok()) continue;
      const KvState& lkv = l.seq().kv();
      const int64_t held = std::min(CommonPrefix(want, l.seq().tokens()), lkv.n_pos());
      if (held > best && lkv.CanTrimTo(held)) {
        best = held;
        donor = &l;
      }
      if (!l.finished() && !l.decoding()) {
        const int64_t reach = CommonPrefix(want, l.job().prompt);
        if (reach > will_reach) {
          will_reach = reach;
          wait_on = l.order();
        }
      }
    }
    if (donor != nullptr) {
      j.Guarded([&] {
        StatusOr<KvState> view = donor->seq().kv().View(best);
        if (!view.ok()) return;  // not shareable after all: compute it
        const int64_t before = j.seq().n_pos();
        Status st = j.seq().Adopt(std::move(*view), {want.begin(), want.begin() + best});
        if (!st.ok()) return j.Fail(std::move(st));
        j.result().shared_tokens += best - before;
      });
    }
    if (!j.finished() && will_reach > j.seq().n_pos()) {
      waits_[j.order()] = wait_on;
      if (j.seq().kv().config().has_recurrent()) {  // the donor must stop exactly there to be viewable
        auto [it, fresh] = share_cuts_.emplace(wait_on, will_reach);
        if (!fresh) it->second = std::min(it->second, will_reach);
      }
    }
  }
}

std::vector<std::shared_ptr<GenSequence>> StepLoop::ReleaseFinished() {
  std::vector<std::shared_ptr<GenSequence>> out;
  for (auto& a : active_) {
    if (!a->finished()) continue;
    a->Release();
    out.push_back(a);
  }
  if (!out.empty()) {
    active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& a) { return a->finished(); }),
                  active_.end());
  }
  return out;
}

// The planner's view of each sequence. Decoding ones work toward their next mask and, when it is ready,
// draft (in admission order while the step's draft rows last); prefilling ones work toward the mask of
// their first sample, which their last prompt row needs.
std::vector<PlannedSeq> StepLoop::Describe() {
  std::vector<PlannedSeq> out;
  int draft_room = opts_.draft_rows_per_step;
  const int64_t n_ctx = engine_.options().n_ctx;
  for (auto& a : active_) {
    if (a->finished()) continue;
    PlannedSeq p;
    p.id = a->order();
    p.n_pos = a->seq().n_pos();
    p.decoding = a->decoding();
    p.mask_ready = a->MaskReady(opts_.mask_step_work);
    if (a->finished()) continue;  // the mask budget is spent: released next turn
    if (!p.mask_ready) ++counters_.mask_waits;
    if (p.decoding) {
      if (p.mask_ready) {
        a->BuildDecodeSlice(draft_room, n_ctx);
        if (a->finished()) continue;
        draft_room -= static_cast<int>(a->draft_rows());
      }
      p.decode_rows = static_cast<int64_t>(a->decode_tokens().size());
    } else {
      p.prompt_left = a->prompt_len() - p.n_pos;
      p.cut_rows = a->RowsToCheckpoint();
      if (auto c = share_cuts_.find(p.id); c != share_cuts_.end() && c->second > p.n_pos) {
        p.cut_rows = p.cut_rows > 0 ? std::min(p.cut_rows, c->second - p.n_pos) : c->second - p.n_pos;
      }
      if (auto w = waits_.find(p.id); w != waits_.end()) {
        p.waits = true;
        p.waits_for = w->second;
      }
    }
    out.push_back(p);
  }
  return out;
}

void StepLoop::RunStep(const StepPlan& plan) {
  std::unordered_map<uint64_t, GenSequence*> by_id;
  for (auto& a : active_) by_id[a->order()] = a.get();
  std::vector<StepSlice> slices;
  std::vector<GenSequence*> owners;  // per slice
  for (const StepPlan::Slice& s : plan.slices) {
    GenSequence& a = *by_id.at(s.id);
    owners.push_back(&a);
    if (s.decode) {
      slices.push_back({&a.seq(), a.decode_tokens(), true, a.draft_rows() > 0});
    } else {
      const size_t at = static_cast<size_t>(a.seq().n_pos());
      slices.push_back({&a.seq(), a.job().prompt.subspan(at, static_cast<size_t>(s.rows)), s.last});
    }
  }
  if (!ctx_) {
    const int64_t logit_rows = opts_.max_seqs + opts_.draft_rows_per_step;
    ctx_ = engine_.NewStepContext(opts_.prefill_rows + logit_rows, opts_.max_seqs, logit_rows);
  }
  const int64_t t0 = env_->MonotonicMicros();
  std::vector<Status> status;
  Status step_status;
  try {
    step_status = engine_.Step(*ctx_, slices, &status);
  } catch (const std::exception& e) {
    step_status = Internal(std::string("step failed: ") + e.what());
  } catch (...) {
    step_status = Internal("step failed");
  }
  Dispatch(plan, owners, step_status, status, static_cast<double>(env_->MonotonicMicros() - t0) / 1e6);
}

// Every sequence in the step samples its rows; the step's time (forward and sampling) is split over
// the prompt rows for the prefill rate, and teaches the cost model.
void StepLoop::Dispatch(const StepPlan& plan, const std::vector<GenSequence*>& owners, const Status& step_status,
                        const std::vector<Status>& status, double forward_s) {
  const int64_t t0 = env_->MonotonicMicros();
  const int64_t n_vocab = engine_.model().config().n_vocab;
  const double per_row = forward_s / static_cast<double>(std::max<int64_t>(plan.shape.rows, 1));
  uint64_t accepted = 0;
  for (size_t i = 0; i < owners.size(); ++i) {
    GenSequence& a = *owners[i];
    if (!step_status.ok() || !status[i].ok()) {
      a.Fail(step_status.ok() ? status[i] : step_status);
    } else if (plan.slices[i].decode) {
      accepted += static_cast<uint64_t>(a.OnDecodeRows(ctx_->logits(i), n_vocab));
    } else {
      a.OnPromptRows(plan.slices[i].rows, per_row * static_cast<double>(plan.slices[i].rows));
      if (plan.slices[i].last) a.OnPromptDone(ctx_->logits(i));
    }
  }
  const double step_s = forward_s + static_cast<double>(env_->MonotonicMicros() - t0) / 1e6;
  if (step_status.ok()) cost_.Record(plan.shape, step_s * 1e3);
  StepCounters& c = counters_;
  ++c.steps;
  c.step_rows += static_cast<uint64_t>(plan.shape.rows);
  c.decode_rows += static_cast<uint64_t>(plan.decode_rows);
  c.prompt_rows += static_cast<uint64_t>(plan.prompt_rows);
  for (const auto& s : plan.slices) {
    if (s.decode) c.draft_rows += static_cast<uint64_t>(s.rows - 1);
  }
  c.draft_accepted += accepted;
  c.occupancy_sum += owners.size();
  c.step_seconds += step_s;
  c.last_step_ms = step_s * 1e3;
  c.last_predicted_ms = plan.predicted_ms;
}

StatusOr<BatchJobResult> RunAlone(Engine& engine, BatchJob job, int64_t ubatch) {
  EMBER_RETURN_IF_ERROR(ValidateJob(job));
  StepLoopOptions so;
  so.max_seqs = 1;
  so.step_tokens = ubatch > 0 ? ubatch : engine.options().ubatch;
  so.prefill_rows = so.step_tokens;
  const SpeculativeOptions& spec = job.options.speculative;
  so.draft_rows_per_step = spec.enabled() ? MaxDraftTokens(engine, spec.draft_max) : 0;
  so.mask_step_work = UINT64_MAX;
  so.env = engine.options().env != nullptr ? engine.options().env : Env::Default();
  StepLoop loop(engine, so);
  auto gen = std::make_shared<GenSequence>(std::move(job), so.env);
  loop.Add(gen);
  while (!loop.empty()) loop.Turn();
  if (!gen->status().ok()) return gen->status();
  return std::move(gen->result());
}

}  // namespace ember
