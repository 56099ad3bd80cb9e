#include "engine/step_planner.h"

#include <algorithm>
#include <unordered_map>

namespace ember {

QueueAdmission AdmitFromQueue(std::span<const QueuedSeq> queue, int running, const StepBudget& budget) {
  QueueAdmission a;
  int free_slots = budget.max_seqs - running;
  for (const QueuedSeq& q : queue) {
    if (free_slots <= 0) break;
    if (q.kv_bytes > budget.kv_free_bytes - a.kv_bytes) {  // FIFO: everyone behind the head waits too
      a.head_blocked_by_memory = true;
      break;
    }
    a.admitted.push_back(q.id);
    a.kv_bytes += q.kv_bytes;
    --free_slots;
  }
  return a;
}

namespace {

// A wait counts only on an earlier sequence that is still prefilling: admission order is a total order,
// so no cycle can form, and a donor that finished or is decoding holds all it will ever compute.
bool WaitsValidly(const PlannedSeq& s, const std::unordered_map<uint64_t, const PlannedSeq*>& by_id) {
  if (!s.waits || s.waits_for >= s.id) return false;
  auto it = by_id.find(s.waits_for);
  return it != by_id.end() && !it->second->decoding && it->second->prompt_left > 0;
}

}  // namespace

StepPlan PlanStep(std::span<const PlannedSeq> running, const StepBudget& budget, const StepCostModel& cost) {
  std::vector<const PlannedSeq*> order;
  std::unordered_map<uint64_t, const PlannedSeq*> by_id;
  for (const PlannedSeq& s : running) {
    order.push_back(&s);
    by_id[s.id] = &s;
  }
  std::sort(order.begin(), order.end(), [](const PlannedSeq* a, const PlannedSeq* b) { return a->id < b->id; });
  StepPlan plan;
  auto add = [&plan](const PlannedSeq& s, int64_t rows, bool decode, bool last) {
    plan.slices.push_back({s.id, rows, decode, last});
    (decode ? plan.decode_rows : plan.prompt_rows) += rows;
    plan.shape.rows += rows;
    plan.shape.attn += AttentionWork(s.n_pos, rows);
  };
  for (const PlannedSeq* s : order) {  // decode first
    if (!s->decoding) continue;
    if (!s->mask_ready) {
      plan.sit_out.push_back(s->id);
    } else if (s->decode_rows > 0) {
      add(*s, s->decode_rows, true, false);
    }
  }
  const bool decoding = plan.decode_rows > 0;
  int64_t room = std::max<int64_t>((decoding ? budget.max_rows : budget.max_prefill_rows) - plan.decode_rows,
                                   decoding ? 1 : 0);
  const bool timed = decoding && budget.target_ms > 0 && cost.ready();
  bool first_chunk = true;
  for (const PlannedSeq* s : order) {
    if (s->decoding || s->prompt_left <= 0) continue;
    if (WaitsValidly(*s, by_id)) {
      plan.share_waits.push_back(s->id);
      continue;
    }
    if (room <= 0) continue;
    int64_t n = std::min(room, s->prompt_left);
    if (s->cut_rows > 0) n = std::min(n, s->cut_rows);
    if (timed) {  // the first chunk always advances by min_prompt_rows; later ones only if they fit
      n = cost.PromptRowsWithin(plan.shape, s->n_pos, budget.target_ms, first_chunk ? budget.min_prompt_rows : 0, n);
    }
    if (!s->mask_ready && n == s->prompt_left) --n;  // the last row's logits need the mask: keep it back
    if (n <= 0) continue;
    add(*s, n, false, n == s->prompt_left);
    room -= n;
    first_chunk = false;
  }
  plan.predicted_ms = cost.PredictMs(plan.shape);
  return plan;
}

}  // namespace ember
