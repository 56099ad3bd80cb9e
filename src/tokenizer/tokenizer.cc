#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "format/gguf.h"
#include "tokenizer/tokenizer_impl.h"

namespace ember {
namespace {

// Special tokens in llama.cpp's matching order: std::sort by text length, longest first, over ids in
// ascending order (the same unstable sort keeps ties in the same order llama.cpp ends up with).
SpecialTokenMatcher BuildSpecials(const TokenizerSpec& spec, const std::vector<uint8_t>& attrs) {
  std::vector<int32_t> ids;
  for (size_t id = 0; id < attrs.size(); ++id) {
    if (attrs[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) ids.push_back(static_cast<int32_t>(id));
  }
  std::sort(ids.begin(), ids.end(),
            [&](int32_t a, int32_t b) { return spec.tokens[a].size() > spec.tokens[b].size(); });
  std::vector<SpecialTokenMatcher::Special> specials;
  specials.reserve(ids.size());
  for (int32_t id : ids) {
    specials.push_back({id, spec.tokens[id], (attrs[id] & (kAttrControl | kAttrUnknown)) != 0});
  }
  return SpecialTokenMatcher(std::move(specials));
}

std::array<int32_t, 256> SpmByteTokens(const StringIdMap& map, int32_t unk) {
  std::array<int32_t, 256> out{};
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char hex[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = map.Find(std::string_view(hex, 6));
    const char raw = static_cast<char>(b);
    if (id < 0) id = map.Find(std::string_view(&raw, 1));
    // llama.cpp throws when neither exists; ember falls back to <unk> (or drops the byte without one).
    out[b] = id >= 0 ? id : unk;
  }
  return out;
}

void AppendWithoutMarks(std::string_view text, std::string& out) {
  constexpr std::string_view kMark = Tokenizer::kTextMark;
  for (size_t pos = 0; pos < text.size();) {
    const size_t next = std::min(text.find(kMark, pos), text.size());
    out.append(text.substr(pos, next - pos));
    pos = next == text.size() ? next : next + kMark.size();
  }
}

}  // namespace

Status CheckTokenizerSpec(const TokenizerSpec& spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return InvalidArgument("tokenizer has no tokens");
  if (n > (1u << 30)) return InvalidArgument("tokenizer has too many tokens");
  if (!spec.scores.empty() && spec.scores.size() < n) {
    return InvalidArgument("tokenizer has " + std::to_string(spec.scores.size()) + " scores for " +
                           std::to_string(n) + " tokens");
  }
  if (!spec.token_types.empty() && spec.token_types.size() < n) {
    return InvalidArgument("tokenizer has " + std::to_string(spec.token_types.size()) + " token types for " +
                           std::to_string(n) + " tokens");
  }
  const std::pair<const char*, int32_t> ids[] = {{"bos", spec.bos_id}, {"eos", spec.eos_id}, {"eot", spec.eot_id},
                                                 {"eom", spec.eom_id}, {"pad", spec.pad_id}, {"unk", spec.unk_id}};
  for (const auto& [name, id] : ids) {
    if (id < -1 || id >= static_cast<int64_t>(n)) {
      return InvalidArgument(std::string(name) + " token id " + std::to_string(id) + " is outside the vocabulary of " +
                             std::to_string(n));
    }
  }
  if ((spec.add_bos && spec.bos_id < 0) || (spec.add_eos && spec.eos_id < 0)) {
    return InvalidArgument("tokenizer adds a BOS/EOS token it does not define");
  }
  if (spec.model == "gpt2") return PreTokenizerFromName(spec.pre).status();
  if (spec.model != "llama") {
    return Unimplemented("tokenizer model '" + spec.model + "' is not supported (supported: gpt2, llama)");
  }
  return Status::Ok();
}

Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)), impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(const TokenizerSpec& spec_in) {
  return Create(TokenizerSpec(spec_in));  // validated there
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerSpec&& spec_in) {
  EMBER_RETURN_IF_ERROR(CheckTokenizerSpec(spec_in));
  std::unique_ptr<Tokenizer> tok(new Tokenizer(std::move(spec_in)));
  TokenizerSpec& spec = tok->spec_;
  Impl& im = *tok->impl_;
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    if (spec.tokens[i].empty()) spec.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
  }
  im.token_map.SetIndexed(spec.tokens);
  if (spec.model == "gpt2") {
    EMBER_ASSIGN_OR_RETURN(im.pre, PreTokenizerFromName(spec.pre));
    im.ignore_merges = im.pre.kind == PreTokenizerKind::kLlama3;
    im.clean_spaces = im.pre.clean_spaces;
    EMBER_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Build(&im.token_map, spec.merges));
    im.bpe.emplace(std::move(bpe));
  } else {  // "llama": CheckTokenizerSpec refused every other model
    im.is_spm = true;
    std::vector<float> scores = spec.scores;
    scores.resize(spec.tokens.size(), 0.0f);
    im.spm.emplace(&im.token_map, std::move(scores), SpmByteTokens(im.token_map, spec.unk_id));
  }
  DerivedAttrs derived = DeriveTokenAttrs(spec, im.token_map);
  im.attrs = std::move(derived.attrs);
  tok->eot_id_ = derived.eot_id;
  tok->eog_ids_ = std::move(derived.eog_ids);
  im.eog.assign(spec.tokens.size(), 0);
  for (int32_t id : tok->eog_ids_) im.eog[id] = 1;
  im.specials = BuildSpecials(spec, im.attrs);
  im.piece_offsets.reserve(spec.tokens.size() + 1);
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    im.piece_offsets.push_back(static_cast<uint32_t>(im.piece_bytes.size()));
    const std::string piece = RenderPiece(spec, im.is_spm, im.attrs[id], static_cast<int32_t>(id));
    im.piece_bytes += piece;
    if (im.is_spm && (im.attrs[id] & kAttrUserDefined) && piece.find("\xE2\x96\x81") != std::string::npos) {
      std::string text;
      for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
          text += ' ';
          i += 3;
        } else {
          text += piece[i++];
        }
      }
      im.text_overrides.emplace_back(static_cast<int32_t>(id), std::move(text));
    }
  }
  im.piece_offsets.push_back(static_cast<uint32_t>(im.piece_bytes.size()));
  return tok;
}

