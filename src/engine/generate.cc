// Engine::Generate: one sequence through the step loop (engine/step_loop.h RunAlone), on the caller's
// thread — serial generation is a batch of one, sampled by the same GenSequence as the batch runner's.
#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "engine/step_loop.h"

namespace ember {

StatusOr<GenerateResult> Engine::Generate(Sequence& seq, std::span<const int32_t> prompt,
                                          const GenerateOptions& options, const TokenCallback& on_token) {
  // A job carries the whole prompt, the positions the sequence holds included (the penalty window sees them).
  std::vector<int32_t> whole(seq.tokens());
  whole.insert(whole.end(), prompt.begin(), prompt.end());
  BatchJob job;
  job.seq = &seq;
  job.prompt = whole;
  job.options = options;
  job.on_token = on_token;
  EMBER_ASSIGN_OR_RETURN(BatchJobResult r, RunAlone(*this, std::move(job), options.ubatch));
  return std::move(r.gen);
}

}  // namespace ember
