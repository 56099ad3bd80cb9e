// Token ids -> text: per-token pieces (llama_token_to_piece), whole-sequence decoding, llama.cpp's
// detokenizer space clean-up, and the streaming detokenizer.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ember {
namespace {

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Byte tokens are named "<0xNN>"; llama.cpp reads the two hex digits after "<0x".
std::string ByteTokenPiece(const std::string& text) {
  if (text.size() < 5) return std::string();
  const std::string hex = text.substr(3, 2);
  return std::string(1, static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
}

// A byte-level BPE token's text maps back to bytes code point by code point; a code point outside the
// byte map is rendered as llama.cpp renders it (never happens for real vocabularies).
std::string ByteLevelDecode(const std::string& text) {
  // Fast path for the usual token (ASCII and valid 2-byte characters, all in the byte map), without a code
  // point vector: rendering all 128k Llama 3 pieces is on the startup path. kCpToByte: code point -> byte
  // for the code points of the byte map (all below U+0200), -1 elsewhere.
  static const std::array<int16_t, 0x200> kCpToByte = [] {
    std::array<int16_t, 0x200> t{};
    for (uint32_t cp = 0; cp < t.size(); ++cp) t[cp] = static_cast<int16_t>(unicode::UnicodeToByte(cp));
    return t;
  }();
  std::string fast;
  fast.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    uint32_t cp = c;
    if (c >= 0x80) {
      const uint8_t c1 = i + 1 < text.size() ? static_cast<uint8_t>(text[i + 1]) : 0;
      if (c < 0xC2 || c > 0xDF || (c1 & 0xC0) != 0x80) break;
      cp = ((c & 0x1Fu) << 6) | (c1 & 0x3Fu);
      ++i;
    }
    const int b = cp < kCpToByte.size() ? kCpToByte[cp] : -1;
    if (b < 0) break;
    fast += static_cast<char>(b);
    if (i + 1 == text.size()) return fast;
  }
  if (text.empty()) return fast;
  std::vector<uint32_t> cps;
  unicode::DecodeUtf8Lenient(text, cps);
  std::string out;
  for (const uint32_t cp : cps) {
    const int b = unicode::UnicodeToByte(cp);
    if (b >= 0) {
      out += static_cast<char>(b);
      continue;
    }
    std::string utf8;
    unicode::AppendUtf8(cp, utf8);
    out += "[UNK_BYTE_0x";
    for (const char c : utf8) {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", static_cast<uint8_t>(c));
      out += buf;
    }
    out += text + "]";
  }
  return out;
}

// llama.cpp's clean_up_tokenization_spaces, three passes over the detokenized bytes.
std::string CleanSpaces(const std::string& in) {
  // 1. " ?" " !" " ." " ," lose the space.
  std::string a;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool drop = in[i] == ' ' && i + 1 < in.size() &&
                      (in[i + 1] == '?' || in[i + 1] == '!' || in[i + 1] == '.' || in[i + 1] == ',');
    if (!drop) a += in[i];
  }
  // 2. " ' " becomes "'"; the space after it is consumed, and (as in llama.cpp, which overwrites it with NUL)
  //    no longer counts as a space before the next character.
  std::string b;
  bool prev_consumed = false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i];
    if (i > 0 && x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && !prev_consumed && a[i + 1] == ' ') {
      b.pop_back();
      b += x;
      ++i;
      prev_consumed = true;
      continue;
    }
    prev_consumed = false;
    b += x;
  }
  // 3. " 's" " 'm" " 're" " 've" lose the space (" 't" " 'd" " 'll" keep it).
  std::string c;
  for (size_t i = 0; i < b.size(); ++i) {
    const char x = b[i];
    if (i > 0 && b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const bool two = i + 2 < b.size();
      if (x1 == 's' || x1 == 'm' || (two && ((x1 == 'r' && b[i + 2] == 'e') || (x1 == 'v' && b[i + 2] == 'e')))) {
        c.pop_back();
      }
    }
    c += x;
  }
  return c;
}

}  // namespace

std::string RenderPiece(const TokenizerSpec& spec, bool is_spm, uint8_t attr, int32_t id) {
  const std::string& text = spec.tokens[id];
  if (attr & (kAttrControl | kAttrUnknown | kAttrUserDefined)) return text;
  if (attr & kAttrNormal) return is_spm ? ReplaceAll(text, "\xE2\x96\x81", " ") : ByteLevelDecode(text);
  if (attr & kAttrByte) return ByteTokenPiece(text);
  return std::string();  // unused / undefined tokens render as nothing
}

std::string_view Tokenizer::TokenToPiece(int32_t id, bool render_special) const {
  if (id < 0 || id >= n_vocab()) return {};
  if (!render_special && (impl_->attrs[id] & (kAttrControl | kAttrUnknown))) return {};
  const uint32_t b = impl_->piece_offsets[id], e = impl_->piece_offsets[id + 1];
  return std::string_view(impl_->piece_bytes).substr(b, e - b);
}

std::string_view Tokenizer::TextPiece(int32_t id, bool render_special) const {
  const std::string_view piece = TokenToPiece(id, render_special);
  const auto& o = impl_->text_overrides;
  if (piece.empty() || o.empty()) return piece;
  auto it = std::lower_bound(o.begin(), o.end(), id, [](const auto& e, int32_t v) { return e.first < v; });
  return (it != o.end() && it->first == id) ? std::string_view(it->second) : piece;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool render_special) const {
  return DecodePieces(ids, render_special, /*text=*/true);
}

std::string Tokenizer::DecodePieces(std::span<const int32_t> ids, bool render_special, bool text) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string_view piece = text ? TextPiece(ids[i], render_special) : TokenToPiece(ids[i], render_special);
    // llama.cpp strips one leading space from the first token when the model adds a space prefix.
    if (i == 0 && spec_.add_space_prefix && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    out += piece;
  }
  return out;
}

std::string Tokenizer::Detokenize(std::span<const int32_t> ids, bool render_special) const {
  std::string out = DecodePieces(ids, render_special, /*text=*/false);
  return impl_->clean_spaces ? CleanSpaces(out) : out;
}

std::string StreamingDetokenizer::Push(int32_t id) {
  std::string_view piece = tok_.TextPiece(id, render_special_);
  if (first_ && strip_ && tok_.spec().add_space_prefix && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  first_ = false;
  pending_ += piece;
  const size_t complete = unicode::CompleteUtf8Prefix(pending_);
  std::string out = unicode::SanitizeUtf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamingDetokenizer::Flush() {
  std::string out = unicode::SanitizeUtf8(pending_);
  pending_.clear();
  first_ = true;
  return out;
}

}  // namespace ember
