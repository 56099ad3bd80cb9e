// How long a step will take, learned from the steps already run (issue #30). The step loop sizes prompt
// chunks with it so that a step carrying decode rows stays near a time target: a long prompt then
// costs each running stream a bounded gap instead of a 256-row step.
//
// The model is linear in two features of a step: its rows (every row reads the weights' product once
// more: matmul work) and its attention work (Σ over slices of rows × keys attended). It is fitted by
// least squares over the last kWindow steps (no clock of its own: the caller passes measured times),
// so it follows the machine's speed and load. Until it has seen kMinSamples steps it predicts nothing
// (ready() is false) and the planner sizes by rows alone; while the steps seen do not tell rows from
// attention apart, the fit uses the terms they do determine (rows alone, at worst).
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace ember {

struct StepShape {
  int64_t rows = 0;       // tokens forwarded by the step, all slices together
  double attn = 0;        // Σ rows × (positions attended): see AttentionWork
};

// Attention work of forwarding `rows` tokens after `held` positions: each new row attends to everything
// before it and itself.
double AttentionWork(int64_t held, int64_t rows);

class StepCostModel {
 public:
  static constexpr int kWindow = 64;     // steps the fit remembers
  static constexpr int kMinSamples = 8;  // before it predicts

  // A step of `shape` took `ms` (forward pass and sampling). Steps without rows and times that are
  // negative or not finite are ignored.
  void Record(const StepShape& shape, double ms);
  bool ready() const { return ready_; }
  // Predicted wall time of a step (ms); 0 when not ready.
  double PredictMs(const StepShape& shape) const;
  // The most prompt rows (≤ max_rows) that can join `base` (the step's decode rows) within target_ms,
  // each prompt row attending to about `held` + its own offset. At least min_rows (progress is never
  // traded for smoothness), at most max_rows; max_rows when not ready.
  int64_t PromptRowsWithin(const StepShape& base, int64_t held, double target_ms, int64_t min_rows,
                           int64_t max_rows) const;

 private:
  void Refit();

  struct Sample {
    double rows = 0, attn = 0, ms = 0;
  };
  std::array<Sample, kWindow> samples_{};
  int count_ = 0;   // samples held (≤ kWindow)
  int next_ = 0;    // ring position of the next Record
  bool ready_ = false;
  double c0_ = 0, c_rows_ = 0, c_attn_ = 0;  // ms = c0 + c_rows × rows + c_attn × attn
};

}  // namespace ember
