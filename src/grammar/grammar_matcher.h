// The TokenConstraint of a GBNF grammar over a vocabulary: one per sequence, made from the shared
// immutable Grammar and Vocabulary.
//
// Cost (docs/grammar.md): Mask is a cache lookup when the matcher's DFA state has been masked before —
// which is most tokens, since inside a JSON string or a run of digits the state after each token is the
// same — and otherwise one preorder pass over the vocabulary trie that prunes a subtree at the first
// byte the grammar rejects, each byte a table lookup in the lazily built DFA (automaton.h). Then the
// cached bitset is applied to the logits (one pass over n_vocab floats).
//
// Memory is bounded: past kMaxStates DFA states or kMaxCachedMasks masks, the caches are dropped and the
// current state carried over (so a hostile grammar costs time, never unbounded memory). Time is bounded
// too: each DFA state by the grammar's max_state_work, each trie pass by kMaskWorkFactor times that,
// and the whole generation by its MaskBudget (mask_budget.h). A trie pass can be done in slices
// (Prepare): it resumes at the node where it stopped, so the mask is the same however it was sliced.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "grammar/mask_budget.h"
#include "grammar/token_constraint.h"
#include "grammar/vocabulary.h"

namespace ember::grammar {

struct MatcherStats {
  int64_t masks = 0;        // Mask calls
  int64_t mask_misses = 0;  // of which walked the trie
  int64_t resets = 0;       // caches dropped for size
  int64_t cut_masks = 0;    // trie passes stopped by the work budget (kMaskWorkFactor)
  int64_t paused = 0;       // Prepare calls that returned before the mask was ready
};

class GrammarMatcher final : public TokenConstraint {
 public:
  static constexpr size_t kMaxStates = 8192;
  static constexpr size_t kMaxFrames = size_t{1} << 20;
  static constexpr size_t kMaxCachedMasks = 64;
  // One trie pass may expand at most this many times the grammar's max_state_work parse stacks.
  static constexpr uint64_t kMaskWorkFactor = 64;

  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                 MaskBudget budget = {});

  void Mask(std::span<float> logits) override;
  Status Accept(int32_t token) override;
  bool Complete() const override;
  bool OnlyEndCanFollow() const override;
  std::unique_ptr<TokenConstraint> Clone() const override;
  // Error: the budget is spent (also when this call spent the last of it).
  StatusOr<bool> Prepare(uint64_t max_work) override;

  // The allowed tokens of the current state as a bitset over the vocabulary (what Mask applies).
  const std::vector<uint64_t>& AllowedBits();
  const MatcherStats& stats() const { return stats_; }
  const MaskBudget& budget() const { return budget_; }

 private:
  // A trie pass in progress for `state`: resumes at node `next`; depth_state_ holds its walk.
  struct Pass {
    bool active = false;
    int32_t state = 0;
    size_t next = 0;
    uint64_t work_end = 0;  // the per-pass cap, in dfa_.total_work()
    std::vector<uint64_t> bits;
  };

  GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                 const StateSnapshot& snap, bool finished, const MaskBudget& budget);
  const std::vector<uint64_t>* Cached() const;
  void BeginPass();
  // Walks on until the pass ends (true) or `max_work` more units are spent (false).
  bool ContinuePass(uint64_t max_work);
  const std::vector<uint64_t>& FinishPass();
  void MaybeReset();

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  Automaton dfa_;
  int32_t state_;
  bool finished_ = false;  // an end-of-generation token was accepted
  std::vector<std::pair<int32_t, std::vector<uint64_t>>> cache_;  // state -> allowed bits
  std::vector<uint64_t> none_;                                     // the mask after the end
  std::vector<int32_t> depth_state_;                               // the pass's walk
  Pass pass_;
  MaskBudget budget_;
  MatcherStats stats_;
};

}  // namespace ember::grammar
