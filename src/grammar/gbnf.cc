// ParseGbnf: a recursive-descent parser over GBNF text into the flat Grammar of grammar_impl.h, then the
// checks that make matching total (grammar_checks.cc): every rule defined, productive and free of left
// recursion.
//
// Syntax accepted (a superset of llama.cpp's): newlines are whitespace everywhere, and a rule ends where
// the next `name ::=` begins, so an alternative may continue on the next line without parentheses.
#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/gbnf_rules.h"
#include "grammar/grammar_checks.h"
#include "grammar/grammar_impl.h"
#include "grammar/utf8.h"

namespace ember::grammar {

constexpr int kMaxStackedOperators = 3;  // x?+* is already more than any real grammar needs

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class Parser {
 public:
  Parser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  StatusOr<std::shared_ptr<const Grammar>> Run(std::string_view root);

 private:
  Status Error(size_t pos, const std::string& what) const {
    return InvalidArgument("grammar: " + LineColumn(text_, pos) + ": " + what);
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void SkipSpace();
  static bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  std::string_view ScanName(size_t at) const;
  bool AtRuleStart() const;  // `name ::=` ahead
  StatusOr<uint32_t> RuleId(std::string_view name, size_t at);
  StatusOr<uint32_t> NewRule(const std::string& name, size_t at, RuleKind kind = RuleKind::kNamed);
  Status ParseRule();
  Status ParseAlternates(uint32_t rule, size_t depth);
  Status ParseSequence(std::vector<SourceElement>& out, size_t depth);
  Status ParseLiteral(std::vector<SourceElement>& out);
  Status ParseClass(std::vector<SourceElement>& out);
  StatusOr<uint32_t> ParseChar(bool in_class);  // one code point, escapes resolved
  Status ParseRepeat(std::vector<SourceElement>& out, size_t atom_begin, size_t atom_pos, uint32_t min,
                     uint32_t max);  // max == UINT32_MAX: unbounded
  StatusOr<uint32_t> ParseCount();
  uint32_t AddClass(CharClass cls);
  Status CountElements(size_t n, size_t at);
  Status TryFirstStates(const Grammar& g) const;
  static constexpr uint32_t kProbeStates = 8;

  std::string_view text_;
  const GbnfLimits& limits_;
  size_t pos_ = 0;
  std::vector<ParsedRule> rules_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharClass> classes_;
  std::unordered_map<std::string, uint32_t> class_ids_;  // dedupe: key = the ranges' bytes
  size_t n_elements_ = 0;
  uint32_t current_rule_ = 0;
  uint32_t n_synth_ = 0;
};

void Parser::SkipSpace() {
  while (!AtEnd()) {
    const char c = Peek();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++pos_;
    } else if (c == '#') {
      while (!AtEnd() && Peek() != '\n') ++pos_;
    } else {
      break;
    }
  }
}

std::string_view Parser::ScanName(size_t at) const {
  size_t end = at;
  while (end < text_.size() && IsNameChar(text_[end])) ++end;
  return text_.substr(at, end - at);
}

bool Parser::AtRuleStart() const {
  const std::string_view name = ScanName(pos_);
  if (name.empty()) return false;
  size_t p = pos_ + name.size();
  while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
  return text_.substr(p, 3) == "::=";
}

StatusOr<uint32_t> Parser::NewRule(const std::string& name, size_t at, RuleKind kind) {
  if (rules_.size() >= limits_.max_rules) {
    return Error(at, "more than " + std::to_string(limits_.max_rules) +
                         " rules (after expanding groups and repetitions; limit max_rules)");
  }
  rules_.emplace_back();
  rules_.back().def_pos = at;
  rules_.back().first_ref = at;
  rules_.back().kind = kind;
  names_.push_back(name);
  return static_cast<uint32_t>(rules_.size() - 1);
}

StatusOr<uint32_t> Parser::RuleId(std::string_view name, size_t at) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  EMBER_ASSIGN_OR_RETURN(uint32_t id, NewRule(std::string(name), at));
  ids_.emplace(std::string(name), id);
  return id;
}

uint32_t Parser::AddClass(CharClass cls) {
  std::string key;
  for (const auto& [lo, hi] : cls.ranges) {
    key.append(reinterpret_cast<const char*>(&lo), sizeof lo);
    key.append(reinterpret_cast<const char*>(&hi), sizeof hi);
  }
  auto it = class_ids_.find(key);
  if (it != class_ids_.end()) return it->second;
  cls.Finish();
  classes_.push_back(std::move(cls));
  const uint32_t id = static_cast<uint32_t>(classes_.size() - 1);
  class_ids_.emplace(std::move(key), id);
  return id;
}

