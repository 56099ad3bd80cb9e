// Parsing of llama-server's native bodies (llama_request.h). llama-server is permissive about sampling
// numbers (a negative temperature means greedy, top_k <= 0 means off); ember accepts the same spellings
// and maps them onto SamplingParams. Knobs ember has no sampler for are accepted at their "off" value
// and refused (400 naming the field) otherwise, so a request is never silently sampled differently.
#include "server/llama_request.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "server/request_fields.h"

namespace ember::server {
namespace {

using nlohmann::json;

bool IsTokenId(const json& t) {
  return t.is_number_unsigned() ? t.get<uint64_t>() <= INT32_MAX
                                : t.is_number_integer() && t.get<int64_t>() >= 0 && t.get<int64_t>() <= INT32_MAX;
}

// `prompt`: "text" | [ids and strings mixed] | [one such prompt]. Several prompts (["a","b"], [[1],[2]])
// would be several completions in one reply; ember serves one per request.
void ReadPrompt(const json* prompt, FieldReader& r, std::vector<PromptPiece>* out) {
  if (prompt == nullptr) return r.Fail("prompt", "'prompt' is required");
  if (prompt->is_string()) {
    out->push_back({true, prompt->get<std::string>(), 0});
    return;
  }
  if (!prompt->is_array()) return r.Fail("prompt", "'prompt' must be a string, or an array of token ids and strings");
  const json* p = prompt;
  if (p->size() == 1 && ((*p)[0].is_array() || (*p)[0].is_string())) {
    if ((*p)[0].is_string()) {
      out->push_back({true, (*p)[0].get<std::string>(), 0});
      return;
    }
    p = &(*p)[0];
  }
  const bool all_text = std::all_of(p->begin(), p->end(), [](const json& e) { return e.is_string(); });
  const bool nested = std::any_of(p->begin(), p->end(), [](const json& e) { return e.is_array() || e.is_object(); });
  if (p->size() > 1 && (all_text || nested)) {
    return r.Fail("prompt", "'prompt' holds several prompts; ember serves one prompt per request (send one "
                            "request each)");
  }
  for (size_t i = 0; i < p->size(); ++i) {
    const json& e = (*p)[i];
    if (e.is_string()) {
      out->push_back({true, e.get<std::string>(), 0});
    } else if (IsTokenId(e)) {
      out->push_back({false, "", e.get<int32_t>()});
    } else {
      const std::string name = "prompt[" + std::to_string(i) + "]";
      return r.Fail(name, "'" + name + "' must be a token id (0 to 2^31-1) or a string");
    }
  }
  if (out->empty()) r.Fail("prompt", "'prompt' is empty");
}

// A number field read as double (any value) for llama-server's lenient ranges.
bool Number(FieldReader& r, const json& body, const char* key, double* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_number()) {
    r.Fail(key, std::string("'") + key + "' must be a number");
    return false;
  }
  *out = it->get<double>();
  if (!std::isfinite(*out)) r.Fail(key, std::string("'") + key + "' must be finite");
  return r.ok();
}

// A knob without an ember sampler: accepted at `off`, refused otherwise.
void OffOnly(FieldReader& r, const json& body, const char* key, double off) {
  double v = off;
  if (Number(r, body, key, &v) && v != off) {
    r.Fail(key, std::string("'") + key + "' is not supported by ember (only " + json(off).dump() + ", off)");
  }
}

void ReadSampling(FieldReader& r, const json& body, const LlamaDefaults& d, LlamaCompletion* out) {
  SamplingParams& s = out->req.sampling;
  s.temperature = d.temperature;
  s.top_k = 40;
  s.top_p = 0.95f;
  s.min_p = 0.05f;
  s.seed = d.seed;
  double v = 0;
  if (Number(r, body, "temperature", &v)) s.temperature = static_cast<float>(std::clamp(v, 0.0, 100.0));
  if (Number(r, body, "top_k", &v)) s.top_k = v <= 0 ? 0 : static_cast<int32_t>(std::min(v, 1e6));
  if (Number(r, body, "top_p", &v)) s.top_p = static_cast<float>(std::clamp(v, 0.0, 1.0));
  if (Number(r, body, "min_p", &v)) s.min_p = static_cast<float>(std::clamp(v, 0.0, 1.0));
  if (Number(r, body, "repeat_penalty", &v)) {
    if (v < 0 || v > 10) r.Fail("repeat_penalty", "'repeat_penalty' must be between 0 and 10");
    s.repetition_penalty = v == 0 ? 1.0f : static_cast<float>(v);
  }
  r.Float("presence_penalty", &s.presence_penalty, -2, 2);
  r.Float("frequency_penalty", &s.frequency_penalty, -2, 2);
  auto seed = body.find("seed");
  if (seed != body.end() && seed->is_number_integer() && !seed->is_number_unsigned() && seed->get<int64_t>() == -1) {
    s.seed.reset();  // llama-server's "random"
  } else {
    r.Seed("seed", &s.seed);
  }
  OffOnly(r, body, "mirostat", 0);
  OffOnly(r, body, "dry_multiplier", 0);
  OffOnly(r, body, "xtc_probability", 0);
  OffOnly(r, body, "typical_p", 1);
  OffOnly(r, body, "dynatemp_range", 0);
  bool ignore_eos = false;
  r.Bool("ignore_eos", &ignore_eos);
  if (ignore_eos) r.Fail("ignore_eos", "'ignore_eos' is not supported by ember (only false)");
  int32_t n_cmpl = 1;
  r.Int("n_cmpl", &n_cmpl, 1, 1);
}

// [[id, bias], ...] (bias false = never) or {"id": bias}; string keys (token text) are not supported.
void ReadLogitBias(FieldReader& r, const json& body, SamplingParams* s) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return;
  auto add = [&](const json& id, const json& bias, const std::string& p) {
    if (!IsTokenId(id)) return r.Fail(p, "'" + p + "': logit_bias entries must name token ids");
    float b = 0;
    if (bias.is_boolean() && !bias.get<bool>()) {
      b = -INFINITY;
    } else if (bias.is_number()) {
      b = static_cast<float>(std::clamp(bias.get<double>(), -100.0, 100.0));
    } else {
      return r.Fail(p, "'" + p + "': the bias must be a number or false");
    }
    s->logit_bias.emplace_back(id.get<int32_t>(), b);
  };
  if (it->is_array()) {
    for (size_t i = 0; i < it->size() && r.ok(); ++i) {
      const json& e = (*it)[i];
      const std::string p = "logit_bias[" + std::to_string(i) + "]";
      if (!e.is_array() || e.size() != 2) return r.Fail(p, "'" + p + "' must be [token id, bias]");
      add(e[0], e[1], p);
    }
  } else if (it->is_object()) {
    for (auto e = it->begin(); e != it->end() && r.ok(); ++e) {
      const std::string& k = e.key();
      const bool digits = !k.empty() && k.size() <= 10 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
      const int64_t id = digits ? std::stoll(k) : -1;
      add(id >= 0 && id <= INT32_MAX ? json(id) : json("?"), *e, "logit_bias." + k);
    }
  } else {
    r.Fail("logit_bias", "'logit_bias' must be an array of [token id, bias] pairs or an object");
  }
}

}  // namespace

