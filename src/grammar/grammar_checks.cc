#include "grammar/grammar_checks.h"

#include <algorithm>
#include <string>

#include "grammar/utf8.h"

namespace ember::grammar {
namespace {

Status ErrorAt(const CheckInput& in, size_t pos, const std::string& what) {
  return InvalidArgument("grammar: " + LineColumn(in.text, pos) + ": " + what);
}

// Fixpoint over "a rule has an alternative whose every element satisfies P" (nullable: P(chars) is
// false; productive: P(chars) is "the class is not empty").
std::vector<bool> RuleFixpoint(const Grammar& g, bool chars_ok_if_nonempty) {
  std::vector<bool> ok(g.rules.size(), false);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (ok[r]) continue;
      for (uint32_t start : g.rules[r]) {
        bool all = true;
        for (uint32_t p = start; g.elements[p].kind != ElementKind::kEnd; ++p) {
          const Element& e = g.elements[p];
          const bool e_ok = e.kind == ElementKind::kRule ? ok[e.arg]
                                                          : chars_ok_if_nonempty && !g.classes[e.arg].empty();
          if (!e_ok) {
            all = false;
            break;
          }
        }
        if (all) {
          ok[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return ok;
}

struct Edge {
  uint32_t to;
  bool tail;
  size_t pos;
};

}  // namespace

Status CheckGrammar(const Grammar& g, const CheckInput& in) {
  const size_t n = g.rules.size();
  // Reachable from the root: only those rules can ever be expanded.
  std::vector<bool> reach(n, false);
  std::vector<uint32_t> todo = {g.root};
  reach[g.root] = true;
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    for (uint32_t start : g.rules[r]) {
      for (uint32_t p = start; g.elements[p].kind != ElementKind::kEnd; ++p) {
        const Element& e = g.elements[p];
        if (e.kind == ElementKind::kRule && !reach[e.arg]) {
          reach[e.arg] = true;
          todo.push_back(e.arg);
        }
      }
    }
  }
  const std::vector<bool> productive = RuleFixpoint(g, true);
  // Name the rule at fault: one that refers to itself, rather than the root that merely uses it.
  size_t bad = n;
  for (size_t r = 0; r < n; ++r) {
    if (!reach[r] || productive[r]) continue;
    if (bad == n) bad = r;
    bool self = false;
    for (uint32_t start : g.rules[r]) {
      for (uint32_t p = start; g.elements[p].kind != ElementKind::kEnd; ++p) {
        self |= g.elements[p].kind == ElementKind::kRule && g.elements[p].arg == r;
      }
    }
    if (self) {
      bad = r;
      break;
    }
  }
  if (bad != n) {
    return ErrorAt(in, in.rule_pos[bad], "rule '" + g.rule_names[bad] + "' can never finish (every alternative "
                                             "recurses forever or needs an empty character class)");
  }
  const std::vector<bool> nullable = RuleFixpoint(g, false);

  // Edges r -> s for each reference to s preceded only by nullable elements.
  std::vector<std::vector<Edge>> edges(n);
  for (size_t r = 0; r < n; ++r) {
    if (!reach[r]) continue;
    for (uint32_t start : g.rules[r]) {
      for (uint32_t p = start; g.elements[p].kind != ElementKind::kEnd; ++p) {
        const Element& e = g.elements[p];
        if (e.kind != ElementKind::kRule) break;
        edges[r].push_back({e.arg, g.elements[p + 1].kind == ElementKind::kEnd, in.element_pos[p]});
        if (!nullable[e.arg]) break;
      }
    }
  }
  // Strongly connected components (iterative Tarjan); a non-tail edge inside one is left recursion.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  int next_index = 0, n_comp = 0;
  struct Frame {
    uint32_t v;
    size_t edge;
  };
  for (uint32_t s = 0; s < n; ++s) {
    if (!reach[s] || index[s] >= 0) continue;
    std::vector<Frame> call = {{s, 0}};
    index[s] = low[s] = next_index++;
    stack.push_back(s);
    on_stack[s] = true;
    while (!call.empty()) {
      Frame& f = call.back();
      if (f.edge < edges[f.v].size()) {
        const uint32_t w = edges[f.v][f.edge++].to;
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = true;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      const uint32_t v = f.v;
      if (low[v] == index[v]) {
        while (true) {
          const uint32_t w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = n_comp;
          if (w == v) break;
        }
        ++n_comp;
      }
      call.pop_back();
      if (!call.empty()) low[call.back().v] = std::min(low[call.back().v], low[v]);
    }
  }
  for (size_t r = 0; r < n; ++r) {
    for (const Edge& e : edges[r]) {
      if (!e.tail && comp[e.to] == comp[r]) {
        return ErrorAt(in, e.pos, "left recursion: rule '" + g.rule_names[r] + "' can reach itself through '" +
                                      g.rule_names[e.to] + "' without matching any text");
      }
    }
  }
  return Status::Ok();
}

}  // namespace ember::grammar
