#include "grammar/grammar_matcher.h"

#include <cstdint>
#include <limits>
#include <string>

namespace ember::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                               MaskBudget budget)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), dfa_(*grammar_), state_(dfa_.start()), budget_(budget) {}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                               const StateSnapshot& snap, bool finished, const MaskBudget& budget)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), dfa_(*grammar_), finished_(finished), budget_(budget) {
  state_ = dfa_.Import(snap);
}

std::unique_ptr<TokenConstraint> GrammarMatcher::Clone() const {
  // A fresh DFA seeded with this state: the copy shares nothing mutable with the original.
  return std::unique_ptr<TokenConstraint>(
      new GrammarMatcher(grammar_, vocab_, dfa_.Export(state_), finished_, budget_));
}

bool GrammarMatcher::Complete() const { return dfa_.Complete(state_); }

bool GrammarMatcher::OnlyEndCanFollow() const { return finished_ || dfa_.OnlyEnd(state_); }

const std::vector<uint64_t>* GrammarMatcher::Cached() const {
  for (const auto& [s, bits] : cache_) {
    if (s == state_) return &bits;
  }
  return nullptr;
}

void GrammarMatcher::BeginPass() {
  ++stats_.mask_misses;
  pass_.active = true;
  pass_.state = state_;
  pass_.next = 0;
  // A grammar ambiguous enough that every transition is costly could make one pass take minutes: past
  // this the pass stops, and the mask holds the tokens verified so far (never one that cannot follow;
  // at worst fewer than could).
  pass_.work_end = dfa_.total_work() + kMaskWorkFactor * grammar_->max_state_work;
  pass_.bits.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  depth_state_.resize(vocab_->max_depth() + 1);
  depth_state_[0] = state_;
}

bool GrammarMatcher::ContinuePass(uint64_t max_work) {
  const auto& nodes = vocab_->trie();
  const auto& toks = vocab_->trie_tokens();
  const size_t n = vocab_->trie_size();
  uint64_t* out = pass_.bits.data();
  const uint64_t w0 = dfa_.total_work();
  const uint64_t slice_end = max_work > UINT64_MAX - w0 ? UINT64_MAX : w0 + max_work;
  size_t i = pass_.next;
  // The cap is checked before the slice, at the same node either way: a sliced pass ends where a whole
  // one would, so the mask does not depend on how the work was spread over calls.
  while (i < n) {
    if (dfa_.total_work() > pass_.work_end) {
      ++stats_.cut_masks;
      i = n;
      break;
    }
    if (dfa_.total_work() > slice_end) break;
    const Vocabulary::Node& nd = nodes[i];
    const int32_t t = dfa_.Next(depth_state_[nd.depth - 1], nd.byte);
    if (t == Automaton::kDead) {
      i = nd.end;  // no token under this prefix can be read
      continue;
    }
    depth_state_[nd.depth] = t;
    for (uint32_t k = nd.tok_begin, e = nodes[i + 1].tok_begin; k < e; ++k) {
      const auto id = static_cast<uint32_t>(toks[k]);
      out[id >> 6] |= uint64_t{1} << (id & 63);
    }
    ++i;
  }
  pass_.next = i;
  budget_.Spend(dfa_.total_work() - w0);
  return i >= n;
}

const std::vector<uint64_t>& GrammarMatcher::FinishPass() {
  std::vector<uint64_t> bits = std::move(pass_.bits);
  pass_.active = false;
  if (dfa_.Complete(pass_.state)) {
    for (int32_t id : vocab_->eog_ids()) bits[id >> 6] |= uint64_t{1} << (id & 63);
  }
  if (cache_.size() >= kMaxCachedMasks) cache_.erase(cache_.begin());
  MaybeReset();  // may renumber the states (and empty the cache): cache the mask under state_'s id now
  cache_.emplace_back(state_, std::move(bits));
  return cache_.back().second;
}

void GrammarMatcher::MaybeReset() {
  if (dfa_.num_states() <= kMaxStates && dfa_.num_frames() <= kMaxFrames) return;
  const StateSnapshot snap = dfa_.Export(state_);
  dfa_.Clear();
  state_ = dfa_.Import(snap);
  budget_.Spend(dfa_.total_work());  // Clear() rebuilt the start state (and zeroed the count)
  cache_.clear();
  pass_.active = false;
  ++stats_.resets;
}

const std::vector<uint64_t>& GrammarMatcher::AllowedBits() {
  ++stats_.masks;
  if (finished_) {  // after the end nothing may follow; the DFA state alone does not say so
    none_.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
    return none_;
  }
  if (const std::vector<uint64_t>* bits = Cached()) return *bits;
  if (!pass_.active) BeginPass();
  ContinuePass(UINT64_MAX);
  return FinishPass();
}

StatusOr<bool> GrammarMatcher::Prepare(uint64_t max_work) {
  EMBER_RETURN_IF_ERROR(budget_.Check());
  if (finished_ || Cached() != nullptr) return true;
  if (max_work == 0) return false;
  if (!pass_.active) BeginPass();
  const bool done = ContinuePass(max_work);
  if (done) {
    FinishPass();
  } else {
    ++stats_.paused;
  }
  EMBER_RETURN_IF_ERROR(budget_.Check());
  return done;
}

void GrammarMatcher::Mask(std::span<float> logits) {
  const std::vector<uint64_t>& bits = AllowedBits();
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n_vocab = static_cast<size_t>(vocab_->size());
  const size_t n = std::min(logits.size(), n_vocab);
  float* l = logits.data();
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t word = bits[w];
    if (word == ~uint64_t{0}) continue;
    const size_t end = std::min(n, w * 64 + 64);
    for (size_t t = w * 64; t < end; ++t) {
      if (!((word >> (t & 63)) & 1)) l[t] = kNegInf;
    }
  }
  for (size_t t = n; t < logits.size(); ++t) l[t] = kNegInf;  // ids the vocabulary does not have
}

Status GrammarMatcher::Accept(int32_t token) {
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("grammar: no token of the vocabulary can continue the grammar here (token " +
                           std::to_string(token) + " " + why + ")");
  };
  if (finished_) return refuse("follows the end of generation");
  if (token < 0 || token >= vocab_->size()) return refuse("is outside the vocabulary");
  if (vocab_->IsEog(token)) {
    if (!dfa_.Complete(state_)) return refuse("ends generation before the grammar is complete");
    finished_ = true;
    budget_.EarnToken();
    return Status::Ok();
  }
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty()) return refuse("is a control token or has no text");
  const uint64_t w0 = dfa_.total_work();
  int32_t s = state_;
  for (char c : piece) {
    s = dfa_.Next(s, static_cast<uint8_t>(c));
    if (s == Automaton::kDead) break;
  }
  budget_.Spend(dfa_.total_work() - w0);
  if (s == Automaton::kDead) {
    if (!dfa_.over_budget()) return refuse("does not match");
    return refuse("does not match, or the grammar is too ambiguous to follow: a matcher state needed more than " +
                  std::to_string(grammar_->max_state_work) + " parse-stack expansions (limit max_state_work)");
  }
  state_ = s;
  pass_.active = false;  // a pass in progress was for the state before
  budget_.EarnToken();
  MaybeReset();
  return Status::Ok();
}

}  // namespace ember::grammar
