#include "grammar/json_schema_regex.h"

#include <vector>

#include "grammar/json_schema_text.h"

namespace ember::grammar::schema_regex {

namespace {

using schema_text::CharSet;

constexpr int kMaxRepeat = 1024;  // grammar.h's GbnfLimits::max_repeat
constexpr int kMaxDepth = 32;     // group nesting

class RegexParser {
 public:
  explicit RegexParser(std::string_view p) : p_(p) {}

  StatusOr<std::string> Top(const std::string& any_char) {
    std::vector<std::string> alts;
    do {
      bool start_anchor = Eat('^');
      std::string body;
      Status s = Concat(0, &body);
      if (!s.ok()) return s;
      bool end_anchor = false;
      if (Peek('$')) {
        ++i_;
        end_anchor = true;
      }
      if (i_ < p_.size() && !Peek('|')) return Error("unexpected '" + std::string(1, p_[i_]) + "'");
      std::string alt;
      if (!start_anchor) alt = any_char + "*";
      if (!body.empty()) alt += (alt.empty() ? "" : " ") + body;
      if (!end_anchor) alt += (alt.empty() ? "" : " ") + any_char + "*";
      alts.push_back(alt);
    } while (Eat('|'));
    if (i_ != p_.size()) return Error("unexpected '" + std::string(1, p_[i_]) + "'");
    return Group(alts);
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("pattern: " + what + " at offset " + std::to_string(i_) + " is not supported");
  }
  bool Peek(char c) const { return i_ < p_.size() && p_[i_] == c; }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++i_;
    return true;
  }

  // An alternation's text from its alternatives; an empty alternative makes the whole group optional.
  static std::string Group(const std::vector<std::string>& alts) {
    std::vector<std::string> nonempty;
    for (const std::string& a : alts) if (!a.empty()) nonempty.push_back(a);
    if (nonempty.empty()) return "";
    std::string s;
    if (nonempty.size() == 1 && nonempty.size() == alts.size()) return std::string("(").append(nonempty[0]).append(")");
    s = "(";
    for (size_t i = 0; i < nonempty.size(); ++i) s += (i ? " | " : "") + nonempty[i];
    s += ")";
    if (nonempty.size() != alts.size()) s += "?";
    return s;
  }

  Status Alternation(int depth, std::string* out) {
    if (depth > kMaxDepth) return Error("groups nested deeper than " + std::to_string(kMaxDepth));
    std::vector<std::string> alts;
    do {
      std::string body;
      Status s = Concat(depth, &body);
      if (!s.ok()) return s;
      alts.push_back(body);
    } while (Eat('|'));
    *out = Group(alts);
    return Status::Ok();
  }

  // A sequence of quantified atoms, up to '|', ')' or the end (or a top-level '$' at the very end).
  Status Concat(int depth, std::string* out) {
    std::vector<std::string> parts;
    while (i_ < p_.size() && !Peek('|') && !Peek(')')) {
      if (Peek('$')) {
        if (depth == 0 && (i_ + 1 == p_.size() || p_[i_ + 1] == '|')) break;
        return Error("anchor '$' inside the pattern (only at the end of an alternative)");
      }
      if (Peek('^')) return Error("anchor '^' inside the pattern (only at the start of an alternative)");
      std::string atom;
      Status s = Atom(depth, &atom);
      if (!s.ok()) return s;
      s = Quantifier(&atom);
      if (!s.ok()) return s;
      if (!atom.empty()) parts.push_back(atom);
    }
    std::string joined;
    for (size_t k = 0; k < parts.size(); ++k) joined += (k ? " " : "") + parts[k];
    *out = joined;
    return Status::Ok();
  }

