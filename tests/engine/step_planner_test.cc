// The step planner (issue #30, docs/batching.md) on made-up states: FIFO admission under slots and KV
// reservations, decode-first steps, prompt chunks within the row budget or a time target, mask and
// shared-prefix waits; then randomized step loops that check every plan and that everyone finishes.
#include "engine/step_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <span>
#include <vector>

namespace ember {
namespace {

PlannedSeq Dec(uint64_t id, int64_t n_pos, int64_t rows = 1) {
  return {.id = id, .n_pos = n_pos, .decoding = true, .decode_rows = rows};
}
PlannedSeq Pre(uint64_t id, int64_t prompt_left, int64_t n_pos = 0) {
  return {.id = id, .n_pos = n_pos, .prompt_left = prompt_left};
}
PlannedSeq NotReady(PlannedSeq s) {
  s.mask_ready = false;
  return s;
}
PlannedSeq WaitsFor(PlannedSeq s, uint64_t on) {
  s.waits = true;
  s.waits_for = on;
  return s;
}
StepBudget Rows(int64_t max_rows, int64_t max_prefill_rows = 512) {
  return {.max_seqs = 8, .max_rows = max_rows, .max_prefill_rows = max_prefill_rows};
}
StepBudget Slots(int max_seqs, int64_t kv_free_bytes = std::numeric_limits<int64_t>::max()) {
  return {.max_seqs = max_seqs, .kv_free_bytes = kv_free_bytes};
}

const PlannedSeq* Find(std::span<const PlannedSeq> running, uint64_t id) {
  for (const PlannedSeq& s : running)
    if (s.id == id) return &s;
  return nullptr;
}

bool Prefilling(const PlannedSeq& s) { return !s.decoding && s.prompt_left > 0; }

// The header's rule: a wait counts only on an earlier sequence that is still prefilling.
bool ValidWait(std::span<const PlannedSeq> running, const PlannedSeq& s) {
  if (!Prefilling(s) || !s.waits || s.waits_for >= s.id) return false;
  const PlannedSeq* donor = Find(running, s.waits_for);
  return donor != nullptr && Prefilling(*donor);
}

int64_t RowsOf(const StepPlan& p, uint64_t id) {
  for (const StepPlan::Slice& sl : p.slices)
    if (sl.id == id) return sl.rows;
  return 0;
}

bool Timed(const StepPlan& p, const StepBudget& b, const StepCostModel& c) {
  return p.decode_rows > 0 && b.target_ms > 0 && c.ready();
}

// Each slice against its sequence: ids once, decode slices first, both groups in id order.
void CheckSlices(std::span<const PlannedSeq> running, const StepPlan& plan) {
  std::set<uint64_t> seen;
  const StepPlan::Slice* prev = nullptr;
  for (const StepPlan::Slice& sl : plan.slices) {
    SCOPED_TRACE(::testing::Message() << "slice id " << sl.id << " rows " << sl.rows);
    ASSERT_TRUE(seen.insert(sl.id).second) << "id twice";
    const PlannedSeq* s = Find(running, sl.id);
    ASSERT_NE(s, nullptr);
    ASSERT_GE(sl.rows, 1);
    if (prev != nullptr) {
      ASSERT_FALSE(sl.decode && !prev->decode) << "decode slice after a prompt chunk";
      if (sl.decode == prev->decode) {
        ASSERT_GT(sl.id, prev->id) << "not in id order";
      }
    }
    prev = &sl;
    if (sl.decode) {
      ASSERT_TRUE(s->decoding && s->mask_ready);
      ASSERT_EQ(sl.rows, s->decode_rows);
      ASSERT_FALSE(sl.last);
    } else {
      ASSERT_TRUE(Prefilling(*s));
      ASSERT_FALSE(ValidWait(running, *s));
      ASSERT_LE(sl.rows, s->prompt_left);
      if (s->cut_rows > 0) {
        ASSERT_LE(sl.rows, s->cut_rows) << "a chunk ran past its cut";
      }
      ASSERT_EQ(sl.last, sl.rows == s->prompt_left);
      if (!s->mask_ready) {
        ASSERT_LT(sl.rows, s->prompt_left) << "must keep its last row back";
      }
    }
  }
  for (const PlannedSeq& s : running) {
    if (s.decoding && s.mask_ready && s.decode_rows > 0) {
      ASSERT_TRUE(seen.count(s.id)) << s.id << " skipped";
    }
  }
}

// sit_out and share_waits are exactly the header's sets, and none of them has a slice.
void CheckLists(std::span<const PlannedSeq> running, const StepPlan& plan) {
  std::set<uint64_t> sit, waits;
  for (const PlannedSeq& s : running) {
    if (s.decoding && !s.mask_ready) sit.insert(s.id);
    if (ValidWait(running, s)) waits.insert(s.id);  // so a wait is on a smaller, prefilling id: no cycle
  }
  ASSERT_EQ(std::set<uint64_t>(plan.sit_out.begin(), plan.sit_out.end()), sit);
  ASSERT_EQ(plan.sit_out.size(), sit.size());
  ASSERT_EQ(std::set<uint64_t>(plan.share_waits.begin(), plan.share_waits.end()), waits);
  ASSERT_EQ(plan.share_waits.size(), waits.size());
  for (uint64_t id : sit) ASSERT_EQ(RowsOf(plan, id), 0) << id;
  for (uint64_t id : waits) ASSERT_EQ(RowsOf(plan, id), 0) << id;
}

// Sums, the row budget and the prediction.
void CheckTotals(std::span<const PlannedSeq> running, const StepBudget& b, const StepCostModel& cost,
                 const StepPlan& plan) {
  int64_t d = 0, p = 0;
  double attn = 0;
  for (const StepPlan::Slice& sl : plan.slices) {
    (sl.decode ? d : p) += sl.rows;
    attn += AttentionWork(Find(running, sl.id)->n_pos, sl.rows);
  }
  ASSERT_EQ(plan.decode_rows, d);
  ASSERT_EQ(plan.prompt_rows, p);
  ASSERT_EQ(plan.shape.rows, d + p);
  ASSERT_NEAR(plan.shape.attn, attn, 1e-9 * std::max(1.0, attn));
  // Decode rows are never cut; prompt rows fill max_rows (at least one) or max_prefill_rows.
  if (d > 0) {
    ASSERT_LE(p, std::max<int64_t>(b.max_rows - d, 1));
    ASSERT_LE(plan.shape.rows, std::max(b.max_rows, d + 1));
  } else {
    ASSERT_LE(p, b.max_prefill_rows);
  }
  ASSERT_DOUBLE_EQ(plan.predicted_ms, cost.PredictMs(plan.shape));
}

// Progress and budget use: the earliest prefilling sequence always advances (unless only its
// mask-held last row is left); without a time cut rows stay unused only when no prompt can take them;
// with one the step fits the target or is a single floor-sized chunk.
void CheckProgress(std::span<const PlannedSeq> running, const StepBudget& b, const StepCostModel& cost,
                   const StepPlan& plan) {
  const PlannedSeq* first = nullptr;
  for (const PlannedSeq& s : running)
    if (Prefilling(s) && (first == nullptr || s.id < first->id)) first = &s;
  if (first != nullptr && (first->mask_ready || first->prompt_left > 1)) {
    ASSERT_GT(RowsOf(plan, first->id), 0) << "earliest prefilling " << first->id << " starved";
  }
  if (!Timed(plan, b, cost)) {
    const int64_t room =
        plan.decode_rows > 0 ? std::max<int64_t>(b.max_rows - plan.decode_rows, 1) : b.max_prefill_rows;
    if (plan.prompt_rows >= room) return;
    for (const PlannedSeq& s : running) {
      if (Prefilling(s) && !ValidWait(running, s)) {
        const int64_t upto = s.cut_rows > 0 ? std::min(s.prompt_left, s.cut_rows) : s.prompt_left;
        ASSERT_EQ(RowsOf(plan, s.id), upto - (!s.mask_ready && upto == s.prompt_left ? 1 : 0))
            << "rows left unused: " << s.id;
      }
    }
  } else if (plan.predicted_ms > b.target_ms * (1 + 1e-9)) {
    int chunks = 0;
    for (const StepPlan::Slice& sl : plan.slices) chunks += sl.decode ? 0 : 1;
    ASSERT_LE(chunks, 1) << "over the target with more than the floor chunk";
    ASSERT_LE(plan.prompt_rows, b.min_prompt_rows);
  }
}

void CheckPlan(std::span<const PlannedSeq> running, const StepBudget& b, const StepCostModel& cost,
               const StepPlan& plan) {
  ASSERT_NO_FATAL_FAILURE(CheckSlices(running, plan));
  ASSERT_NO_FATAL_FAILURE(CheckLists(running, plan));
  ASSERT_NO_FATAL_FAILURE(CheckTotals(running, b, cost, plan));
  ASSERT_NO_FATAL_FAILURE(CheckProgress(running, b, cost, plan));
}

// Plans and checks the general invariants, so every example below also checks them.
StepPlan Plan(const std::vector<PlannedSeq>& running, const StepBudget& b, const StepCostModel& cost = {}) {
  StepPlan plan = PlanStep(running, b, cost);
  EXPECT_NO_FATAL_FAILURE(CheckPlan(running, b, cost, plan));
  return plan;
}

std::vector<uint64_t> SliceIds(const StepPlan& p) {
  std::vector<uint64_t> ids;
  for (const StepPlan::Slice& sl : p.slices) ids.push_back(sl.id);
  return ids;
}

using Ids = std::vector<uint64_t>;

TEST(AdmitFromQueue, FifoWithinFreeSlots) {
  const std::vector<QueuedSeq> q = {{10, 5}, {11, 6}, {12, 7}, {13, 8}};
  const StepBudget b = Slots(4);
  QueueAdmission a = AdmitFromQueue(q, 1, b);
  EXPECT_EQ(a.admitted, (Ids{10, 11, 12}));
  EXPECT_FALSE(a.head_blocked_by_memory);
  EXPECT_EQ(a.kv_bytes, 5 + 6 + 7);
  a = AdmitFromQueue(q, 4, b);  // no slot free: nobody, and memory is not what blocked them
  EXPECT_TRUE(a.admitted.empty());
  EXPECT_FALSE(a.head_blocked_by_memory);
  EXPECT_EQ(a.kv_bytes, 0);
  EXPECT_TRUE(AdmitFromQueue({}, 0, b).admitted.empty());
}

TEST(AdmitFromQueue, HeadTooLargeBlocksEveryoneBehindIt) {
  const QueueAdmission a = AdmitFromQueue(std::vector<QueuedSeq>{{1, 150}, {2, 1}, {3, 1}}, 0, Slots(8, 100));
  EXPECT_TRUE(a.admitted.empty()) << "small requests overtook the head";
  EXPECT_TRUE(a.head_blocked_by_memory);
  EXPECT_EQ(a.kv_bytes, 0);
}

TEST(AdmitFromQueue, ReservationsAccumulate) {
  const StepBudget b = Slots(8, 100);
  // 60 and 60 each fit, not together; the 10 behind them must not overtake the second.
  QueueAdmission a = AdmitFromQueue(std::vector<QueuedSeq>{{1, 60}, {2, 60}, {3, 10}}, 0, b);
  EXPECT_EQ(a.admitted, (Ids{1}));
  EXPECT_TRUE(a.head_blocked_by_memory);
  EXPECT_EQ(a.kv_bytes, 60);
  a = AdmitFromQueue(std::vector<QueuedSeq>{{1, 50}, {2, 50}, {3, 1}}, 0, b);  // exactly full
  EXPECT_EQ(a.admitted, (Ids{1, 2}));
  EXPECT_TRUE(a.head_blocked_by_memory);
  EXPECT_EQ(a.kv_bytes, 100);
}

TEST(PlanStep, DecodeFirstThenPromptsInIdOrder) {
  // Given out of order: the plan is in id order, decode slices before prompt chunks.
  const std::vector<PlannedSeq> run = {Pre(4, 100), Dec(5, 40, 3), Pre(1, 100, 7), Dec(2, 900)};
  const StepPlan p = Plan(run, Rows(64));
  EXPECT_EQ(SliceIds(p), (Ids{2, 5, 1}));  // 64 - 4 decode rows all go to the earliest prompt
  ASSERT_EQ(p.slices.size(), 3u);
  EXPECT_TRUE(p.slices[0].decode && p.slices[1].decode && !p.slices[2].decode);
  EXPECT_EQ(p.slices[1].rows, 3);
  EXPECT_EQ(p.slices[2].rows, 60);
  EXPECT_FALSE(p.slices[2].last);
  EXPECT_EQ(p.decode_rows, 4);
  EXPECT_EQ(p.prompt_rows, 60);
  EXPECT_EQ(p.shape.rows, 64);
  EXPECT_DOUBLE_EQ(p.shape.attn, AttentionWork(900, 1) + AttentionWork(40, 3) + AttentionWork(7, 60));
  EXPECT_EQ(p.predicted_ms, 0);  // untrained model
}

TEST(PlanStep, ChunksFillTheBudgetAndMarkTheLast) {
  const StepPlan p = Plan({Dec(1, 10), Pre(2, 30), Pre(3, 100), Pre(4, 5)}, Rows(64));
  EXPECT_EQ(SliceIds(p), (Ids{1, 2, 3}));
  EXPECT_EQ(RowsOf(p, 2), 30);
  EXPECT_TRUE(p.slices[1].last);  // reaches the end of its prompt
  EXPECT_EQ(RowsOf(p, 3), 33);
  EXPECT_FALSE(p.slices[2].last);
  // A chunk that ends exactly at the budget and the prompt is last too.
  const StepPlan q = Plan({Dec(1, 10), Pre(2, 63)}, Rows(64));
  EXPECT_TRUE(q.slices.back().last);
  EXPECT_EQ(q.prompt_rows, 63);
}

TEST(PlanStep, OnePromptRowEvenWhenDecodeFillsTheBudget) {
  std::vector<PlannedSeq> run;
  for (uint64_t id = 1; id <= 10; ++id) run.push_back(Dec(id, 100));
  run.push_back(Pre(11, 50));
  const StepPlan p = Plan(run, Rows(8));
  EXPECT_EQ(p.decode_rows, 10);  // decode rows are never cut
  EXPECT_EQ(p.prompt_rows, 1);
  EXPECT_EQ(RowsOf(p, 11), 1);
}

TEST(PlanStep, NobodyDecodingUsesThePrefillBudget) {
  const StepPlan p = Plan({Pre(1, 1000), Pre(2, 1000)}, Rows(256, 512));
  EXPECT_EQ(SliceIds(p), (Ids{1}));
  EXPECT_EQ(p.prompt_rows, 512);
  // A decoder sitting out (mask not ready) carries no decode rows: still a prefill-sized step.
  const StepPlan q = Plan({NotReady(Dec(1, 50)), Pre(2, 1000)}, Rows(256, 512));
  EXPECT_EQ(q.sit_out, (Ids{1}));
  EXPECT_EQ(q.decode_rows, 0);
  EXPECT_EQ(q.prompt_rows, 512);
}

TEST(PlanStep, DecoderWithoutMaskSitsOut) {
  const StepPlan p = Plan({Dec(1, 10, 2), NotReady(Dec(2, 10, 3)), Dec(3, 10)}, Rows(64));
  EXPECT_EQ(p.sit_out, (Ids{2}));
  EXPECT_EQ(SliceIds(p), (Ids{1, 3}));
  EXPECT_EQ(p.decode_rows, 3);
}

TEST(PlanStep, PrefillWithoutMaskKeepsItsLastRowBack) {
  StepPlan p = Plan({Dec(1, 10), NotReady(Pre(2, 10)), Pre(3, 100)}, Rows(64));
  EXPECT_EQ(RowsOf(p, 2), 9);
  EXPECT_FALSE(p.slices[1].last);
  EXPECT_EQ(RowsOf(p, 3), 54);  // the held-back row goes to the next prompt
  p = Plan({NotReady(Pre(2, 100))}, Rows(64, 50));  // not reaching the end: nothing to hold back
  EXPECT_EQ(RowsOf(p, 2), 50);
  p = Plan({Dec(1, 10), NotReady(Pre(2, 1)), Pre(3, 100)}, Rows(64));  // only the last row left
  EXPECT_EQ(SliceIds(p), (Ids{1, 3}));
  EXPECT_EQ(RowsOf(p, 3), 63);
}

// A hybrid keeps its recurrent state only where a chunk ends: a chunk stops at the cut, and the rows it
// leaves go to the next prompt.
TEST(PlanStep, APromptChunkStopsAtItsCut) {
  PlannedSeq a = Pre(1, 100), b = Pre(2, 100);
  a.cut_rows = 7;
  StepPlan p = Plan({a, b}, Rows(64, 64));
  EXPECT_EQ(RowsOf(p, 1), 7);
  EXPECT_FALSE(p.slices[0].last);
  EXPECT_EQ(RowsOf(p, 2), 57);
  a.prompt_left = 7;  // the cut is the prompt's end: the chunk is the last
  p = Plan({a}, Rows(64, 64));
  EXPECT_TRUE(p.slices[0].last);
  a = NotReady(a);  // ... and still keeps its last row back for the mask
  p = Plan({a}, Rows(64, 64));
  EXPECT_EQ(RowsOf(p, 1), 6);
}

TEST(PlanStep, ShareWaitsOnlyOnEarlierPrefillingSequences) {
  const std::vector<PlannedSeq> run = {
      Dec(1, 500),
      Pre(2, 300),
      WaitsFor(Pre(3, 300), 2),    // earlier and prefilling: waits
      WaitsFor(Pre(4, 300), 3),    // 3 is prefilling (waiting itself): waits
      WaitsFor(Pre(5, 300), 7),    // a later id: ignored
      WaitsFor(Pre(6, 300), 99),   // missing: ignored
      WaitsFor(Pre(7, 300), 1),    // decoding: holds all it will compute, ignored
      WaitsFor(Pre(8, 300), 8),    // itself: ignored
  };
  const StepPlan p = Plan(run, Rows(2000));
  EXPECT_EQ(p.share_waits, (Ids{3, 4}));
  EXPECT_EQ(SliceIds(p), (Ids{1, 2, 5, 6, 7, 8}));
  PlannedSeq no_flag = Pre(3, 300);  // waits_for without waits means nothing
  no_flag.waits_for = 2;
  EXPECT_TRUE(Plan({Pre(2, 300), no_flag}, Rows(2000)).share_waits.empty());
}

// The machine's law for the time-target tests: ms = 2 + 0.5 rows + 1e-5 attention work.
double LawMs(const StepShape& s) { return 2 + 0.5 * static_cast<double>(s.rows) + 1e-5 * s.attn; }

// A model fitted to ~20 steps of varied shape that followed LawMs.
StepCostModel Trained(uint32_t seed = 1) {
  StepCostModel m;
  std::mt19937 rng(seed);
  for (int i = 0; i < 20; ++i) {
    StepShape s;
    const int64_t decoders = std::uniform_int_distribution<int64_t>(0, 6)(rng);
    for (int64_t d = 0; d < decoders; ++d) {
      s.rows += 1;
      s.attn += AttentionWork(std::uniform_int_distribution<int64_t>(0, 3000)(rng), 1);
    }
    const int64_t chunk = std::uniform_int_distribution<int64_t>(decoders == 0 ? 1 : 0, 256)(rng);
    s.rows += chunk;
    s.attn += AttentionWork(std::uniform_int_distribution<int64_t>(0, 3000)(rng), chunk);
    m.Record(s, LawMs(s));
  }
  return m;
}

std::vector<PlannedSeq> FourStreamsAndAPrompt(int64_t prompt) {
  return {Dec(1, 1000), Dec(2, 1000), Dec(3, 1000), Dec(4, 1000), Pre(5, prompt, 200)};
}

StepBudget Target(double ms) {
  StepBudget b = Rows(256);
  b.target_ms = ms;
  b.min_prompt_rows = 16;
  return b;
}

TEST(PlanStepTimeTarget, CutsThePromptToFitTheTarget) {
  const StepCostModel m = Trained();
  ASSERT_TRUE(m.ready());
  const StepPlan p = Plan(FourStreamsAndAPrompt(1000), Target(40), m);
  EXPECT_EQ(p.decode_rows, 4);
  EXPECT_GT(p.prompt_rows, 16);
  EXPECT_LT(p.prompt_rows, 252);  // the rows budget alone would give 252
  EXPECT_LE(p.predicted_ms, 40);
  EXPECT_NEAR(p.predicted_ms, LawMs(p.shape), 0.05 * LawMs(p.shape));
  // The most that fits: one more prompt row would be predicted over the target.
  const StepShape more{p.shape.rows + 1, p.shape.attn + AttentionWork(200 + p.prompt_rows, 1)};
  EXPECT_GT(m.PredictMs(more), 40);
}

TEST(PlanStepTimeTarget, NeverBelowTheFloorUnlessThePromptIs) {
  const StepCostModel m = Trained();
  StepPlan p = Plan(FourStreamsAndAPrompt(1000), Target(1), m);  // the decode rows alone exceed 1 ms
  EXPECT_EQ(p.prompt_rows, 16);
  EXPECT_GT(p.predicted_ms, 1);
  p = Plan(FourStreamsAndAPrompt(5), Target(1), m);
  EXPECT_EQ(p.prompt_rows, 5);
  EXPECT_TRUE(p.slices.back().last);
}

TEST(PlanStepTimeTarget, LaterChunksOnlyWithinTheTarget) {
  const StepCostModel m = Trained();
  std::vector<PlannedSeq> run = FourStreamsAndAPrompt(20);
  run.push_back(Pre(6, 1000));
  const StepPlan p = Plan(run, Target(25), m);
  EXPECT_EQ(RowsOf(p, 5), 20);
  EXPECT_GT(RowsOf(p, 6), 0);
  EXPECT_LE(p.predicted_ms, 25);
  const StepPlan tight = Plan(run, Target(1), m);  // the first chunk takes the floor, nobody else joins
  EXPECT_EQ(SliceIds(tight), (Ids{1, 2, 3, 4, 5}));
}

TEST(PlanStepTimeTarget, RowsOnlyWithoutTargetModelOrDecodeRows) {
  const StepCostModel m = Trained();
  const StepPlan rows_only = Plan(FourStreamsAndAPrompt(1000), Rows(256));
  EXPECT_EQ(rows_only.prompt_rows, 252);
  EXPECT_EQ(Plan(FourStreamsAndAPrompt(1000), Target(0), m).prompt_rows, 252);  // no target
  const StepPlan untrained = Plan(FourStreamsAndAPrompt(1000), Target(1));       // no fitted model
  EXPECT_EQ(untrained.prompt_rows, 252);
  EXPECT_EQ(untrained.predicted_ms, 0);
  const StepPlan prefill = Plan({Pre(5, 1000), Pre(6, 1000)}, Target(1), m);  // nobody decodes
  EXPECT_EQ(prefill.prompt_rows, 512);
  EXPECT_NEAR(prefill.predicted_ms, LawMs(prefill.shape), 0.05 * LawMs(prefill.shape));
}

// A randomized step loop: arrivals, FIFO admission, random masks, drafts and share waits, a checked
// plan every step, and its effects (prompts advance and start decoding, decoders finish).
struct Counters {
  int blocked = 0, share_waits = 0, sit_outs = 0, timed = 0, finished = 0;
};

struct Loop {
  std::mt19937 rng;
  StepBudget budget;
  int64_t kv_total = 0;
  double mask_p = 1;      // chance a mask is ready (before step kMasksReady)
  int to_arrive = 0;
  uint64_t next_id = 1;
  std::vector<QueuedSeq> queue;
  std::vector<PlannedSeq> running;
  std::map<uint64_t, std::pair<int64_t, int64_t>> left_kv;  // id → tokens still to decode, KV reserved
  StepCostModel cost;     // fed LawMs of every step when the loop has a time target
  Counters* seen = nullptr;
  int64_t I(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  bool P(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  // A share wait on a running sequence or anyone: earlier (valid when prefilling), finished or never
  // seen, itself or later.
  PlannedSeq RandomWait(PlannedSeq s) {
    if (P(0.5)) return s;
    if (P(0.5) && !running.empty()) return WaitsFor(s, running[static_cast<size_t>(I(0, ssize(running) - 1))].id);
    return WaitsFor(s, static_cast<uint64_t>(I(0, static_cast<int64_t>(s.id) + 3)));
  }
};

constexpr int kMasksReady = 2000;  // from here on every mask is ready, so everyone must finish
constexpr int kMaxSteps = 10000;

void Admit(Loop& l) {
  int64_t used = 0;
  for (const auto& [id, v] : l.left_kv) used += v.second;
  l.budget.kv_free_bytes = l.kv_total - used;
  const int running = static_cast<int>(l.running.size());
  const QueueAdmission a = AdmitFromQueue(l.queue, running, l.budget);
  const size_t k = a.admitted.size();
  ASSERT_LE(static_cast<int>(k), std::max(0, l.budget.max_seqs - running));
  int64_t kv = 0;
  for (size_t i = 0; i < k; ++i) {
    ASSERT_EQ(a.admitted[i], l.queue[i].id) << "the queue's order was overtaken";
    kv += l.queue[i].kv_bytes;
  }
  ASSERT_EQ(a.kv_bytes, kv);
  ASSERT_LE(kv, l.budget.kv_free_bytes);
  // Stopping with a slot free and someone queued: only because the next one's KV did not fit.
  const bool slot_left = k < l.queue.size() && running + static_cast<int>(k) < l.budget.max_seqs;
  ASSERT_EQ(a.head_blocked_by_memory, slot_left);
  if (slot_left) {
    ASSERT_GT(l.queue[k].kv_bytes, l.budget.kv_free_bytes - kv);
  }
  l.seen->blocked += slot_left;
  for (size_t i = 0; i < k; ++i) {
    l.running.push_back(l.RandomWait(Pre(l.queue[i].id, l.I(1, 300), l.I(0, 50))));
    l.left_kv[l.queue[i].id] = {l.I(1, 30), l.queue[i].kv_bytes};
  }
  l.queue.erase(l.queue.begin(), l.queue.begin() + static_cast<std::ptrdiff_t>(k));
}

void Apply(Loop& l, const StepPlan& plan) {
  for (const StepPlan::Slice& sl : plan.slices) {
    PlannedSeq& s = *std::find_if(l.running.begin(), l.running.end(), [&](const auto& r) { return r.id == sl.id; });
    if (sl.decode) {
      const int64_t accepted = l.I(1, sl.rows);  // drafts past a rejection are trimmed
      s.n_pos += accepted;
      l.left_kv[s.id].first -= accepted;
    } else {
      s.prompt_left -= sl.rows;
      s.n_pos += sl.rows;
      s.decoding = sl.last;
    }
  }
  std::erase_if(l.running, [&](const PlannedSeq& s) {
    if (!s.decoding || l.left_kv[s.id].first > 0) return false;
    l.left_kv.erase(s.id);
    ++l.seen->finished;
    return true;
  });
}

void Step(Loop& l, int step) {
  if (l.to_arrive > 0 && l.P(0.4)) {
    l.queue.push_back({l.next_id++, l.P(0.2) ? l.I(1, l.kv_total) : l.I(1, l.kv_total / 4)});
    --l.to_arrive;
  }
  ASSERT_NO_FATAL_FAILURE(Admit(l));
  for (PlannedSeq& s : l.running) {
    s.mask_ready = step >= kMasksReady || l.P(l.mask_p);
    if (s.decoding) s.decode_rows = l.I(1, 4);  // pending token plus drafts
    if (!s.decoding) s.cut_rows = l.P(0.3) ? l.I(1, s.prompt_left + 5) : 0;  // checkpoints, shared prefixes
    if (!s.decoding && l.P(0.05)) {  // the sharing pass changed its mind
      s.waits = false;
      s = l.RandomWait(s);
    }
  }
  std::vector<PlannedSeq> shuffled = l.running;  // any order in, id order out
  std::shuffle(shuffled.begin(), shuffled.end(), l.rng);
  const StepPlan plan = PlanStep(shuffled, l.budget, l.cost);
  ASSERT_NO_FATAL_FAILURE(CheckPlan(l.running, l.budget, l.cost, plan));
  l.seen->share_waits += static_cast<int>(plan.share_waits.size());
  l.seen->sit_outs += static_cast<int>(plan.sit_out.size());
  l.seen->timed += Timed(plan, l.budget, l.cost) && plan.prompt_rows > 0;
  if (l.budget.target_ms > 0 && plan.shape.rows > 0) l.cost.Record(plan.shape, LawMs(plan.shape));
  Apply(l, plan);
}

void RunLoop(uint32_t seed, bool timed, Counters* seen) {
  Loop l;
  l.rng.seed(seed);
  l.seen = seen;
  l.budget.max_seqs = static_cast<int>(l.I(1, 6));
  l.budget.max_rows = l.P(0.5) ? l.I(1, 32) : l.I(1, 300);  // small budgets make prompts share steps
  l.budget.max_prefill_rows = l.P(0.5) ? l.I(8, 64) : l.I(8, 600);
  l.budget.target_ms = timed ? static_cast<double>(l.I(5, 80)) : 0;
  l.budget.min_prompt_rows = l.I(1, 32);
  l.kv_total = l.I(100, 400);
  l.mask_p = std::uniform_real_distribution<double>(0.3, 1)(l.rng);
  l.to_arrive = static_cast<int>(l.I(1, 12));
  int step = 0;
  for (; step < kMaxSteps && (!l.running.empty() || !l.queue.empty() || l.to_arrive > 0); ++step) {
    ASSERT_NO_FATAL_FAILURE(Step(l, step)) << "step " << step;
  }
  ASSERT_LT(step, kMaxSteps) << "livelock: " << l.running.size() << " running, " << l.queue.size() << " queued";
}

TEST(StepPlannerLoop, RowsBudgetKeepsTheRulesAndEveryoneFinishes) {
  Counters seen;
  for (uint32_t seed = 0; seed < 200; ++seed) {
    ASSERT_NO_FATAL_FAILURE(RunLoop(seed, false, &seen)) << "seed " << seed;
  }
  // The loops did exercise the rules under test.
  EXPECT_GT(seen.blocked, 0);
  EXPECT_GT(seen.share_waits, 0);
  EXPECT_GT(seen.sit_outs, 0);
  EXPECT_GT(seen.finished, 200);
}

TEST(StepPlannerLoop, TimeTargetKeepsTheRulesAndEveryoneFinishes) {
  Counters seen;
  for (uint32_t seed = 1000; seed < 1200; ++seed) {
    ASSERT_NO_FATAL_FAILURE(RunLoop(seed, true, &seen)) << "seed " << seed;
  }
  EXPECT_GT(seen.timed, 0);
  EXPECT_GT(seen.share_waits, 0);
  EXPECT_GT(seen.finished, 200);
}

}  // namespace
}  // namespace ember
