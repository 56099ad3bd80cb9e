#include "tokenizer/tokenizer_spec.h"

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/gguf_writer.h"

namespace ember {
namespace {

using nlohmann::json;

StatusOr<json> LoadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  return j;
}

// tokenizer_config.json names special tokens either as a string or as {"content": ...}.
std::string TokenText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

int32_t IdOf(const std::map<std::string, int32_t>& ids, const std::string& text) {
  auto it = ids.find(text);
  return it == ids.end() ? -1 : it->second;
}

// Whether the HF post-processor prepends a BOS token (TemplateProcessing with a leading SpecialToken).
bool PostProcessorAddsBos(const json& tok) {
  const json& post = tok.value("post_processor", json());
  if (!post.is_object() || post.value("type", "") != "TemplateProcessing") return false;
  const json& single = post.value("single", json());
  return single.is_array() && !single.empty() && single[0].contains("SpecialToken");
}

Status FillVocab(const json& tok, TokenizerSpec* spec, std::map<std::string, int32_t>* ids) {
  const json& model = tok["model"];
  if (!model.is_object() || !model.contains("vocab") || !model["vocab"].is_object())
    return InvalidArgument("tokenizer.json: model.vocab missing (only BPE-style tokenizers are supported)");
  int64_t n = 0;
  for (auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) return InvalidArgument("tokenizer.json: bad id for " + text);
    n = std::max<int64_t>(n, id.get<int64_t>() + 1);
  }
  const json& added = tok.value("added_tokens", json::array());
  for (const auto& a : added) n = std::max<int64_t>(n, a.value("id", int64_t{0}) + 1);
  if (n <= 0 || n > (1 << 24)) return InvalidArgument("tokenizer.json: implausible vocabulary size");
  spec->tokens.assign(n, "");
  spec->token_types.assign(n, static_cast<int32_t>(TokenType::kNormal));
  std::vector<bool> seen(n, false);
  for (auto& [text, id] : model["vocab"].items()) {
    spec->tokens[id.get<int64_t>()] = text;
    seen[id.get<int64_t>()] = true;
  }
  for (const auto& a : added) {
    const int64_t id = a.value("id", int64_t{-1});
    if (id < 0) continue;
    spec->tokens[id] = a.value("content", "");
    seen[id] = true;
    spec->token_types[id] = static_cast<int32_t>(a.value("special", false) ? TokenType::kControl
                                                                           : TokenType::kUserDefined);
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
  const json& merges = model.value("merges", json::array());
  spec->merges.reserve(merges.size());
  for (const auto& m : merges) {
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
  const std::string unk = model.value("unk_token", json()).is_string() ? model["unk_token"].get<std::string>() : "";
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
                                            const std::string& tokenizer_config_path, const std::string& pre) {
  EMBER_ASSIGN_OR_RETURN(json tok, LoadJson(tokenizer_json_path));
  EMBER_ASSIGN_OR_RETURN(json cfg, LoadJson(tokenizer_config_path));
  if (!tok.is_object() || !tok.contains("model")) return InvalidArgument(tokenizer_json_path + ": no 'model'");
  const json& model = tok["model"];
  if (model.value("type", "") != "BPE")
    return Unimplemented(tokenizer_json_path + ": model type '" + model.value("type", "?") + "' is not supported");
  TokenizerSpec spec;
  spec.pre = pre;
  spec.model = model.value("byte_fallback", false) ? "llama" : "gpt2";
  std::map<std::string, int32_t> ids;
  EMBER_RETURN_IF_ERROR(FillVocab(tok, &spec, &ids).WithContext(tokenizer_json_path));
  if (spec.model == "gpt2") {
    EMBER_RETURN_IF_ERROR(FillMerges(model, &spec).WithContext(tokenizer_json_path));
  } else {
    FillSentencePiece(model, &spec);
  }
  spec.bos_id = IdOf(ids, TokenText(cfg.value("bos_token", json())));
  spec.eos_id = IdOf(ids, TokenText(cfg.value("eos_token", json())));
  spec.pad_id = IdOf(ids, TokenText(cfg.value("pad_token", json())));
  if (spec.unk_id < 0) spec.unk_id = IdOf(ids, TokenText(cfg.value("unk_token", json())));
  for (const char* eot : {"<|eot_id|>", "<|im_end|>", "<end_of_turn>"})
    if (spec.eot_id < 0) spec.eot_id = IdOf(ids, eot);
  spec.eom_id = IdOf(ids, "<|eom_id|>");
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) {
    spec.add_bos = cfg["add_bos_token"].get<bool>();
  } else {
    spec.add_bos = PostProcessorAddsBos(tok) || pre == "llama-bpe";
  }
  spec.add_bos = spec.add_bos && spec.bos_id >= 0;
  spec.add_eos = cfg.value("add_eos_token", false) && spec.eos_id >= 0;
  spec.add_space_prefix = false;  // none of the supported families prepend "▁" (llama.cpp defaults to true)
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string())
    spec.chat_template = cfg["chat_template"].get<std::string>();
  return spec;
}

StatusOr<TokenizerSpec> TokenizerSpecFromGguf(const GgufFile& f) {
  TokenizerSpec spec;
  EMBER_ASSIGN_OR_RETURN(spec.model, f.Str("tokenizer.ggml.model"));
  EMBER_ASSIGN_OR_RETURN(spec.pre, f.StrOr("tokenizer.ggml.pre", "default"));
  EMBER_ASSIGN_OR_RETURN(auto tokens, f.StrArray("tokenizer.ggml.tokens"));
  spec.tokens.assign(tokens.begin(), tokens.end());
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
    spec.merges.assign(merges.begin(), merges.end());
  }
  const int64_t n = static_cast<int64_t>(spec.tokens.size());
  struct IdKey { const char* key; int32_t* out; };
  for (IdKey k : {IdKey{"tokenizer.ggml.bos_token_id", &spec.bos_id}, IdKey{"tokenizer.ggml.eos_token_id", &spec.eos_id},
                  IdKey{"tokenizer.ggml.eot_token_id", &spec.eot_id}, IdKey{"tokenizer.ggml.eom_token_id", &spec.eom_id},
                  IdKey{"tokenizer.ggml.padding_token_id", &spec.pad_id},
                  IdKey{"tokenizer.ggml.unknown_token_id", &spec.unk_id}}) {
    EMBER_ASSIGN_OR_RETURN(int64_t id, f.IntOr(k.key, -1));
    if (id >= n) return Corrupt(f.name() + ": " + k.key + " " + std::to_string(id) + " is outside the vocabulary");
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
