// A byte-level DFA over a grammar, built lazily: a state is a set of parse stacks (plus the bytes of a
// UTF-8 character read so far), and the transition on a byte is computed the first time it is taken,
// then read from a 256-entry row. So walking the same text twice, or a vocabulary trie from a state seen
// before, costs one array load per byte.
//
// A stack is a chain of interned frames (element position, parent frame): stacks share their tails, and
// comparing or hashing a state compares frame ids. A reference in tail position (the last element of its
// alternative) pushes no return frame, so `x*` (S ::= x S | "") matches any length in one stack depth
// and a long JSON string keeps revisiting the same state.
//
// Sizes grow only with the text walked; the owner (GrammarMatcher) bounds them with Clear() + Import().
// Time is bounded per state: building one state may expand at most Grammar::max_state_work (position,
// return frame) pairs and keep at most kMaxStacks stacks; a state past either is dead and the automaton
// remembers that it was cut off (over_budget), so a refusal can name the limit instead of blaming the text.
// Not thread-safe: one sequence's.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar_impl.h"

namespace ember::grammar {

// A state in a form that does not depend on one automaton's interning (to carry it across Clear()).
struct StateSnapshot {
  std::vector<std::vector<uint32_t>> stacks;  // element positions, bottom first; top is a kChars element
  bool accept = false;                        // some stack is empty: the text so far is a sentence
  std::string pending;                        // bytes of an unfinished UTF-8 character
};

class Automaton {
 public:
  static constexpr int32_t kDead = -1;
  // Most stacks one state may hold: an ambiguous grammar whose stacks multiply past this is cut off
  // (the state is dead) rather than allowed to take unbounded time and memory.
  static constexpr size_t kMaxStacks = 4096;

  explicit Automaton(const Grammar& g);

  int32_t start() const { return start_; }
  int32_t Next(int32_t s, uint8_t b) {
    if (s == kDead) return kDead;  // the start itself may be dead (over budget)
    const int32_t t = trans_[static_cast<size_t>(s) * 256 + b];
    return t != kUnknown ? t : Compute(s, b);
  }
  // The text so far is a sentence (and not inside a UTF-8 character).
  bool Complete(int32_t s) const { return s != kDead && states_[s].accept; }
  // Complete, and no stack can read anything more: only the end can follow.
  bool OnlyEnd(int32_t s) const { return s != kDead && states_[s].accept && states_[s].frames.empty(); }
  // Some state was cut off by the work budget or kMaxStacks since construction or Clear().
  bool over_budget() const { return over_budget_; }
  // Work since construction or Clear(), over all states: (position, return frame) pairs expanded, plus
  // the stacks visited and interned while building states (which an expansion count alone misses for
  // the states inside a UTF-8 character). The unit of the mask work budget (mask_budget.h).
  uint64_t total_work() const { return total_work_; }
  size_t num_states() const { return states_.size(); }
  size_t num_frames() const { return frames_.size(); }

  StateSnapshot Export(int32_t s) const;
  int32_t Import(const StateSnapshot& snap);
  // Forgets every state and frame (ids become invalid); start() is valid again.
  void Clear();

 private:
  static constexpr int32_t kUnknown = -2;
  struct Frame {
    uint32_t pos;
    int32_t parent;  // -1: bottom of the stack
  };
  struct State {
    std::vector<int32_t> frames;  // sorted; each frame's pos is a kChars element
    bool accept = false;
    uint8_t need = 0;             // length of the UTF-8 character being read; 0: none
    std::string pending;
  };

  int32_t Compute(int32_t s, uint8_t b);
  int32_t InternFrame(uint32_t pos, int32_t parent);
  int32_t InternState(State st);
  void BeginState();  // a new state's budget
  int32_t Cut();      // kDead, remembering the budget cut it off
  // Adds the kChars-topped stacks reachable from (pos, parent) without reading to *out. Counts against
  // the budget of the state being built (work_); once past it, stops and sets cut_.
  void Expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, bool* accept);
  int32_t Advance(const State& from, uint32_t cp);
  int32_t Filter(const State& from, std::string pending, uint8_t need);

  const Grammar& g_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, int32_t> frame_ids_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> state_ids_;
  std::vector<int32_t> trans_;  // states_.size() * 256
  int32_t start_ = kDead;
  // Scratch for Expand.
  std::vector<std::pair<uint32_t, int32_t>> todo_;
  std::unordered_set<uint64_t> visited_;
  size_t work_ = 0;  // pairs expanded for the state being built
  bool cut_ = false;  // ... and it went past the budget
  bool over_budget_ = false;
  uint64_t total_work_ = 0;
};

}  // namespace ember::grammar
