#include "tokenizer/tokenizer_spec.h"

#include <map>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/gguf_writer.h"

namespace ember {
namespace {

using nlohmann::json;

StatusOr<json> LoadJson(Env* env, const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, env->ReadFile(path));  // a missing file: kNotFound
  json j = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  return j;
}

// tokenizer.json and tokenizer_config.json are user files: every member is read through these, so a
// member of the wrong type is an error naming it (nlohmann's value()/get<>() would throw, and an
// exception escaping here ends the process).
const json* Member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

StatusOr<std::string> StrMember(const json& obj, const char* key, const std::string& fallback, const char* where) {
  const json* v = Member(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) return InvalidArgument(std::string(where) + ": '" + key + "' must be a string");
  return v->get<std::string>();
}

StatusOr<bool> BoolMember(const json& obj, const char* key, bool fallback, const char* where) {
  const json* v = Member(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return InvalidArgument(std::string(where) + ": '" + key + "' must be true or false");
  return v->get<bool>();
}

// Token ids: integers in [0, kMaxVocab).
constexpr int64_t kMaxVocab = int64_t{1} << 24;
StatusOr<int64_t> TokenId(const json& v, const std::string& what) {
  if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() >= static_cast<uint64_t>(kMaxVocab)
                                                        : v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab)) {
    return InvalidArgument("tokenizer.json: bad id for " + what + " (an integer in 0.." + std::to_string(kMaxVocab - 1) +
                           " expected)");
  }
  return v.get<int64_t>();
}

// tokenizer_config.json names special tokens either as a string or as {"content": ...}.
std::string TokenText(const json* v) {
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (const json* c = Member(*v, "content"); c != nullptr && c->is_string()) return c->get<std::string>();
  return "";
}

int32_t IdOf(const std::map<std::string, int32_t>& ids, const std::string& text) {
  auto it = ids.find(text);
  return it == ids.end() ? -1 : it->second;
}

// Whether the HF post-processor prepends a BOS token (TemplateProcessing with a leading SpecialToken).
bool PostProcessorAddsBos(const json& tok) {
  const json* post = Member(tok, "post_processor");
  const json* type = post ? Member(*post, "type") : nullptr;
  if (type == nullptr || *type != "TemplateProcessing") return false;
  const json* single = Member(*post, "single");
  return single != nullptr && single->is_array() && !single->empty() && (*single)[0].is_object() &&
         (*single)[0].contains("SpecialToken");
}

Status FillVocab(const json& tok, TokenizerSpec* spec, std::map<std::string, int32_t>* ids) {
  const json* model = Member(tok, "model");
  const json* vocab = model ? Member(*model, "vocab") : nullptr;
  if (vocab == nullptr || !vocab->is_object())
    return InvalidArgument("tokenizer.json: model.vocab missing (only BPE-style tokenizers are supported)");
  int64_t n = 0;
  for (auto& [text, id] : vocab->items()) {
    EMBER_ASSIGN_OR_RETURN(int64_t i, TokenId(id, text));
    n = std::max<int64_t>(n, i + 1);
  }
  const json* added = Member(tok, "added_tokens");
  if (added != nullptr && !added->is_array()) return InvalidArgument("tokenizer.json: 'added_tokens' must be a list");
  const json no_added = json::array();
  if (added == nullptr) added = &no_added;
  for (const auto& a : *added) {
    if (!a.is_object()) return InvalidArgument("tokenizer.json: every added_tokens entry must be an object");
    if (const json* id = Member(a, "id")) {
      EMBER_ASSIGN_OR_RETURN(int64_t i, TokenId(*id, "an added token"));
      n = std::max<int64_t>(n, i + 1);
    }
  }
  if (n <= 0) return InvalidArgument("tokenizer.json: implausible vocabulary size");
  spec->tokens.assign(n, "");
  spec->token_types.assign(n, static_cast<int32_t>(TokenType::kNormal));
  std::vector<bool> seen(n, false);
  for (auto& [text, id] : vocab->items()) {
    spec->tokens[id.get<int64_t>()] = text;
    seen[id.get<int64_t>()] = true;
  }
  for (const auto& a : *added) {
    const json* id_json = Member(a, "id");
    if (id_json == nullptr) continue;
    const int64_t id = id_json->get<int64_t>();
    EMBER_ASSIGN_OR_RETURN(spec->tokens[id], StrMember(a, "content", "", "tokenizer.json: added token"));
    EMBER_ASSIGN_OR_RETURN(bool special, BoolMember(a, "special", false, "tokenizer.json: added token"));
    seen[id] = true;
    spec->token_types[id] = static_cast<int32_t>(special ? TokenType::kControl : TokenType::kUserDefined);
  }
  for (int64_t id = 0; id < n; ++id) {
    if (!seen[id]) {  // holes in the id space become unused placeholders, as converters write them
      spec->tokens[id] = "[PAD" + std::to_string(id) + "]";
      spec->token_types[id] = static_cast<int32_t>(TokenType::kUnused);
    }
    (*ids)[spec->tokens[id]] = static_cast<int32_t>(id);
  }
  return Status::Ok();
}