void Tokenizer::EncodeFragment(std::string_view text, bool prefix_space, EncodeScratch& s,
                               std::vector<int32_t>& out) const {
  const Impl& im = *impl_;
  if (im.is_spm) {
    // SentencePiece sees spaces as U+2581, with one prepended where llama.cpp adds the space prefix.
    s.escaped.clear();
    if (prefix_space) s.escaped += "\xE2\x96\x81";
    for (const char c : text) {
      if (c == ' ') s.escaped += "\xE2\x96\x81";
      else s.escaped += c;
    }
    im.spm->Encode(s.escaped, s.spm, out);
    return;
  }
  // Byte-level BPE: split into words on code points, then merge each word's re-encoded bytes.
  unicode::DecodeUtf8Lenient(text, s.cps);
  s.classes.resize(s.cps.size());
  s.utf8.clear();
  s.offsets.resize(s.cps.size() + 1);
  for (size_t i = 0; i < s.cps.size(); ++i) {
    s.classes[i] = unicode::ClassOf(s.cps[i]);
    s.offsets[i] = static_cast<uint32_t>(s.utf8.size());
    unicode::AppendUtf8(s.cps[i], s.utf8);
  }
  s.offsets[s.cps.size()] = static_cast<uint32_t>(s.utf8.size());
  s.word_ends.clear();
  SplitWords(im.pre.kind, s.cps, s.classes, s.word_ends);
  uint32_t begin = 0;
  const std::string_view utf8 = s.utf8;
  for (const uint32_t end : s.word_ends) {
    const uint32_t b = s.offsets[begin], e = s.offsets[end];
    const std::string_view word = utf8.substr(b, e - b);
    begin = end;
    if (im.ignore_merges && im.bpe->EncodeWholeWord(word, s.bpe, out)) continue;
    if (word.size() > 1 && im.word_cache.Lookup(word, out)) continue;
    const size_t first = out.size();
    im.bpe->EncodeWord(word, /*ignore_merges=*/false, s.bpe, out);
    if (word.size() > 1) im.word_cache.Insert(word, std::span<const int32_t>(out).subspan(first));
  }
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special, bool parse_special) const {
  return EncodeImpl(text, add_special, parse_special, /*strip_marks=*/false);
}

