// Matches / IsPrefix: a walk of the text through a fresh Automaton. IsPrefix is "not dead" because
// ParseGbnf refuses unproductive rules: every live stack can still be completed.
#include "grammar/automaton.h"
#include "grammar/grammar.h"

namespace ember::grammar {
namespace {

int32_t Walk(Automaton& a, std::string_view text) {
  int32_t s = a.start();
  for (char c : text) {
    s = a.Next(s, static_cast<uint8_t>(c));
    if (s == Automaton::kDead) break;
  }
  return s;
}

}  // namespace

bool Matches(const Grammar& g, std::string_view text) {
  Automaton a(g);
  const int32_t s = Walk(a, text);
  return s != Automaton::kDead && a.Complete(s);
}

bool IsPrefix(const Grammar& g, std::string_view text) {
  Automaton a(g);
  return Walk(a, text) != Automaton::kDead;
}

}  // namespace ember::grammar
