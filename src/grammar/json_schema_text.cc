#include "grammar/json_schema_text.h"

#include <algorithm>
#include <cstdio>

namespace ember::grammar::schema_text {

namespace {

bool IsAlnum(uint32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

// Escaping everything but alphanumerics means ], -, ^ and \ never need context.
std::string ClassChar(uint32_t c) {
  char buf[16];
  if (IsAlnum(c)) return std::string(1, static_cast<char>(c));
  if (c < 0x80) std::snprintf(buf, sizeof buf, "\\x%02X", c);
  else if (c <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", c);
  else std::snprintf(buf, sizeof buf, "\\U%08X", c);
  return buf;
}

std::vector<uint32_t> DecodeUtf8(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int extra = c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 && c < 0xF0 ? 2 : c >= 0xC0 && c < 0xE0 ? 1 : 0;
    if (extra == 0 || i + extra >= s.size()) {
      out.push_back(c);
      ++i;
      continue;
    }
    uint32_t cp = c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

std::string EncodeUtf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

namespace {

std::vector<std::pair<uint32_t, uint32_t>> Normalized(std::vector<std::pair<uint32_t, uint32_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [lo, hi] : r) {
    if (lo > hi) continue;
    if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
    else out.emplace_back(lo, hi);
  }
  return out;
}

// `ranges` minus [lo, hi].
std::vector<std::pair<uint32_t, uint32_t>> Minus(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                                                 uint32_t lo, uint32_t hi) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [a, b] : ranges) {
    if (b < lo || a > hi) {
      out.emplace_back(a, b);
      continue;
    }
    if (a < lo) out.emplace_back(a, lo - 1);
    if (b > hi) out.emplace_back(hi + 1, b);
  }
  return out;
}

std::string ClassBody(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::string s;
  for (const auto& [lo, hi] : ranges) {
    s += ClassChar(lo);
    if (hi == lo) continue;
    if (hi != lo + 1) s += '-';
    s += ClassChar(hi);
  }
  return s;
}

// The escape JSON uses for a character that may not appear raw in a string.
std::string EscapeFor(uint32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      return buf;
    }
  }
}

}  // namespace

std::string Literal(std::string_view bytes) {
  std::string s = "\"";
  for (unsigned char c : bytes) {
    if (c == '"') s += "\\\"";
    else if (c == '\\') s += "\\\\";
    else if (c == '\n') s += "\\n";
    else if (c == '\r') s += "\\r";
    else if (c == '\t') s += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

bool CharSet::Contains(uint32_t cp) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges) in = in || (cp >= lo && cp <= hi);
  return in != negated;
}

std::string JsonContentUnit(const CharSet& set) {
  std::vector<std::string> alts;
  // Characters that need escaping: the quote, the backslash, and the controls below U+0020.
  std::vector<uint32_t> special = {'"', '\\'};
  for (uint32_t c = 0; c < 0x20; ++c) special.push_back(c);
  const std::vector<std::pair<uint32_t, uint32_t>> norm = Normalized(set.ranges);
  if (set.negated) {
    std::vector<std::pair<uint32_t, uint32_t>> excluded = norm;
    excluded.emplace_back(0, 0x1F);
    excluded.emplace_back('"', '"');
    excluded.emplace_back('\\', '\\');
    excluded = Normalized(excluded);
    if (!(excluded.size() == 1 && excluded[0].first == 0 && excluded[0].second >= 0x10FFFF)) {
      alts.push_back("[^" + ClassBody(excluded) + "]");
    }
  } else {
    std::vector<std::pair<uint32_t, uint32_t>> plain = Minus(norm, 0, 0x1F);
    plain = Minus(plain, '"', '"');
    plain = Minus(plain, '\\', '\\');
    if (!plain.empty()) alts.push_back(std::string("[").append(ClassBody(plain)).append("]"));
  }
  for (uint32_t c : special) {
    if (set.Contains(c)) alts.push_back(Literal(EscapeFor(c)));
  }
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

std::string RuleNamePart(std::string_view s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (IsAlnum(u)) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

}  // namespace ember::grammar::schema_text