ApiResult<LlamaCompletion> ParseLlamaCompletion(const json& body, const LlamaDefaults& defaults) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  LlamaCompletion out;
  out.req.kind = ApiKind::kCompletion;
  out.n_predict = defaults.n_predict;
  ReadPrompt(r.Any("prompt"), r, &out.prompt);
  r.Int("n_predict", &out.n_predict, -1, INT32_MAX);
  if (out.n_predict == -1) r.Int("max_tokens", &out.n_predict, -1, INT32_MAX);  // llama-server's alias
  r.Int("id_slot", &out.id_slot, -1, defaults.parallel - 1);
  r.Bool("cache_prompt", &out.cache_prompt);
  r.Bool("return_tokens", &out.return_tokens);
  r.Bool("timings_per_token", &out.timings_per_token);
  r.Int("n_probs", &out.n_probs, 0, 20);
  r.Bool("stream", &out.req.stream);
  r.String("model", &out.req.model);
  r.String("cache_salt", &out.req.cache_salt);
  r.StringOrList("stop", &out.req.stop, kMaxStopStrings, kMaxStopBytes);
  r.String("grammar", &out.req.grammar);
  if (const json* schema = r.Object("json_schema")) {
    out.req.response_format = ResponseFormat::kJsonSchema;
    out.req.json_schema = schema->dump();
  }
  if (r.ok()) ReadSampling(r, body, defaults, &out);
  if (r.ok()) ReadLogitBias(r, body, &out.req.sampling);
  out.req.logprobs = out.n_probs > 0;
  out.req.top_logprobs = out.n_probs;
  if (err) return *err;
  return out;
}

ApiResult<LlamaTokenize> ParseLlamaTokenize(const json& body) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  std::optional<ApiError> err;
  FieldReader r(body, "", &err);
  LlamaTokenize out;
  if (r.Any("content") == nullptr) r.Fail("content", "'content' is required");
  r.String("content", &out.content);
  r.Bool("add_special", &out.add_special);
  r.Bool("parse_special", &out.parse_special);
  r.Bool("with_pieces", &out.with_pieces);
  if (err) return *err;
  return out;
}

ApiResult<std::vector<int32_t>> ParseLlamaDetokenize(const json& body) {
  if (!body.is_object()) return InvalidRequest("request body must be a JSON object");
  auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array()) return InvalidRequest("'tokens' must be an array of token ids", "tokens");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!IsTokenId((*tokens)[i])) {
      const std::string p = "tokens[" + std::to_string(i) + "]";
      return InvalidRequest("'" + p + "' must be a token id (0 to 2^31-1)", p);
    }
    ids.push_back((*tokens)[i].get<int32_t>());
  }
  return ids;
}

bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xC2)) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n;
  }
  return true;
}

json PieceJson(const std::string& piece) {
  if (IsValidUtf8(piece)) return piece;
  json bytes = json::array();
  for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

}  // namespace ember::server