Status FillMerges(const json& model, TokenizerSpec* spec) {
  const json* merges = Member(model, "merges");
  if (merges == nullptr) return Status::Ok();
  if (!merges->is_array()) return InvalidArgument("tokenizer.json: model.merges must be a list");
  spec->merges.reserve(merges->size());
  for (const auto& m : *merges) {
    if (m.is_string()) {
      spec->merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      spec->merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return InvalidArgument("tokenizer.json: unsupported merge entry");
    }
  }
  return Status::Ok();
}

// SentencePiece-style vocabularies (Gemma): byte tokens, unknown token, and a score per id. The npm
// tokenizer.json carries merges but no scores; score = -id reproduces the merge order.
void FillSentencePiece(const json& model, TokenizerSpec* spec) {
  spec->scores.resize(spec->tokens.size());
  const json* unk_json = Member(model, "unk_token");
  const std::string unk = unk_json != nullptr && unk_json->is_string() ? unk_json->get<std::string>() : "";
  for (size_t id = 0; id < spec->tokens.size(); ++id) {
    spec->scores[id] = -static_cast<float>(id);
    const std::string& t = spec->tokens[id];
    if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>') spec->token_types[id] = static_cast<int32_t>(TokenType::kByte);
    if (!unk.empty() && t == unk) {
      spec->token_types[id] = static_cast<int32_t>(TokenType::kUnknown);
      spec->unk_id = static_cast<int32_t>(id);
    }
  }
}

}  // namespace

StatusOr<TokenizerSpec> TokenizerSpecFromHf(const std::string& tokenizer_json_path,
                                            const std::string& tokenizer_config_path, const std::string& pre,
                                            Env* env) {
  EMBER_ASSIGN_OR_RETURN(json tok, LoadJson(env, tokenizer_json_path));
  EMBER_ASSIGN_OR_RETURN(json cfg, LoadJson(env, tokenizer_config_path));
  const json* model = Member(tok, "model");
  if (model == nullptr || !model->is_object()) return InvalidArgument(tokenizer_json_path + ": no 'model' object");
  if (!cfg.is_object()) return InvalidArgument(tokenizer_config_path + ": not a JSON object");
  EMBER_ASSIGN_OR_RETURN(std::string type, StrMember(*model, "type", "", "tokenizer.json: model"));
  if (type != "BPE")
    return Unimplemented(tokenizer_json_path + ": model type '" + (type.empty() ? "?" : type) + "' is not supported");
  TokenizerSpec spec;
  spec.pre = pre;
  EMBER_ASSIGN_OR_RETURN(bool byte_fallback, BoolMember(*model, "byte_fallback", false, "tokenizer.json: model"));
  spec.model = byte_fallback ? "llama" : "gpt2";
  std::map<std::string, int32_t> ids;
  EMBER_RETURN_IF_ERROR(FillVocab(tok, &spec, &ids).WithContext(tokenizer_json_path));
  if (spec.model == "gpt2") {
    EMBER_RETURN_IF_ERROR(FillMerges(*model, &spec).WithContext(tokenizer_json_path));
  } else {
    FillSentencePiece(*model, &spec);
  }
  spec.bos_id = IdOf(ids, TokenText(Member(cfg, "bos_token")));
  spec.eos_id = IdOf(ids, TokenText(Member(cfg, "eos_token")));
  spec.pad_id = IdOf(ids, TokenText(Member(cfg, "pad_token")));
  if (spec.unk_id < 0) spec.unk_id = IdOf(ids, TokenText(Member(cfg, "unk_token")));
  for (const char* eot : {"<|eot_id|>", "<|im_end|>", "<end_of_turn>"})
    if (spec.eot_id < 0) spec.eot_id = IdOf(ids, eot);
  spec.eom_id = IdOf(ids, "<|eom_id|>");
  const json* add_bos = Member(cfg, "add_bos_token");
  if (add_bos != nullptr && add_bos->is_boolean()) {
    spec.add_bos = add_bos->get<bool>();
  } else {
    spec.add_bos = PostProcessorAddsBos(tok) || pre == "llama-bpe";
  }
  spec.add_bos = spec.add_bos && spec.bos_id >= 0;
  EMBER_ASSIGN_OR_RETURN(bool add_eos, BoolMember(cfg, "add_eos_token", false, tokenizer_config_path.c_str()));
  spec.add_eos = add_eos && spec.eos_id >= 0;
  spec.add_space_prefix = false;  // none of the supported families prepend "▁" (llama.cpp defaults to true)
  if (const json* t = Member(cfg, "chat_template"); t != nullptr && t->is_string()) spec.chat_template = t->get<std::string>();
  return spec;
}

