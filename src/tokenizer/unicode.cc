#include "tokenizer/unicode.h"

#include <array>
#include <memory>

namespace ember::unicode {
namespace {

struct CategoryRun {
  uint32_t start;
  uint8_t cat;
};

#include "tokenizer/unicode_data.inc"

constexpr uint32_t kMaxCodePoint = 0x110000;

// One byte per code point (1.1 MB), built once: the pre-tokenizers look up every code point of the text,
// so a flat table beats a binary search over the 2,272 runs.
const uint8_t* ClassTable() {
  static const std::unique_ptr<uint8_t[]> table = [] {
    auto t = std::make_unique<uint8_t[]>(kMaxCodePoint);
    for (uint32_t i = 0; i < kCategoryRunCount; ++i) {
      const uint32_t end = i + 1 < kCategoryRunCount ? kCategoryRuns[i + 1].start : kMaxCodePoint;
      for (uint32_t cp = kCategoryRuns[i].start; cp < end; ++cp) t[cp] = kCategoryRuns[i].cat | kClassPresent;
    }
    for (uint32_t cp : kWhitespace) t[cp] |= kClassWhitespace;
    return t;
  }();
  return table.get();
}

struct ByteMaps {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 324> from_unicode;  // every image is < 0x144
};

const ByteMaps& GetByteMaps() {
  static const ByteMaps maps = [] {
    ByteMaps m;
    m.from_unicode.fill(-1);
    // Printable Latin-1 bytes map to themselves; the rest (controls, space, 0x7F-0xA0, 0xAD) are shifted to
    // 256, 257, ... in byte order, so every byte has a visible code point.
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next++);
      AppendUtf8(cp, m.to_unicode[b]);
      m.from_unicode[cp] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return maps;
}

inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

CpClass ClassOf(uint32_t cp) {
  // Code points past U+10FFFF cannot come out of DecodeUtf8Lenient; class them as undefined anyway.
  return cp < kMaxCodePoint ? ClassTable()[cp] : static_cast<CpClass>(kClassPresent);
}

void DecodeUtf8Lenient(std::string_view text, std::vector<uint32_t>& cps) {
  cps.clear();
  cps.reserve(text.size());
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b = s[i];
    if (b < 0x80) {
      cps.push_back(b);
      i += 1;
      continue;
    }
    // Like llama.cpp: the lead byte fixes the length, only continuation bytes are checked (overlong forms
    // and surrogates pass). Unlike llama.cpp, code points past U+10FFFF (F4 90.., F5-F7 leads) are invalid:
    // llama.cpp throws on them later, ember replaces the lead byte.
    uint32_t cp = 0;
    size_t len = 0;
    if ((b & 0xE0) == 0xC0 && i + 1 < n && IsCont(s[i + 1])) {
      cp = ((b & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
      len = 2;
    } else if ((b & 0xF0) == 0xE0 && i + 2 < n && IsCont(s[i + 1]) && IsCont(s[i + 2])) {
      cp = ((b & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      len = 3;
    } else if ((b & 0xF8) == 0xF0 && i + 3 < n && IsCont(s[i + 1]) && IsCont(s[i + 2]) && IsCont(s[i + 3])) {
      cp = ((b & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      len = cp < kMaxCodePoint ? 4 : 0;
    }
    if (len == 0) {
      cps.push_back(kReplacementChar);
      i += 1;
    } else {
      cps.push_back(cp);
      i += len;
    }
  }
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Length of the well-formed sequence starting at s[i] (Unicode table 3-7), or 0 if ill-formed; sets
// `max_valid` to how many bytes form a valid-so-far prefix (the "maximal subpart").
size_t WellFormedLen(const uint8_t* s, size_t n, size_t i, size_t& max_valid) {
  const uint8_t b = s[i];
  max_valid = 1;
  if (b < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    max_valid = 0;
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= n) return 0;
    const uint8_t c = s[i + k];
    const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return 0;
    max_valid = k + 1;
  }
  return len;
}

}  // namespace

size_t CompleteUtf8Prefix(std::string_view bytes) {
  const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  // Only the last 3 bytes can be an unfinished sequence: find its start and check it is a valid prefix.
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    if (IsCont(s[i])) continue;
    size_t max_valid = 0;
    const size_t len = WellFormedLen(s, n, i, max_valid);
    if (len == 0 && max_valid == back) return i;  // valid so far, just cut short
    return n;
  }
  return n;
}

std::string SanitizeUtf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  std::string out;
  out.reserve(n);
  size_t i = 0;
  while (i < n) {
    size_t max_valid = 0;
    const size_t len = WellFormedLen(s, n, i, max_valid);
    if (len > 0) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      i += max_valid > 0 ? max_valid : 1;
    }
  }
  return out;
}

const std::string& ByteToUnicode(uint8_t byte) { return GetByteMaps().to_unicode[byte]; }

int UnicodeToByte(uint32_t cp) {
  const auto& m = GetByteMaps().from_unicode;
  return cp < m.size() ? m[cp] : -1;
}

}  // namespace ember::unicode