Status Parser::CountElements(size_t n, size_t at) {
  n_elements_ += n;
  if (n_elements_ > limits_.max_elements) {
    return Error(at, "more than " + std::to_string(limits_.max_elements) +
                         " elements (after expanding repetitions; limit max_elements)");
  }
  return Status::Ok();
}

StatusOr<uint32_t> Parser::ParseChar(bool in_class) {
  const size_t at = pos_;
  if (Peek() != '\\') {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text_.substr(pos_), &cp);
    if (n == 0) return Error(at, "invalid UTF-8 in the grammar text");
    pos_ += n;
    return cp;
  }
  ++pos_;
  if (AtEnd()) return Error(at, "unfinished escape at the end of the text");
  const char e = Peek();
  ++pos_;
  int hex = 0;
  switch (e) {
    case 'n': return uint32_t{'\n'};
    case 'r': return uint32_t{'\r'};
    case 't': return uint32_t{'\t'};
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
      return static_cast<uint32_t>(static_cast<unsigned char>(e));
    case 'x': hex = 2; break;
    case 'u': hex = 4; break;
    case 'U': hex = 8; break;
    default:
      return Error(at, std::string("unknown escape \\") + (e >= 0x20 && e < 0x7f ? std::string(1, e) : "?") +
                           (in_class ? " in a character class" : " in a literal"));
  }
  uint32_t v = 0;
  for (int i = 0; i < hex; ++i) {
    const char h = Peek();
    int d = -1;
    if (h >= '0' && h <= '9') d = h - '0';
    if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
    if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
    if (d < 0) return Error(pos_, "escape \\" + std::string(1, e) + " needs " + std::to_string(hex) + " hex digits");
    v = v * 16 + static_cast<uint32_t>(d);
    ++pos_;
  }
  if (v > kMaxCodePoint) return Error(at, "code point above U+10FFFF");
  if (v >= 0xD800 && v <= 0xDFFF) return Error(at, "surrogate code point (not a character)");
  return v;
}

Status Parser::ParseLiteral(std::vector<SourceElement>& out) {
  const size_t open = pos_;
  ++pos_;  // "
  size_t n = 0;
  while (true) {
    if (AtEnd()) return Error(open, "unterminated literal");
    if (Peek() == '"') break;
    const size_t at = pos_;
    EMBER_ASSIGN_OR_RETURN(uint32_t cp, ParseChar(false));
    CharClass cls;
    cls.ranges.emplace_back(cp, cp);
    out.push_back({{ElementKind::kChars, AddClass(std::move(cls))}, at});
    ++n;
  }
  ++pos_;
  return CountElements(n, open);
}

Status Parser::ParseClass(std::vector<SourceElement>& out) {
  const size_t open = pos_;
  ++pos_;  // [
  bool negated = false;
  if (Peek() == '^') {
    negated = true;
    ++pos_;
  }
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  while (true) {
    if (AtEnd()) return Error(open, "unterminated character class");
    if (Peek() == ']') break;
    const size_t at = pos_;
    EMBER_ASSIGN_OR_RETURN(uint32_t lo, ParseChar(true));
    uint32_t hi = lo;
    if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
      ++pos_;
      EMBER_ASSIGN_OR_RETURN(hi, ParseChar(true));
      if (hi < lo) return Error(at, "character range is reversed (its end is below its start)");
    }
    ranges.emplace_back(lo, hi);
  }
  ++pos_;
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<std::pair<uint32_t, uint32_t>> comp;
    uint32_t next = 0;
    for (const auto& [lo, hi] : merged) {
      if (lo > next) comp.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCodePoint) comp.emplace_back(next, kMaxCodePoint);
    merged = std::move(comp);
  }
  CharClass cls;
  cls.ranges = RemoveSurrogates(merged);
  out.push_back({{ElementKind::kChars, AddClass(std::move(cls))}, open});
  return CountElements(1, open);
}

