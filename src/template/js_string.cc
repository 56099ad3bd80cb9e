#include "template/js_string.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ember::jinja {

bool IsJsSpace(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(*pos);
  int len = 1;
  uint32_t cp = b0;
  if (b0 >= 0xF0 && b0 < 0xF8) { len = 4; cp = b0 & 0x07; }
  else if (b0 >= 0xE0) { len = b0 < 0xF0 ? 3 : 1; cp = b0 & 0x0F; }
  else if (b0 >= 0xC0) { len = 2; cp = b0 & 0x1F; }
  if (len == 1 || *pos + len > s.size()) {
    *pos += 1;
    return b0;  // ASCII, or an invalid/truncated byte standing for itself
  }
  for (int k = 1; k < len; ++k) {
    const uint8_t b = byte(*pos + k);
    if ((b & 0xC0) != 0x80) {
      *pos += 1;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *pos += len;
  return cp;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Byte offset of the first non-space code point (s.size() if all spaces).
size_t FirstNonSpace(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsJsSpace(NextCodePoint(s, &next))) return pos;
    pos = next;
  }
  return s.size();
}

// Byte offset just past the last non-space code point (0 if all spaces).
size_t EndOfNonSpace(std::string_view s) {
  size_t pos = 0, end = 0;
  while (pos < s.size()) {
    if (!IsJsSpace(NextCodePoint(s, &pos))) end = pos;
  }
  return end;
}

}  // namespace

std::string JsTrimStart(std::string_view s) { return std::string(s.substr(FirstNonSpace(s))); }
std::string JsTrimEnd(std::string_view s) { return std::string(s.substr(0, EndOfNonSpace(s))); }
std::string JsTrim(std::string_view s) { return JsTrimStart(JsTrimEnd(s)); }

int64_t Utf16Length(std::string_view s) {
  int64_t n = 0;
  size_t pos = 0;
  while (pos < s.size()) n += NextCodePoint(s, &pos) > 0xFFFF ? 2 : 1;
  return n;
}

std::vector<std::string> SplitCodePoints(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    NextCodePoint(s, &pos);
    out.emplace_back(s.substr(start, pos - start));
  }
  return out;
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string JsTitle(std::string_view s) {
  const auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    if (is_word(out[i]) && (i == 0 || !is_word(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z') {
      out[i] = static_cast<char>(out[i] - 'a' + 'A');
    }
  }
  return out;
}

std::string JsNumberToString(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return "0";  // also -0, as JS prints it
  // Shortest round-trip digits and decimal exponent, then JS's Number::toString layout rules.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), std::fabs(v), std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // "d.dddde+XX"
  const size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits.append(sci, 2, e - 2);
  const int n = std::atoi(sci.c_str() + e + 1) + 1;  // position of the decimal point
  const int k = static_cast<int>(digits.size());
  std::string out = v < 0 ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<size_t>(n));
    out += '.';
    out.append(digits, static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += n - 1 >= 0 ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

std::string JsonQuote(std::string_view s, bool ensure_ascii) {
  std::string out = "\"";
  char esc[16];
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const uint32_t cp = NextCodePoint(s, &pos);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F && cp <= 0xFFFF)) {
      std::snprintf(esc, sizeof(esc), "\\u%04x", cp);
      out += esc;
    } else if (ensure_ascii && cp > 0xFFFF) {
      const uint32_t u = cp - 0x10000;  // JS escapes each UTF-16 surrogate separately
      std::snprintf(esc, sizeof(esc), "\\u%04x\\u%04x", 0xD800 + (u >> 10), 0xDC00 + (u & 0x3FF));
      out += esc;
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += '"';
  return out;
}

}  // namespace ember::jinja