  Status Quantifier(std::string* atom) {
    if (i_ >= p_.size()) return Status::Ok();
    const char c = p_[i_];
    std::string q;
    if (c == '?' || c == '*' || c == '+') {
      ++i_;
      q = std::string(1, c);
    } else if (c == '{') {
      const size_t start = i_++;
      int m = 0, n = -1;
      if (!Number(&m)) {
        i_ = start;
        return Error("'{' that is not a quantifier {m,n}");
      }
      if (Eat(',')) {
        if (!Peek('}')) {
          if (!Number(&n)) return Error("quantifier {m,n} without n");
        } else {
          n = -2;  // {m,}
        }
      } else {
        n = m;
      }
      if (!Eat('}')) return Error("unterminated quantifier");
      if (m > kMaxRepeat || n > kMaxRepeat) return Error("repetition count above " + std::to_string(kMaxRepeat));
      if (n >= 0 && n < m) return Error("quantifier {m,n} with n < m");
      q = n == -2 ? "{" + std::to_string(m) + ",}" : "{" + std::to_string(m) + "," + std::to_string(n) + "}";
    } else {
      return Status::Ok();
    }
    Eat('?');  // lazy: the same language
    if (Peek('?') || Peek('*') || Peek('+') || Peek('{')) return Error("a quantifier after a quantifier");
    if (atom->empty()) return Error("a quantifier on nothing");
    *atom = std::string("(").append(*atom).append(")").append(q);
    return Status::Ok();
  }