StatusOr<uint32_t> Parser::ParseCount() {
  const size_t at = pos_;
  size_t end = pos_;
  while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
  if (end == pos_) return Error(at, "expected a number in {m,n}");
  if (end - pos_ > 9) return Error(at, "repetition count above " + std::to_string(limits_.max_repeat) + " (limit max_repeat)");
  uint32_t v = 0;
  std::from_chars(text_.data() + pos_, text_.data() + end, v);
  if (v > limits_.max_repeat) {
    return Error(at, "repetition count " + std::to_string(v) + " above " + std::to_string(limits_.max_repeat) +
                         " (limit max_repeat)");
  }
  pos_ = end;
  return v;
}

// x{min,max}: `min` copies of the atom, then either a star rule (S ::= atom S | "") or a chain of
// max - min optional rules (O_k ::= atom O_{k-1} | ""). A multi-element atom first becomes a rule of
// its own, so each copy costs one element.
Status Parser::ParseRepeat(std::vector<SourceElement>& out, size_t atom_begin, size_t atom_pos, uint32_t min,
                           uint32_t max) {
  std::vector<SourceElement> atom(out.begin() + static_cast<std::ptrdiff_t>(atom_begin), out.end());
  out.resize(atom_begin);
  if (atom.size() != 1) {
    EMBER_ASSIGN_OR_RETURN(uint32_t r, NewRule(names_[current_rule_] + "_" + std::to_string(++n_synth_), atom_pos,
                                               RuleKind::kGroup));
    rules_[r].alts.push_back(std::move(atom));
    rules_[r].defined = true;
    atom = {{{ElementKind::kRule, r}, atom_pos}};
  }
  const SourceElement a = atom[0];
  EMBER_RETURN_IF_ERROR(CountElements(min, atom_pos));
  for (uint32_t i = 0; i < min; ++i) out.push_back(a);
  if (max == UINT32_MAX) {
    EMBER_ASSIGN_OR_RETURN(uint32_t s, NewRule(names_[current_rule_] + "_star" + std::to_string(++n_synth_), atom_pos,
                                               RuleKind::kStar));
    rules_[s].alts.push_back({a, {{ElementKind::kRule, s}, atom_pos}});
    rules_[s].alts.push_back({});
    rules_[s].defined = true;
    EMBER_RETURN_IF_ERROR(CountElements(3, atom_pos));
    out.push_back({{ElementKind::kRule, s}, atom_pos});
    return Status::Ok();
  }
  uint32_t prev = UINT32_MAX;
  for (uint32_t k = min; k < max; ++k) {
    EMBER_ASSIGN_OR_RETURN(uint32_t o, NewRule(names_[current_rule_] + "_opt" + std::to_string(++n_synth_), atom_pos,
                                                   prev == UINT32_MAX ? RuleKind::kOpt : RuleKind::kGroup));
    std::vector<SourceElement> alt = {a};
    if (prev != UINT32_MAX) alt.push_back({{ElementKind::kRule, prev}, atom_pos});
    rules_[o].alts.push_back(std::move(alt));
    rules_[o].alts.push_back({});
    rules_[o].defined = true;
    EMBER_RETURN_IF_ERROR(CountElements(3, atom_pos));
    prev = o;
  }
  if (prev != UINT32_MAX) out.push_back({{ElementKind::kRule, prev}, atom_pos});
  return Status::Ok();
}

