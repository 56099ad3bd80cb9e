// The compiled form of a GBNF grammar (what ParseGbnf builds and the matchers read). Internal to the
// grammar module: everything outside sees only the opaque `Grammar` of grammar.h.
//
// Rules are flattened into one element array: each alternative is a run of kChars / kRule elements closed
// by a kEnd, and a rule is the list of its alternatives' start positions. A literal "ab" is two kChars
// elements; groups and repetitions became rules of their own at parse time. Char classes hold Unicode
// scalar values (surrogates removed), so a class never accepts a code point UTF-8 cannot encode.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace ember::grammar {

enum class ElementKind : uint8_t { kEnd, kChars, kRule };

struct Element {
  ElementKind kind = ElementKind::kEnd;
  uint32_t arg = 0;  // kChars: index into classes; kRule: rule id
};

struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // sorted, disjoint, inclusive
  uint64_t ascii[2] = {0, 0};                         // fast path for code points < 128

  void Finish();  // fills `ascii` from `ranges`
  bool empty() const { return ranges.empty(); }
  bool Contains(uint32_t c) const {
    if (c < 128) return (ascii[c >> 6] >> (c & 63)) & 1;
    return ContainsSlow(c);
  }
  bool ContainsSlow(uint32_t c) const;
  bool Intersects(uint32_t lo, uint32_t hi) const;  // any member in [lo, hi]
};

class Grammar {
 public:
  std::vector<Element> elements;
  std::vector<CharClass> classes;
  std::vector<std::vector<uint32_t>> rules;  // rule id -> alternative start positions in `elements`
  std::vector<std::string> rule_names;       // for messages and dumps
  uint32_t root = 0;
  size_t max_state_work = GbnfLimits{}.max_state_work;  // the Automaton's budget per state
};

}  // namespace ember::grammar