  bool Number(int* v) {
    size_t start = i_;
    long long x = 0;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9' && i_ - start < 6) x = x * 10 + (p_[i_++] - '0');
    if (i_ == start || (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9')) return false;
    *v = static_cast<int>(x);
    return true;
  }

  // Next code point of the pattern (UTF-8), advancing past it.
  uint32_t CodePoint() {
    const unsigned char c = static_cast<unsigned char>(p_[i_++]);
    if (c < 0x80) return c;
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    uint32_t cp = c & (0x3F >> extra);
    for (int k = 0; k < extra && i_ < p_.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(p_[i_++]) & 0x3F);
    return cp;
  }

  static CharSet Single(uint32_t c) {
    CharSet s;
    s.Add(c, c);
    return s;
  }
  static CharSet Digits() { CharSet s; s.Add('0', '9'); return s; }
  static CharSet Word() {
    CharSet s;
    s.Add('0', '9'); s.Add('a', 'z'); s.Add('A', 'Z'); s.Add('_', '_');
    return s;
  }
  static CharSet Space() {
    CharSet s;
    s.Add('\t', '\r'); s.Add(' ', ' '); s.Add(0xA0, 0xA0); s.Add(0x2028, 0x2029); s.Add(0xFEFF, 0xFEFF);
    return s;
  }

  // After a backslash: the set the escape stands for (one character for most).
  Status Escape(bool in_class, CharSet* out) {
    if (i_ >= p_.size()) return Error("a trailing backslash");
    const char c = p_[i_];
    auto negate = [](CharSet s) { s.negated = true; return s; };
    switch (c) {
      case 'd': ++i_; *out = Digits(); return Status::Ok();
      case 'w': ++i_; *out = Word(); return Status::Ok();
      case 's': ++i_; *out = Space(); return Status::Ok();
      case 'D': case 'W': case 'S':
        if (in_class) return Error("'\\" + std::string(1, c) + "' inside a class");
        ++i_;
        *out = negate(c == 'D' ? Digits() : c == 'W' ? Word() : Space());
        return Status::Ok();
      case 'n': ++i_; *out = Single('\n'); return Status::Ok();
      case 't': ++i_; *out = Single('\t'); return Status::Ok();
      case 'r': ++i_; *out = Single('\r'); return Status::Ok();
      case 'f': ++i_; *out = Single('\f'); return Status::Ok();
      case 'v': ++i_; *out = Single('\v'); return Status::Ok();
      case '0': ++i_; *out = Single(0); return Status::Ok();
      case 'x': case 'u': {
        const int n = c == 'x' ? 2 : 4;
        if (i_ + n >= p_.size()) return Error("'\\" + std::string(1, c) + "' escape");
        uint32_t v = 0;
        for (int k = 1; k <= n; ++k) {
          const char h = p_[i_ + k];
          const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (d < 0) return Error("'\\" + std::string(1, c) + "' escape");
          v = v * 16 + d;
        }
        i_ += n + 1;
        *out = Single(v);
        return Status::Ok();
      }
      case 'b': if (in_class) { ++i_; *out = Single('\b'); return Status::Ok(); }
                return Error("word boundary '\\b'");
      case 'B': return Error("'\\B'");
      case 'p': case 'P': return Error("unicode property '\\" + std::string(1, c) + "'");
      case 'k': return Error("backreference '\\k'");
      case 'c': return Error("control escape '\\c'");
      default:
        if (c >= '1' && c <= '9') return Error("backreference '\\" + std::string(1, c) + "'");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Error("escape '\\" + std::string(1, c) + "'");
        *out = Single(CodePoint());
        return Status::Ok();
    }
  }

  Status Class(std::string* out) {
    CharSet set;
    if (Eat('^')) set.negated = true;
    bool first = true;
    while (i_ < p_.size() && (first || !Peek(']'))) {
      first = false;
      CharSet lo;
      if (Eat('\\')) {
        Status s = Escape(true, &lo);
        if (!s.ok()) return s;
      } else {
        lo = Single(CodePoint());
      }
      const bool single = lo.ranges.size() == 1 && lo.ranges[0].first == lo.ranges[0].second && !lo.negated;
      if (single && Peek('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        CharSet hi;
        if (Eat('\\')) {
          Status s = Escape(true, &hi);
          if (!s.ok()) return s;
        } else {
          hi = Single(CodePoint());
        }
        if (hi.ranges.size() != 1 || hi.ranges[0].first != hi.ranges[0].second) return Error("a class range to a set");
        if (hi.ranges[0].first < lo.ranges[0].first) return Error("a class range out of order");
        set.Add(lo.ranges[0].first, hi.ranges[0].first);
        continue;
      }
      for (const auto& r : lo.ranges) set.Add(r.first, r.second);
    }
    if (!Eat(']')) return Error("an unterminated class");
    *out = schema_text::JsonContentUnit(set);
    if (out->empty()) return Error("a class no character matches");
    return Status::Ok();
  }

  Status Atom(int depth, std::string* out) {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (Eat('?')) {
        if (Eat(':')) {
        } else if (Peek('<') && i_ + 1 < p_.size() && p_[i_ + 1] != '=' && p_[i_ + 1] != '!') {
          while (i_ < p_.size() && !Peek('>')) ++i_;  // named group: the name changes nothing
          if (!Eat('>')) return Error("an unterminated group name");
        } else {
          return Error("lookaround or group flag '(?" + std::string(1, i_ < p_.size() ? p_[i_] : ' ') + "'");
        }
      }
      Status s = Alternation(depth + 1, out);
      if (!s.ok()) return s;
      if (!Eat(')')) return Error("an unclosed group");
      return Status::Ok();
    }
    if (c == ')') return Error("an unmatched ')'");
    if (c == '[') {
      ++i_;
      return Class(out);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') return Error("a quantifier on nothing");
    CharSet set;
    if (c == '.') {
      ++i_;
      set.negated = true;
      set.Add('\n', '\n'); set.Add('\r', '\r'); set.Add(0x2028, 0x2029);
    } else if (c == '\\') {
      ++i_;
      Status s = Escape(false, &set);
      if (!s.ok()) return s;
    } else {
      set = Single(CodePoint());
    }
    *out = schema_text::JsonContentUnit(set);
    if (out->empty()) return Error("a character JSON cannot carry");
    return Status::Ok();
  }

  std::string_view p_;
  size_t i_ = 0;
};

}  // namespace

StatusOr<std::string> PatternToGbnf(std::string_view pattern, const std::string& any_char) {
  RegexParser parser(pattern);
  return parser.Top(any_char);
}

}  // namespace ember::grammar::schema_regex