Status Parser::ParseSequence(std::vector<SourceElement>& out, size_t depth) {
  while (true) {
    SkipSpace();
    if (AtEnd()) return Status::Ok();
    const char c = Peek();
    if (c == '|' || c == ')') return Status::Ok();
    if (AtRuleStart()) return Status::Ok();
    const size_t atom_pos = pos_;
    const size_t atom_begin = out.size();
    if (c == '"') {
      EMBER_RETURN_IF_ERROR(ParseLiteral(out));
    } else if (c == '[') {
      EMBER_RETURN_IF_ERROR(ParseClass(out));
    } else if (c == '.') {
      ++pos_;
      CharClass any;
      any.ranges = RemoveSurrogates({{0, kMaxCodePoint}});
      out.push_back({{ElementKind::kChars, AddClass(std::move(any))}, atom_pos});
      EMBER_RETURN_IF_ERROR(CountElements(1, atom_pos));
    } else if (c == '(') {
      if (depth + 1 > limits_.max_nesting) {
        return Error(atom_pos, "groups nested deeper than " + std::to_string(limits_.max_nesting) + " (limit max_nesting)");
      }
      ++pos_;
      EMBER_ASSIGN_OR_RETURN(uint32_t g, NewRule(names_[current_rule_] + "_" + std::to_string(++n_synth_), atom_pos,
                                                 RuleKind::kGroup));
      rules_[g].defined = true;
      EMBER_RETURN_IF_ERROR(ParseAlternates(g, depth + 1));
      if (Peek() != ')') return Error(atom_pos, "unclosed '('");
      ++pos_;
      out.push_back({{ElementKind::kRule, g}, atom_pos});
      EMBER_RETURN_IF_ERROR(CountElements(1, atom_pos));
    } else if (IsNameChar(c)) {
      const std::string_view name = ScanName(pos_);
      EMBER_ASSIGN_OR_RETURN(uint32_t r, RuleId(name, atom_pos));
      pos_ += name.size();
      out.push_back({{ElementKind::kRule, r}, atom_pos});
      EMBER_RETURN_IF_ERROR(CountElements(1, atom_pos));
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      return Error(atom_pos, std::string("'") + c + "' with nothing before it to repeat");
    } else {
      const bool printable = c >= 0x20 && c < 0x7f;
      return Error(atom_pos, printable ? std::string("unexpected '") + c + "'" : "unexpected character");
    }
    // Postfix operators bind to the atom just parsed (a whole literal counts as one atom). A few stacked
    // are allowed, not more: no real grammar needs x?+*{2}..., and each costs a rule.
    int stacked = 0;
    while (true) {
      SkipSpace();
      const char op = Peek();
      if ((op == '*' || op == '+' || op == '?' || op == '{') && ++stacked > kMaxStackedOperators) {
        return Error(pos_, "more than " + std::to_string(kMaxStackedOperators) +
                               " repetition operators on one atom (group them instead)");
      }
      if (op == '*') {
        ++pos_;
        EMBER_RETURN_IF_ERROR(ParseRepeat(out, atom_begin, atom_pos, 0, UINT32_MAX));
      } else if (op == '+') {
        ++pos_;
        EMBER_RETURN_IF_ERROR(ParseRepeat(out, atom_begin, atom_pos, 1, UINT32_MAX));
      } else if (op == '?') {
        ++pos_;
        EMBER_RETURN_IF_ERROR(ParseRepeat(out, atom_begin, atom_pos, 0, 1));
      } else if (op == '{') {
        const size_t brace = pos_;
        ++pos_;
        SkipSpace();
        EMBER_ASSIGN_OR_RETURN(uint32_t min, ParseCount());
        SkipSpace();
        uint32_t max = min;
        if (Peek() == ',') {
          ++pos_;
          SkipSpace();
          if (Peek() == '}') {
            max = UINT32_MAX;
          } else {
            EMBER_ASSIGN_OR_RETURN(max, ParseCount());
            SkipSpace();
          }
        }
        if (Peek() != '}') return Error(brace, "unclosed '{' (expected {m}, {m,} or {m,n})");
        ++pos_;
        if (max < min) return Error(brace, "repetition {m,n} with n below m");
        EMBER_RETURN_IF_ERROR(ParseRepeat(out, atom_begin, atom_pos, min, max));
      } else {
        break;
      }
      // A repeated atom is now a single element (or none, for x{0}); a further operator repeats that.
      if (out.size() != atom_begin + 1) {
        // x{0} left nothing, or x{m} with m > 1 left copies: wrap them so a following operator sees one atom.
        SkipSpace();
        const char more = Peek();
        if (more == '*' || more == '+' || more == '?' || more == '{') {
          std::vector<SourceElement> copies(out.begin() + static_cast<std::ptrdiff_t>(atom_begin), out.end());
          out.resize(atom_begin);
          EMBER_ASSIGN_OR_RETURN(uint32_t w, NewRule(names_[current_rule_] + "_" + std::to_string(++n_synth_), atom_pos,
                                                             RuleKind::kGroup));
          rules_[w].alts.push_back(std::move(copies));
          rules_[w].defined = true;
          out.push_back({{ElementKind::kRule, w}, atom_pos});
        }
      }
    }
  }
}

Status Parser::ParseAlternates(uint32_t rule, size_t depth) {
  std::vector<std::vector<SourceElement>> alts;
  while (true) {
    std::vector<SourceElement> seq;
    EMBER_RETURN_IF_ERROR(ParseSequence(seq, depth));
    alts.push_back(std::move(seq));
    if (Peek() != '|') break;
    ++pos_;
  }
  rules_[rule].alts = std::move(alts);
  return Status::Ok();
}

