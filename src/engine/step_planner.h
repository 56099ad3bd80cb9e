// The step loop's planning rule (issue #30), on plain values: which queued sequences get a slot, and
// what the next forward pass carries. No model, no threads, no clock: the step loop
// (engine/step_loop.h) fills the inputs from its sequences and carries the plan out, and the tests
// drive it with made-up states.
//
// The rule (docs/batching.md):
//  * Admission: FIFO. The queue's head takes a free slot when its KV reservation fits the free budget;
//    when it does not, everyone behind it waits too (no overtaking, so a large request is never
//    starved by small ones).
//  * Decode first: every decoding sequence whose grammar mask is ready gets its decode rows (its
//    pending token plus drafts). One whose mask is not ready sits the step out.
//  * Then prompt chunks in admission order, within the row budget: max_rows while anyone decodes,
//    max_prefill_rows when nobody does. With a time target and a fitted cost model, the chunks of a
//    step that carries decode rows are cut further so the step's predicted time stays near the target
//    (never below min_prompt_rows, so a prompt always advances).
//  * A sequence waiting for an earlier one to compute a shared prefix gets no rows this step. Only an
//    earlier, still-prefilling sequence can be waited for, so waits never form a cycle.
//  * A prompt chunk never runs past the sequence's cut (cut_rows): where a hybrid keeps a checkpoint.
//  * A prefilling sequence whose mask is not ready keeps its last prompt row back (that row's logits
//    are sampled right after the step).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "engine/step_cost.h"

namespace ember {

// A sequence holding a slot.
struct PlannedSeq {
  uint64_t id = 0;             // admission order: a smaller id was admitted earlier
  int64_t n_pos = 0;           // positions it holds (what its rows attend to)
  bool decoding = false;       // prompt done: wants decode_rows rows
  int64_t decode_rows = 1;     // its pending token plus drafted ones (decoding only; 0: nothing to forward)
  int64_t prompt_left = 0;     // prompt rows not forwarded yet (prefilling only)
  bool mask_ready = true;      // grammar mask for its next sample is ready
  bool waits = false;          // wants to wait for an earlier sequence computing its shared prefix...
  uint64_t waits_for = 0;      // ... this one
  int64_t cut_rows = 0;        // > 0: its next prompt chunk ends at most this many rows ahead (a recurrent
                               // state can be kept only where a chunk ends: a checkpoint, a shared prefix)
};

// A sequence in the queue, in arrival order.
struct QueuedSeq {
  uint64_t id = 0;             // arrival order
  int64_t kv_bytes = 0;        // the KV it reserves once admitted
};

struct StepBudget {
  int max_seqs = 1;                     // slots
  int64_t max_rows = 256;               // rows of a step that carries decode rows (--step-tokens)
  int64_t max_prefill_rows = 512;       // rows of a step that carries none
  int64_t kv_free_bytes = std::numeric_limits<int64_t>::max();  // reservations admission may still grant
  double target_ms = 0;                 // step time target while anyone decodes (--step-ms); 0: rows only
  int64_t min_prompt_rows = 16;         // a step's first time-cut chunk is never smaller (unless the prompt is)
};

struct QueueAdmission {
  std::vector<uint64_t> admitted;       // queue ids, in order, each given a slot
  bool head_blocked_by_memory = false;  // a slot was free but the head's reservation did not fit
  int64_t kv_bytes = 0;                 // reservations granted
};

// Who leaves the queue now: `running` slots are taken.
QueueAdmission AdmitFromQueue(std::span<const QueuedSeq> queue, int running, const StepBudget& budget);

struct StepPlan {
  struct Slice {
    uint64_t id = 0;
    int64_t rows = 0;
    bool decode = false;       // a decode slice (all its rows' logits); else a prompt chunk
    bool last = false;         // prompt chunk that ends the prompt: its logits are sampled after the step
  };
  std::vector<Slice> slices;   // decode slices, then prompt chunks, each in id (admission) order
  std::vector<uint64_t> sit_out;  // decoding but mask not ready
  std::vector<uint64_t> share_waits;  // prefilling, waiting for an earlier sequence's shared prefix
  int64_t decode_rows = 0;
  int64_t prompt_rows = 0;
  double predicted_ms = 0;     // the cost model's estimate (0 when it is not ready)
  StepShape shape;             // rows and attention work, for StepCostModel::Record
};

// The next step over `running` (any order; planned in id order).
StepPlan PlanStep(std::span<const PlannedSeq> running, const StepBudget& budget, const StepCostModel& cost);

}  // namespace ember
