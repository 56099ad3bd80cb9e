// Engine::Generate: one sequence through the step loop (engine/step_loop.h), on the caller's thread —
// serial generation is a batch of one. Prefill goes in chunks of `ubatch` rows, then every step
// forwards the pending token (with drafts when speculating) and GenSequence samples it, exactly as a
// sequence of the batch runner does.
#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "engine/gen_sequence.h"
#include "engine/step_loop.h"

namespace ember {

StatusOr<GenerateResult> Engine::Generate(Sequence& seq, std::span<const int32_t> prompt,
                                          const GenerateOptions& options, const TokenCallback& on_token) {
  // The loop's jobs carry the whole prompt, held positions included (the penalty window sees them).
  std::vector<int32_t> whole(seq.tokens());
  whole.insert(whole.end(), prompt.begin(), prompt.end());
  BatchJob job;
  job.seq = &seq;
  job.prompt = whole;
  job.options = options;
  job.on_token = on_token;
  EMBER_RETURN_IF_ERROR(ValidateJob(job));
  StepLoopOptions so;
  so.max_seqs = 1;
  so.step_tokens = options.ubatch > 0 ? options.ubatch : opts_.ubatch;
  so.prefill_rows = so.step_tokens;
  so.draft_rows_per_step = options.speculative.enabled() ? MaxDraftTokens(*this, options.speculative.draft_max) : 0;
  so.mask_step_work = UINT64_MAX;  // alone: nobody to keep waiting, so the whole mask each step
  so.env = opts_.env;
  StepLoop loop(*this, so);
  auto gen = std::make_shared<GenSequence>(std::move(job), so.env != nullptr ? so.env : Env::Default());
  loop.Add(gen);
  while (!loop.empty()) loop.Turn();
  if (!gen->status().ok()) return gen->status();
  return std::move(gen->result().gen);
}

}  // namespace ember
