#include "template/lexer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "template/js_string.h"

namespace ember::jinja {
namespace {

// Preprocessed text plus, for every byte, its offset in the original template.
struct Source {
  std::string text;
  std::vector<uint32_t> origin;

  void Push(char c, uint32_t from) {
    text.push_back(c);
    origin.push_back(from);
  }
};

bool StartsWith(const std::string& s, size_t pos, const char* lit) {
  return s.compare(pos, std::strlen(lit), lit) == 0;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWordChar(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Length of the JS whitespace code point at pos, or 0.
size_t SpaceAt(const std::string& s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t next = pos;
  return IsJsSpace(NextCodePoint(s, &next)) ? next - pos : 0;
}

// Length of a line terminator as JS's multiline `^` sees one (\n, \r, U+2028, U+2029), or 0.
size_t LineBreakAt(const std::string& s, size_t pos) {
  if (s[pos] == '\n' || s[pos] == '\r') return 1;
  if (StartsWith(s, pos, "\xE2\x80\xA8") || StartsWith(s, pos, "\xE2\x80\xA9")) return 3;
  return 0;
}

// lstrip_blocks: spaces/tabs at the start of a line go when the line continues with {%, {# or {-.
Source LstripBlocks(const Source& in) {
  Source out;
  const std::string& s = in.text;
  bool line_start = true;
  for (size_t i = 0; i < s.size();) {
    if (line_start) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j + 1 < s.size() && s[j] == '{' && (s[j + 1] == '%' || s[j + 1] == '#' || s[j + 1] == '-')) i = j;
      line_start = false;
      continue;
    }
    const size_t br = LineBreakAt(s, i);
    const size_t n = br ? br : 1;
    for (size_t k = 0; k < n; ++k) out.Push(s[i + k], in.origin[i + k]);
    i += n;
    line_start = br != 0;
  }
  return out;
}

// trim_blocks: the newline right after %}, #} (and, as the reference's pattern has it, -}) goes.
Source TrimBlocks(const Source& in) {
  Source out;
  const std::string& s = in.text;
  for (size_t i = 0; i < s.size(); ++i) {
    out.Push(s[i], in.origin[i]);
    if (i + 2 < s.size() && (s[i] == '#' || s[i] == '%' || s[i] == '-') && s[i + 1] == '}' && s[i + 2] == '\n') {
      out.Push('}', in.origin[i + 1]);
      i += 2;  // skip '}' (already pushed) and the newline
    }
  }
  return out;
}

// Matches `{%-? generation -?%}` / `endgeneration` at pos; returns its end and the two strip flags.
bool MatchGenerationTag(const std::string& s, size_t pos, size_t* end, bool* lstrip, bool* rstrip) {
  if (!StartsWith(s, pos, "{%")) return false;
  size_t i = pos + 2;
  *lstrip = i < s.size() && s[i] == '-';
  if (*lstrip) ++i;
  while (size_t n = SpaceAt(s, i)) i += n;
  if (StartsWith(s, i, "end")) i += 3;
  if (!StartsWith(s, i, "generation")) return false;
  i += 10;
  while (size_t n = SpaceAt(s, i)) i += n;
  *rstrip = i < s.size() && s[i] == '-';
  if (*rstrip) ++i;
  if (!StartsWith(s, i, "%}")) return false;
  *end = i + 2;
  return true;
}

// transformers' `{% generation %}` marks assistant spans for training masks; rendering drops the tag
// (and, with `-`, the whitespace run next to it).
Source RemoveGenerationTags(const Source& in) {
  Source out;
  const std::string& s = in.text;
  size_t copied = 0;    // s[0, copied) is already in out
  size_t consumed = 0;  // end of the previous match: a whitespace run cannot reach back past it
  for (size_t i = 0; i < s.size(); ++i) {
    size_t end = 0;
    bool lstrip = false, rstrip = false;
    if (s[i] != '{' || !MatchGenerationTag(s, i, &end, &lstrip, &rstrip)) continue;
    size_t before = i;  // start of the whitespace run just before the tag
    while (before > consumed && before > copied) {
      size_t k = before - 1;
      while (k > consumed && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
      if (SpaceAt(s, k) != before - k) break;
      before = k;
    }
    size_t after = end;
    while (size_t n = SpaceAt(s, after)) after += n;
    for (size_t k = copied; k < (lstrip ? before : i); ++k) out.Push(s[k], in.origin[k]);
    if (!rstrip) for (size_t k = end; k < after; ++k) out.Push(s[k], in.origin[k]);
    copied = consumed = after;
    i = after - 1;
  }
  for (size_t k = copied; k < s.size(); ++k) out.Push(s[k], in.origin[k]);
  return out;
}

Source Preprocess(const std::string& text, const LexOptions& opts) {
  Source src;
  size_t n = text.size();
  if (n > 0 && text[n - 1] == '\n') --n;  // a single trailing newline is dropped
  src.text = text.substr(0, n);
  src.origin.resize(n);
  for (size_t i = 0; i < n; ++i) src.origin[i] = static_cast<uint32_t>(i);
  if (opts.lstrip_blocks) src = LstripBlocks(src);
  if (opts.trim_blocks) src = TrimBlocks(src);
  return RemoveGenerationTags(src);
}

}  // namespace

// The tokenizer proper: a cursor over the preprocessed text.
class Lexer {
 public:
  Lexer(const std::string& original, Source src) : original_(original), src_(std::move(src)) {
    for (size_t i = 0; i < original_.size(); ++i) {
      if (original_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
    }
  }

  StatusOr<std::vector<Token>> Run();

 private:
  const std::string& s() const { return src_.text; }
  bool At(const char* lit) const { return StartsWith(src_.text, pos_, lit); }
  Status Error(const std::string& msg, size_t at) const;
  void Push(TokenType type, std::string value, size_t at);
  bool LastIs(std::initializer_list<TokenType> types) const;
  void StripTrailingWhitespace();
  void SkipWhitespace() { while (size_t n = SpaceAt(s(), pos_)) pos_ += n; }
  void LexText();
  Status LexComment();
  StatusOr<bool> LexSign();
  bool LexOperator();
  Status LexString();
  void LexNumber(std::string prefix, size_t start);

  const std::string& original_;
  Source src_;
  std::vector<uint32_t> line_starts_ = {0};
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int brace_depth_ = 0;  // inside a dict literal, `}}` closes braces, not the expression
};

Status Lexer::Error(const std::string& msg, size_t at) const {
  Token t{TokenType::kText, "", 1, 1};
  const uint32_t off = at < src_.origin.size() ? src_.origin[at] : static_cast<uint32_t>(original_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off) - 1;
  t.line = static_cast<int>(it - line_starts_.begin()) + 1;
  t.column = static_cast<int>(off - *it) + 1;
  return InvalidArgument("template syntax error at line " + std::to_string(t.line) + ", column " +
                         std::to_string(t.column) + ": " + msg);
}

void Lexer::Push(TokenType type, std::string value, size_t at) {
  const uint32_t off = at < src_.origin.size() ? src_.origin[at] : static_cast<uint32_t>(original_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off) - 1;
  tokens_.push_back(Token{type, std::move(value), static_cast<int>(it - line_starts_.begin()) + 1,
                          static_cast<int>(off - *it) + 1});
}

bool Lexer::LastIs(std::initializer_list<TokenType> types) const {
  if (tokens_.empty()) return false;
  return std::find(types.begin(), types.end(), tokens_.back().type) != types.end();
}

void Lexer::StripTrailingWhitespace() {
  if (!LastIs({TokenType::kText})) return;
  tokens_.back().value = JsTrimEnd(tokens_.back().value);
  if (tokens_.back().value.empty()) tokens_.pop_back();
}

void Lexer::LexText() {
  const size_t start = pos_;
  while (pos_ < s().size() &&
         !(s()[pos_] == '{' && pos_ + 1 < s().size() && (s()[pos_ + 1] == '%' || s()[pos_ + 1] == '{' || s()[pos_ + 1] == '#'))) {
    ++pos_;
  }
  if (pos_ > start) Push(TokenType::kText, s().substr(start, pos_ - start), start);
}

Status Lexer::LexComment() {
  const size_t start = pos_;
  pos_ += 2;
  const bool strip_before = pos_ < s().size() && s()[pos_] == '-';
  if (strip_before) ++pos_;
  const size_t close = s().find("#}", pos_);
  if (close == std::string::npos) return Error("missing end of comment tag '#}'", start);
  std::string body = s().substr(pos_, close - pos_);
  const bool strip_after = !body.empty() && body.back() == '-';
  if (strip_after) body.pop_back();
  if (strip_before) StripTrailingWhitespace();
  Push(TokenType::kComment, std::move(body), start);
  pos_ = close + 2;
  if (strip_after) SkipWhitespace();
  return Status::Ok();
}

// A '+'/'-' is unary unless it follows an operand; a unary sign glued to digits is a signed literal.
StatusOr<bool> Lexer::LexSign() {
  const char c = s()[pos_];
  if (tokens_.empty() || LastIs({TokenType::kText})) return Error(std::string("unexpected character '") + c + "'", pos_);
  if (LastIs({TokenType::kIdentifier, TokenType::kNumber, TokenType::kString, TokenType::kCloseParen,
              TokenType::kCloseBracket})) {
    return false;  // binary operator: handled by the operator table
  }
  const size_t start = pos_++;
  if (pos_ < s().size() && IsDigit(s()[pos_])) {
    LexNumber(std::string(1, c), start);
  } else {
    Push(TokenType::kUnary, std::string(1, c), start);
  }
  return true;
}

void Lexer::LexNumber(std::string prefix, size_t start) {
  std::string num = std::move(prefix);
  while (pos_ < s().size() && IsDigit(s()[pos_])) num += s()[pos_++];
  // `x.0.y`: after a dot the digits are an index, never a float's fraction.
  const bool after_dot = LastIs({TokenType::kDot});
  if (!after_dot && pos_ + 1 < s().size() && s()[pos_] == '.' && IsDigit(s()[pos_ + 1])) {
    num += s()[pos_++];
    while (pos_ < s().size() && IsDigit(s()[pos_])) num += s()[pos_++];
  }
  Push(TokenType::kNumber, std::move(num), start);
}

bool Lexer::LexOperator() {
  static const std::pair<const char*, TokenType> kTable[] = {
      {"{%", TokenType::kOpenStatement}, {"%}", TokenType::kCloseStatement},
      {"{{", TokenType::kOpenExpression}, {"}}", TokenType::kCloseExpression},
      {"(", TokenType::kOpenParen}, {")", TokenType::kCloseParen}, {"{", TokenType::kOpenBrace},
      {"}", TokenType::kCloseBrace}, {"[", TokenType::kOpenBracket}, {"]", TokenType::kCloseBracket},
      {",", TokenType::kComma}, {".", TokenType::kDot}, {":", TokenType::kColon}, {"|", TokenType::kPipe},
      {"<=", TokenType::kComparison}, {">=", TokenType::kComparison}, {"==", TokenType::kComparison},
      {"!=", TokenType::kComparison}, {"<", TokenType::kComparison}, {">", TokenType::kComparison},
      {"+", TokenType::kAdditive}, {"-", TokenType::kAdditive}, {"~", TokenType::kAdditive},
      {"**", TokenType::kPower}, {"*", TokenType::kMultiplicative}, {"//", TokenType::kMultiplicative},
      {"/", TokenType::kMultiplicative}, {"%", TokenType::kMultiplicative}, {"=", TokenType::kEquals},
  };
  for (const auto& [lit, type] : kTable) {
    if (type == TokenType::kCloseExpression && brace_depth_ > 0) continue;
    if (!At(lit)) continue;
    if (type == TokenType::kOpenExpression) brace_depth_ = 0;
    if (type == TokenType::kOpenBrace) ++brace_depth_;
    if (type == TokenType::kCloseBrace) --brace_depth_;
    Push(type, lit, pos_);
    pos_ += std::strlen(lit);
    return true;
  }
  return false;
}

Status Lexer::LexString() {
  const size_t start = pos_;
  const char quote = s()[pos_++];
  std::string out;
  while (true) {
    if (pos_ >= s().size()) return Error("unterminated string literal", start);
    const char c = s()[pos_];
    if (c == quote) break;
    if (c != '\\') {
      out += c;
      ++pos_;
      continue;
    }
    if (++pos_ >= s().size()) return Error("unterminated string literal", start);
    const char e = s()[pos_++];
    static const char kEscapes[] = "n\nt\tr\rb\bf\fv\v''\"\"\\\\";
    const char* hit = nullptr;
    for (const char* p = kEscapes; *p; p += 2) if (*p == e) hit = p;
    if (hit) {
      out += hit[1];
    } else if (e == 'x' || e == 'u') {
      const size_t len = e == 'x' ? 2 : 4;
      const std::string hex = s().substr(pos_, len);
      if (hex.size() != len || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        return Error("invalid hexadecimal escape sequence \\" + std::string(1, e) + hex, pos_ - 2);
      }
      AppendUtf8(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)), &out);
      pos_ += len;
    } else {
      // Includes `\` before a newline, which Python Jinja reads as a line continuation: the reference
      // rejects it, so ember does too rather than render differently.
      return Error(std::string("unexpected escaped character '") + e + "' in string literal", pos_ - 2);
    }
  }
  ++pos_;  // closing quote
  Push(TokenType::kString, std::move(out), start);
  return Status::Ok();
}

StatusOr<std::vector<Token>> Lexer::Run() {
  while (pos_ < s().size()) {
    if (tokens_.empty() || LastIs({TokenType::kCloseStatement, TokenType::kCloseExpression, TokenType::kComment})) {
      const size_t before = tokens_.size();
      LexText();
      if (tokens_.size() != before) continue;
    }
    if (At("{#")) {
      EMBER_RETURN_IF_ERROR(LexComment());
      continue;
    }
    if (At("{%-") || At("{{-")) {
      StripTrailingWhitespace();
      const bool stmt = At("{%-");
      if (!stmt) brace_depth_ = 0;
      Push(stmt ? TokenType::kOpenStatement : TokenType::kOpenExpression, stmt ? "{%" : "{{", pos_);
      pos_ += 3;
      continue;
    }
    SkipWhitespace();
    if (pos_ >= s().size()) break;
    if (At("-%}") || At("-}}")) {
      const bool stmt = At("-%}");
      Push(stmt ? TokenType::kCloseStatement : TokenType::kCloseExpression, stmt ? "%}" : "}}", pos_);
      pos_ += 3;
      SkipWhitespace();
      continue;
    }
    const char c = s()[pos_];
    if (c == '-' || c == '+') {
      EMBER_ASSIGN_OR_RETURN(bool done, LexSign());
      if (done) continue;
    }
    if (LexOperator()) continue;
    if (c == '\'' || c == '"') {
      EMBER_RETURN_IF_ERROR(LexString());
    } else if (IsDigit(c)) {
      LexNumber("", pos_);
    } else if (IsWordChar(c)) {
      const size_t start = pos_;
      while (pos_ < s().size() && IsWordChar(s()[pos_])) ++pos_;
      Push(TokenType::kIdentifier, s().substr(start, pos_ - start), start);
    } else {
      return Error(std::string("unexpected character '") + c + "'", pos_);
    }
  }
  return std::move(tokens_);
}

StatusOr<std::vector<Token>> Tokenize(const std::string& text, const LexOptions& opts) {
  Lexer lexer(text, Preprocess(text, opts));
  return lexer.Run();
}

}  // namespace ember::jinja
