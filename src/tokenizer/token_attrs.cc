// Token attributes llama.cpp derives from token texts when loading a vocabulary (its converters do not
// store them): end-of-turn, end-of-message and fill-in-the-middle tokens become control tokens, and a
// fixed list of texts marks end-of-generation tokens. Mirrored here because they change both how text is
// split (control tokens are matched only with parse_special) and how tokens render.
#include <algorithm>

#include "tokenizer/tokenizer_impl.h"

namespace ember {
namespace {

using TextList = std::initializer_list<std::string_view>;

const TextList kEotTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                            "<end_of_utterance>"};
const TextList kEomTexts = {"<|eom_id|>"};
const TextList kFimPreTexts = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                               "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
const TextList kFimSufTexts = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                               "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
const TextList kFimMidTexts = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                               "▁<MID>", "<|code_middle|>", "<|middle|>"};
const TextList kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const TextList kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const TextList kFimSepTexts = {"<|file_sep|>"};
const TextList kEogTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                            "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                            "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                            "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};
// gpt-oss formatting tokens that llama.cpp always renders.
const TextList kAlwaysRenderedTexts = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

uint8_t AttrFromType(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return kAttrUndefined;
  }
}

// The lowest id among tokens whose text is in `texts` (llama.cpp takes the first it meets while iterating
// a hash map; the supported vocabularies hold at most one text per list where that matters), or -1.
int32_t FirstOf(const StringIdMap& map, const TextList& texts) {
  int32_t best = -1;
  for (std::string_view t : texts) {
    const int32_t id = map.Find(t);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

}  // namespace

DerivedAttrs DeriveTokenAttrs(const TokenizerSpec& spec, const StringIdMap& token_map) {
  DerivedAttrs d;
  const size_t n = spec.tokens.size();
  d.attrs.assign(n, kAttrNormal);
  if (!spec.token_types.empty()) {
    for (size_t i = 0; i < n; ++i) d.attrs[i] = AttrFromType(spec.token_types[i]);
  }
  auto make_control = [&](int32_t id) {
    if (id >= 0) d.attrs[id] |= kAttrControl;
  };
  d.eot_id = spec.eot_id;
  if (d.eot_id < 0) make_control(d.eot_id = FirstOf(token_map, kEotTexts));
  int32_t eom = spec.eom_id;
  if (eom < 0) make_control(eom = FirstOf(token_map, kEomTexts));
  make_control(FirstOf(token_map, kFimPreTexts));
  make_control(FirstOf(token_map, kFimSufTexts));
  make_control(FirstOf(token_map, kFimMidTexts));
  std::vector<int32_t> eog;
  for (const TextList* list : {&kFimPadTexts, &kFimRepTexts, &kFimSepTexts}) {
    const int32_t id = FirstOf(token_map, *list);
    make_control(id);
    if (id >= 0) eog.push_back(id);
  }
  for (std::string_view t : kEogTexts) {
    const int32_t id = token_map.Find(t);
    if (id < 0) continue;
    eog.push_back(id);
    make_control(id);
  }
  for (std::string_view t : kAlwaysRenderedTexts) {
    const int32_t id = token_map.Find(t);
    if (id >= 0) d.attrs[id] = kAttrUserDefined;
  }
  for (int32_t id : {spec.eos_id, d.eot_id, eom}) {
    if (id >= 0 && static_cast<size_t>(id) < n) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  d.eog_ids = std::move(eog);
  return d;
}

}  // namespace ember
