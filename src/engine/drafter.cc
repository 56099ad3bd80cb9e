#include "engine/drafter.h"

#include <algorithm>
#include <string>

#include "engine/engine.h"
#include "engine/ngram_draft.h"

namespace ember {

Status SpeculativeOptions::Validate() const {
  if (mode == SpecMode::kOff) return Status::Ok();
  if (draft_max < 1 || draft_max > kMaxDraftTokens) {
    return InvalidArgument("speculative: draft_max must be in [1, " + std::to_string(kMaxDraftTokens) + "], got " +
                           std::to_string(draft_max));
  }
  if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > 64) {
    return InvalidArgument("speculative: need 1 <= ngram_min <= ngram_max <= 64, got " + std::to_string(ngram_min) +
                           " and " + std::to_string(ngram_max));
  }
  if (mode == SpecMode::kDraft && draft_engine == nullptr) {
    return InvalidArgument("speculative: mode 'draft' needs a draft model (--draft-model)");
  }
  return Status::Ok();
}

StatusOr<SpecMode> ParseSpecMode(const std::string& s) {
  if (s == "off") return SpecMode::kOff;
  if (s == "ngram") return SpecMode::kNgram;
  if (s == "draft") return SpecMode::kDraft;
  return InvalidArgument("speculative mode must be off, ngram or draft, got '" + s + "'");
}

const char* SpecModeName(SpecMode m) {
  switch (m) {
    case SpecMode::kOff: return "off";
    case SpecMode::kNgram: return "ngram";
    case SpecMode::kDraft: return "draft";
  }
  return "unknown";
}

DraftPacer::DraftPacer(int draft_max, double row_cost) : max_(std::max(1, draft_max)), row_cost_(row_cost) {}

int DraftPacer::Next() {
  const double a = std::min(acceptance(), 0.999);
  int best_k = 0;
  double best = kMinGain;
  double expect = 0, ak = 1;  // accepted tokens expected with k drafts; a^k
  for (int k = 1; k <= max_; ++k) {
    ak *= a;
    expect += ak;  // a + a^2 + ... + a^k
    const double gain = (1 + expect) / (1 + row_cost_ * k);
    if (gain > best) {
      best = gain;
      best_k = k;
    }
  }
  if (best_k > 0) {
    wait_ = 0;
    return best_k;
  }
  if (++idle_ <= wait_) return 0;
  idle_ = 0;
  wait_ = std::min(64, std::max(1, wait_ * 2));
  return 1;  // a probe: the text may have turned repetitive
}

void DraftPacer::Record(int drafted, int accepted) {
  if (drafted <= 0) return;
  // Each accepted token is a success, the first rejected one a failure; every observation fades the
  // older ones (x0.85: about the last seven count), so the estimate follows the text into and out of
  // repetitive stretches.
  constexpr double kDecay = 0.85;
  for (int i = 0; i < accepted; ++i) {
    hits_ = kDecay * hits_ + 1;
    trials_ = kDecay * trials_ + 1;
  }
  if (accepted < drafted) {
    hits_ = kDecay * hits_;
    trials_ = kDecay * trials_ + 1;
  }
}

namespace {

class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(const SpeculativeOptions& o) : min_(o.ngram_min), max_(o.ngram_max) {}
  void Draft(std::span<const int32_t> held, int32_t pending, int limit, std::vector<int32_t>* out) override {
    ctx_.assign(held.begin(), held.end());
    ctx_.push_back(pending);
    NgramDraft(ctx_, min_, max_, limit, out);
  }

 private:
  int min_, max_;
  std::vector<int32_t> ctx_;  // scratch: held + pending
};

// Greedy drafts from a small model: its own sequence mirrors the target's context (cut back to the
// common prefix after a rejection, so only new tokens are forwarded), then `limit` greedy steps.
class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(Engine* engine) : engine_(engine) {}
  void Draft(std::span<const int32_t> held, int32_t pending, int limit, std::vector<int32_t>* out) override {
    ctx_.assign(held.begin(), held.end());
    ctx_.push_back(pending);
    if (!seq_) {
      StatusOr<std::unique_ptr<Sequence>> s = engine_->NewSequence();
      if (!s.ok()) return;
      seq_ = std::move(*s);
    }
    const std::vector<int32_t>& have = seq_->tokens();
    size_t c = 0;
    while (c < have.size() && c < ctx_.size() && have[c] == ctx_[c]) ++c;
    if (c == ctx_.size()) --c;  // the last context token is forwarded again for its logits
    if (c < have.size() && !seq_->TrimTo(static_cast<int64_t>(c)).ok()) {
      seq_.reset();  // cannot be cut there (window state): start over next time
      return;
    }
    StatusOr<const float*> logits = engine_->Prefill(*seq_, std::span<const int32_t>(ctx_).subspan(c));
    const int64_t nv = engine_->model().config().n_vocab;
    for (int i = 0; i < limit && logits.ok() && *logits != nullptr; ++i) {
      const float* l = *logits;
      const int32_t t = static_cast<int32_t>(std::max_element(l, l + nv) - l);
      out->push_back(t);
      if (i + 1 < limit) logits = engine_->Decode(*seq_, t);
    }
  }

 private:
  Engine* engine_;
  std::unique_ptr<Sequence> seq_;
  std::vector<int32_t> ctx_;
};

}  // namespace

StatusOr<std::unique_ptr<Drafter>> MakeDrafter(const SpeculativeOptions& options) {
  EMBER_RETURN_IF_ERROR(options.Validate());
  switch (options.mode) {
    case SpecMode::kOff: return InvalidArgument("speculative: no drafter when off");
    case SpecMode::kNgram: return std::unique_ptr<Drafter>(new NgramDrafter(options));
    case SpecMode::kDraft:
      // The draft engine is used from one drafting thread at a time (its calls serialise on its pool).
      return std::unique_ptr<Drafter>(new ModelDrafter(const_cast<Engine*>(options.draft_engine)));
  }
  return InvalidArgument("speculative: unknown mode");
}

Status CheckDraftModel(const Engine& target, const Engine& draft) {
  const int64_t a = target.model().config().n_vocab, b = draft.model().config().n_vocab;
  if (a != b) {
    return InvalidArgument("draft model: vocabulary of " + std::to_string(b) + " tokens, the target's has " +
                           std::to_string(a) + " (they must be the same)");
  }
  const Tokenizer* ta = target.tokenizer();
  const Tokenizer* tb = draft.tokenizer();
  if (ta == nullptr || tb == nullptr) return Status::Ok();  // ids only: nothing more to compare
  for (int32_t id = 0; id < static_cast<int32_t>(a); ++id) {
    if (ta->TokenToPiece(id, true) != tb->TokenToPiece(id, true)) {
      return InvalidArgument("draft model: token " + std::to_string(id) + " is '" +
                             std::string(tb->TokenToPiece(id, true)) + "', the target's is '" +
                             std::string(ta->TokenToPiece(id, true)) + "' (the vocabularies must be the same)");
    }
  }
  return Status::Ok();
}

int MaxDraftTokens(const Engine& engine, int draft_max) {
  const KvConfig kc = engine.kv_config();
  int64_t m = draft_max;
  for (int32_t l = 0; l < kc.n_layer; ++l) {
    const LayerStateSpec s = kc.kind(l);
    if (s.kind == StateKind::kWindow) m = std::min<int64_t>(m, kc.WindowMargin(s.window));
  }
  return static_cast<int>(std::clamp<int64_t>(m, 1, kMaxDraftTokens));
}

}  // namespace ember
