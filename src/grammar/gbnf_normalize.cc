#include <algorithm>
#include <optional>

#include "grammar/gbnf_rules.h"

namespace ember::grammar {
namespace {

using Alt = std::vector<SourceElement>;

bool SameElement(const SourceElement& a, const SourceElement& b) {
  return a.element.kind == b.element.kind && a.element.arg == b.element.arg;
}

bool SameAlt(const Alt& a, const Alt& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), SameElement);
}

class Normalizer {
 public:
  explicit Normalizer(std::vector<ParsedRule>& rules) : rules_(rules) {}

  void Run() {
    star_atom_.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r) {
      if (rules_[r].kind == RuleKind::kStar) star_atom_[r] = rules_[r].alts[0][0];
    }
    body_.resize(rules_.size());
    ComputeNullable();
    for (ParsedRule& r : rules_) {
      for (Alt& alt : r.alts) DropNullableBeforeItsStar(alt);
    }
    for (uint32_t s = 0; s < rules_.size(); ++s) {
      if (rules_[s].kind == RuleKind::kStar) SimplifyStar(s);
    }
  }

 private:
  // Bounds on the rewrite (past either, a loop body stays as it was, which is always right): the
  // recursion (x{0,n} makes a chain of n rules), and a body's alternatives (a union could otherwise
  // collect much of the grammar, in every loop around it).
  static constexpr int kMaxDepth = 128;
  static constexpr size_t kMaxBody = 64;

  bool Nullable(const SourceElement& e) const {
    return e.element.kind == ElementKind::kRule && nullable_[e.element.arg];
  }
  bool IsStarOf(const SourceElement& s, const SourceElement& x) const {
    if (s.element.kind != ElementKind::kRule) return false;
    const uint32_t r = s.element.arg;
    return rules_[r].kind == RuleKind::kStar && SameElement(star_atom_[r], x);
  }

  void ComputeNullable() {
    nullable_.assign(rules_.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules_.size(); ++r) {
        if (nullable_[r]) continue;
        for (const Alt& alt : rules_[r].alts) {
          if (std::all_of(alt.begin(), alt.end(), [&](const SourceElement& e) { return Nullable(e); })) {
            nullable_[r] = changed = true;
            break;
          }
        }
      }
    }
  }

  // x x* is x* when x matches the empty text: the copy in front adds nothing but a second way in.
  void DropNullableBeforeItsStar(Alt& alt) const {
    for (size_t i = 0; i + 1 < alt.size();) {
      if (Nullable(alt[i]) && IsStarOf(alt[i + 1], alt[i])) {
        alt.erase(alt.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  static void AddAlt(Alt alt, std::vector<Alt>* out) {
    if (std::none_of(out->begin(), out->end(), [&](const Alt& v) { return SameAlt(v, alt); })) {
      out->push_back(std::move(alt));
    }
  }

  // Alternatives, none empty, whose union U has U* equal to e*. Memoised per rule: x{8} is one atom
  // referenced eight times, and each loop around it would otherwise walk it again.
  std::vector<Alt> LoopBody(const SourceElement& e, int depth) {
    if (e.element.kind != ElementKind::kRule || depth >= kMaxDepth) return {{e}};
    const uint32_t id = e.element.arg;
    const ParsedRule& r = rules_[id];
    if (r.kind == RuleKind::kNamed) return {{e}};  // referenced from anywhere, maybe recursive: as it is
    if (body_[id]) return *body_[id];
    std::vector<Alt> out;
    auto add_body = [&](const SourceElement& x) {
      for (Alt& u : LoopBody(x, depth + 1)) AddAlt(std::move(u), &out);
    };
    if (r.kind == RuleKind::kStar || r.kind == RuleKind::kOpt) {
      add_body(r.kind == RuleKind::kStar ? star_atom_[id] : r.alts[0][0]);  // (y*)* = (y?)* = y*
    } else {
      for (const Alt& alt : r.alts) {
        if (alt.empty()) continue;  // (A | "")* = A*
        if (alt.size() == 2 && IsStarOf(alt[1], alt[0])) {  // (y+)* = y*
          add_body(alt[0]);
        } else if (alt.size() == 1 ||
                   std::all_of(alt.begin(), alt.end(), [&](const SourceElement& x) { return Nullable(x); })) {
          for (const SourceElement& x : alt) add_body(x);  // (x? y?)* = (x | y)*; (A | (B | C))* = (A|B|C)*
        } else {
          AddAlt(alt, &out);
        }
      }
    }
    if (out.size() > kMaxBody) out = {{e}};
    body_[id] = out;
    return out;
  }

  // S ::= a S | ""  becomes  S ::= u1 S | u2 S | ... | ""  over a's loop body.
  void SimplifyStar(uint32_t s) {
    const SourceElement a = star_atom_[s];
    const SourceElement self = rules_[s].alts[0][1];
    if (a.element.kind != ElementKind::kRule || rules_[a.element.arg].kind == RuleKind::kNamed) return;
    std::vector<Alt> alts = LoopBody(a, 0);
    for (Alt& u : alts) u.push_back(self);
    alts.push_back({});
    rules_[s].alts = std::move(alts);
  }

  std::vector<ParsedRule>& rules_;
  std::vector<bool> nullable_;
  std::vector<SourceElement> star_atom_;              // per kStar rule: its `a`, as parsed
  std::vector<std::optional<std::vector<Alt>>> body_;  // LoopBody per rule
};

}  // namespace

void CollapseNullableLoops(std::vector<ParsedRule>& rules) { Normalizer(rules).Run(); }

}  // namespace ember::grammar