StatusOr<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& f, VocabText text) {
  TokenizerSpec spec;
  const bool copy = text == VocabText::kCopy;
  EMBER_ASSIGN_OR_RETURN(spec.model, f.Str("tokenizer.ggml.model"));
  EMBER_ASSIGN_OR_RETURN(spec.pre, f.StrOr("tokenizer.ggml.pre", "default"));
  EMBER_ASSIGN_OR_RETURN(auto tokens, f.StrArray("tokenizer.ggml.tokens"));
  if (copy) {
    spec.tokens.assign(tokens.begin(), tokens.end());
  } else {
    spec.tokens.resize(tokens.size());
  }
  if (f.Has("tokenizer.ggml.scores")) {
    EMBER_ASSIGN_OR_RETURN(spec.scores, f.F32Array("tokenizer.ggml.scores"));
    if (spec.scores.size() != spec.tokens.size())
      return Corrupt(f.name() + ": tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) +
                     " entries for " + std::to_string(spec.tokens.size()) + " tokens");
  }
  if (f.Has("tokenizer.ggml.token_type")) {
    EMBER_ASSIGN_OR_RETURN(auto types, f.IntArray("tokenizer.ggml.token_type"));
    if (types.size() != spec.tokens.size())
      return Corrupt(f.name() + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                     " entries for " + std::to_string(spec.tokens.size()) + " tokens");
    spec.token_types.assign(types.begin(), types.end());
  } else {
    spec.token_types.assign(spec.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  }
  if (f.Has("tokenizer.ggml.merges")) {
    EMBER_ASSIGN_OR_RETURN(auto merges, f.StrArray("tokenizer.ggml.merges"));
    if (copy) spec.merges.assign(merges.begin(), merges.end());
  }
  const int64_t n = static_cast<int64_t>(spec.tokens.size());
  struct IdKey { const char* key; int32_t* out; };
  for (IdKey k : {IdKey{"tokenizer.ggml.bos_token_id", &spec.bos_id}, IdKey{"tokenizer.ggml.eos_token_id", &spec.eos_id},
                  IdKey{"tokenizer.ggml.eot_token_id", &spec.eot_id}, IdKey{"tokenizer.ggml.eom_token_id", &spec.eom_id},
                  IdKey{"tokenizer.ggml.padding_token_id", &spec.pad_id},
                  IdKey{"tokenizer.ggml.unknown_token_id", &spec.unk_id}}) {
    EMBER_ASSIGN_OR_RETURN(int64_t id, f.IntOr(k.key, -1));
    if (id < -1 || id >= n)  // (-1: none; anything else would be truncated to int32 below)
      return Corrupt(f.name() + ": " + k.key + " " + std::to_string(id) + " is outside the vocabulary");
    *k.out = static_cast<int32_t>(id);
  }
  EMBER_ASSIGN_OR_RETURN(spec.add_bos, f.BoolOr("tokenizer.ggml.add_bos_token", spec.model == "llama"));
  EMBER_ASSIGN_OR_RETURN(spec.add_eos, f.BoolOr("tokenizer.ggml.add_eos_token", false));
  EMBER_ASSIGN_OR_RETURN(spec.add_space_prefix, f.BoolOr("tokenizer.ggml.add_space_prefix", spec.model == "llama"));
  EMBER_ASSIGN_OR_RETURN(spec.chat_template, f.StrOr("tokenizer.chat_template", ""));
  return spec;
}

void WriteTokenizerSpec(const TokenizerSpec& spec, GgufWriter& w) {
  w.SetStr("tokenizer.ggml.model", spec.model);
  w.SetStr("tokenizer.ggml.pre", spec.pre);
  w.SetStrArray("tokenizer.ggml.tokens", spec.tokens);
  if (!spec.scores.empty()) w.SetF32Array("tokenizer.ggml.scores", spec.scores);
  w.SetI32Array("tokenizer.ggml.token_type", spec.token_types);
  if (!spec.merges.empty()) w.SetStrArray("tokenizer.ggml.merges", spec.merges);
  auto id = [&w](const char* key, int32_t v) {
    if (v >= 0) w.SetU32(key, static_cast<uint32_t>(v));
  };
  id("tokenizer.ggml.bos_token_id", spec.bos_id);
  id("tokenizer.ggml.eos_token_id", spec.eos_id);
  id("tokenizer.ggml.eot_token_id", spec.eot_id);
  id("tokenizer.ggml.eom_token_id", spec.eom_id);
  id("tokenizer.ggml.padding_token_id", spec.pad_id);
  id("tokenizer.ggml.unknown_token_id", spec.unk_id);
  w.SetBool("tokenizer.ggml.add_bos_token", spec.add_bos);
  w.SetBool("tokenizer.ggml.add_eos_token", spec.add_eos);
  if (spec.model == "llama") w.SetBool("tokenizer.ggml.add_space_prefix", spec.add_space_prefix);
  if (!spec.chat_template.empty()) w.SetStr("tokenizer.chat_template", spec.chat_template);
}

}  // namespace ember
