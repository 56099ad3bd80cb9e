// Template text -> tokens. First the HF chat-template preprocessing (drop one trailing newline,
// lstrip_blocks, trim_blocks, remove transformers' `{% generation %}` tags), then the split into text,
// `{% %}` / `{{ }}` / `{# #}` delimiters and the expression tokens between them, applying `-` whitespace
// control. Every token remembers the line and column it came from in the ORIGINAL text, so errors point
// at what the template author wrote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::jinja {

enum class TokenType : uint8_t {
  kText, kOpenStatement, kCloseStatement, kOpenExpression, kCloseExpression, kComment,
  kNumber, kString, kIdentifier, kEquals, kOpenParen, kCloseParen, kOpenBracket, kCloseBracket,
  kOpenBrace, kCloseBrace, kComma, kDot, kColon, kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kComparison,      // < > <= >= == !=
  kUnary,           // a lone + or - in unary position
};

struct Token {
  TokenType type;
  std::string value;  // text, literal contents (escapes resolved), identifier, operator
  int line = 1;       // 1-based, in the original template
  int column = 1;     // 1-based, in bytes
};

// Whitespace settings; chat templates are always rendered with both on (as transformers and
// @huggingface/jinja do), so those are the defaults.
struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

StatusOr<std::vector<Token>> Tokenize(const std::string& text, const LexOptions& opts = {});

}  // namespace ember::jinja
