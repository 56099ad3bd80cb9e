#include "engine/step_context.h"

#include <algorithm>

namespace ember {

namespace {
ForwardOptions StepForwardOptions(int64_t max_tokens, int max_seqs, int64_t max_ctx, int64_t max_logit_rows) {
  ForwardOptions fo;
  fo.max_ubatch = std::max<int64_t>(1, max_tokens);
  fo.max_ctx = max_ctx;
  fo.max_logit_rows = max_logit_rows > 0 ? max_logit_rows : std::max(1, max_seqs);
  return fo;
}
}  // namespace

StepContext::StepContext(const Model& model, int64_t max_tokens, int max_seqs, int64_t max_ctx,
                         int64_t max_logit_rows)
    : fwd_(model, StepForwardOptions(max_tokens, max_seqs, max_ctx, max_logit_rows)), max_seqs_(std::max(1, max_seqs)) {}

}  // namespace ember