Status Parser::ParseRule() {
  const size_t at = pos_;
  const std::string_view name = ScanName(pos_);
  if (name.empty() || !AtRuleStart()) {
    const char c = Peek();
    const bool printable = c >= 0x20 && c < 0x7f;
    return Error(at, std::string("expected a rule (name ::= ...)") +
                         (printable ? std::string(", found '") + c + "'" : std::string()));
  }
  EMBER_ASSIGN_OR_RETURN(uint32_t id, RuleId(name, at));
  if (rules_[id].defined) return Error(at, "rule '" + std::string(name) + "' is defined twice");
  rules_[id].defined = true;
  rules_[id].def_pos = at;
  pos_ += name.size();
  while (Peek() == ' ' || Peek() == '\t') ++pos_;
  pos_ += 3;  // ::=
  current_rule_ = id;
  EMBER_RETURN_IF_ERROR(ParseAlternates(id, 0));
  if (Peek() == ')') return Error(pos_, "')' without a matching '('");
  return Status::Ok();
}

StatusOr<std::shared_ptr<const Grammar>> Parser::Run(std::string_view root) {
  if (text_.size() > limits_.max_bytes) {
    return InvalidArgument("grammar: " + std::to_string(text_.size()) + " bytes, above the limit of " +
                           std::to_string(limits_.max_bytes) + " (limit max_bytes)");
  }
  SkipSpace();
  if (AtEnd()) return Error(pos_, "empty grammar (no rules)");
  while (true) {
    SkipSpace();
    if (AtEnd()) break;
    EMBER_RETURN_IF_ERROR(ParseRule());
  }
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (!rules_[i].defined) return Error(rules_[i].first_ref, "undefined rule '" + names_[i] + "'");
  }
  auto root_it = ids_.find(std::string(root));
  if (root_it == ids_.end()) return Error(0, "no rule named '" + std::string(root) + "' (the start rule)");

  CollapseNullableLoops(rules_);

  // Flatten, keeping each element's source position for the checks' messages.
  auto g = std::make_shared<Grammar>();
  CheckInput in;
  g->rules.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    for (auto& alt : rules_[r].alts) {
      g->rules[r].push_back(static_cast<uint32_t>(g->elements.size()));
      for (const SourceElement& e : alt) {
        g->elements.push_back(e.element);
        in.element_pos.push_back(e.pos);
      }
      g->elements.push_back({ElementKind::kEnd, 0});
      in.element_pos.push_back(rules_[r].def_pos);
    }
    in.rule_pos.push_back(rules_[r].def_pos);
  }
  g->classes = std::move(classes_);
  g->rule_names = std::move(names_);
  g->root = root_it->second;
  g->max_state_work = limits_.max_state_work;
  in.text = text_;
  EMBER_RETURN_IF_ERROR(CheckGrammar(*g, in));
  EMBER_RETURN_IF_ERROR(TryFirstStates(*g));
  return std::shared_ptr<const Grammar>(std::move(g));
}

// A grammar whose matcher states blow past max_state_work is refused here when its first states already
// do (where the repetitions and ambiguous rules a hostile grammar nests usually start), so a request
// gets a 400 instead of a generation that stops early. Later states are bounded by the same budget.
Status Parser::TryFirstStates(const Grammar& g) const {
  auto refuse = [&](const std::string& where) {
    return InvalidArgument("grammar: too ambiguous to match: " + where + " needs more than " +
                           std::to_string(limits_.max_state_work) +
                           " parse-stack expansions (limit max_state_work; nested repetitions of "
                           "things that can be empty, or nested rules that each call the next in several places, "
                           "multiply them)");
  };
  Automaton a(g);
  if (a.over_budget()) return refuse("the start state");
  // Bounded in all: at most this many states' worth of work, however many bytes that covers.
  const uint64_t total = uint64_t{kProbeStates} * limits_.max_state_work;
  for (int b = 0; b < 0x80 && a.total_work() <= total; ++b) {
    a.Next(a.start(), static_cast<uint8_t>(b));
    if (a.over_budget()) {
      const bool printable = b >= 0x20 && b < 0x7f;
      return refuse(std::string("the state after the first character ") +
                    (printable ? "'" + std::string(1, static_cast<char>(b)) + "'" : "0x" + std::to_string(b)));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> ParseGbnf(std::string_view text, std::string_view root,
                                                   const GbnfLimits& limits) {
  Parser p(text, limits);
  return p.Run(root);
}

}  // namespace ember::grammar