std::vector<int32_t> Tokenizer::EncodeWithMarks(std::string_view text, bool add_special) const {
  return EncodeImpl(text, add_special, /*parse_special=*/true, /*strip_marks=*/true);
}

std::string Tokenizer::AsPlainText(std::string_view text) const {
  const Impl& im = *impl_;
  std::string clean;
  if (text.find(kTextMark) != std::string_view::npos) {  // the client's own: they would vanish at encode
    AppendWithoutMarks(text, clean);
    text = clean;
  }
  std::vector<SpecialTokenMatcher::Piece> controls;
  im.specials.ParseOnlyOccurrences(text, controls);
  if (controls.empty()) return std::string(text);
  // A mark goes strictly inside each control-token occurrence, on a character boundary (the text stays
  // valid UTF-8 for the template) and never inside a user-defined token that Encode(text, ., false) would
  // match, so those still match. An occurrence with no such place is either one character long (the
  // documented limit) or lies inside such a user-defined token, which is longer and so is matched first.
  std::vector<SpecialTokenMatcher::Piece> plain;
  im.specials.Partition(text, /*parse_special=*/false, plain);
  std::vector<uint8_t> no_cut(text.size() + 1, 0);
  for (size_t i = 0; i < text.size(); ++i) no_cut[i] = (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80;
  for (const SpecialTokenMatcher::Piece& p : plain) {
    if (p.token >= 0) std::fill(no_cut.begin() + p.begin + 1, no_cut.begin() + p.end, 1);
  }
  std::vector<uint32_t> cuts;  // sorted
  for (const SpecialTokenMatcher::Piece& c : controls) {
    const auto next = std::upper_bound(cuts.begin(), cuts.end(), c.begin);
    if (next != cuts.end() && *next < c.end) continue;  // an earlier mark already breaks it
    for (uint32_t at = c.begin + 1; at < c.end; ++at) {
      if (no_cut[at]) continue;
      cuts.insert(std::upper_bound(cuts.begin(), cuts.end(), at), at);
      break;
    }
  }
  std::string out;
  out.reserve(text.size() + cuts.size() * kTextMark.size());
  size_t copied = 0;
  for (const uint32_t at : cuts) {
    out.append(text.substr(copied, at - copied)).append(kTextMark);
    copied = at;
  }
  out.append(text.substr(copied));
  return out;
}

std::vector<int32_t> Tokenizer::EncodeImpl(std::string_view text, bool add_special, bool parse_special,
                                           bool strip_marks) const {
  const Impl& im = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && spec_.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
  EncodeScratch s;
  im.specials.Partition(text, parse_special, s.pieces);
  bool prev_special = true;  // SentencePiece: the space prefix goes at the start and after special tokens
  for (const SpecialTokenMatcher::Piece& p : s.pieces) {
    if (p.token >= 0) {
      out.push_back(p.token);
      prev_special = true;
      continue;
    }
    std::string_view fragment = text.substr(p.begin, p.end - p.begin);
    std::string unmarked;
    if (strip_marks && fragment.find(kTextMark) != std::string_view::npos) {
      AppendWithoutMarks(fragment, unmarked);
      if (unmarked.empty()) continue;  // only marks: no text here (and no space prefix to add)
      fragment = unmarked;
    }
    EncodeFragment(fragment, im.is_spm && spec_.add_space_prefix && prev_special, s, out);
    prev_special = false;
  }
  if (add_special && spec_.add_eos && spec_.eos_id >= 0) out.push_back(spec_.eos_id);
  return out;
}

bool Tokenizer::IsEog(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->eog[id] != 0;
}

bool Tokenizer::IsControl(int32_t id) const {
  return id >= 0 && id < n_vocab() && (impl_->attrs[id] & (kAttrControl | kAttrUnknown)) != 0;
}

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerFromGguf(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  EMBER_ASSIGN_OR_RETURN(TokenizerSpec spec, TokenizerSpecFromGguf(*file));
  auto tok = Tokenizer::Create(std::move(spec));
  if (!tok.ok()) return tok.status().WithContext(path);
  return tok;
}

int32_t Tokenizer::TokenId(std::string_view text) const { return impl_->token_map.Find(text); }

}  // namespace ember
