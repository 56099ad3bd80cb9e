// llama-server's native bodies (server/llama_request.h): prompt forms, its lenient sampling spellings,
// and hostile bodies: every wrong type is a 400 naming the field.
#include "server/llama_request.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

using nlohmann::json;

ApiResult<LlamaCompletion> Parse(const json& body, LlamaDefaults d = {}) { return ParseLlamaCompletion(body, d); }

std::string ParamOf(const json& body, LlamaDefaults d = {}) {
  ApiResult<LlamaCompletion> r = Parse(body, d);
  return r.ok() ? "<ok>" : r.error().param;
}

TEST(LlamaCompletionRequest, PromptForms) {
  auto text = Parse({{"prompt", "hi"}});
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(text.value().prompt.size(), 1u);
  EXPECT_TRUE(text.value().prompt[0].is_text);
  EXPECT_EQ(text.value().prompt[0].text, "hi");

  auto ids = Parse({{"prompt", {1, 2, 3}}});
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids.value().prompt.size(), 3u);
  EXPECT_FALSE(ids.value().prompt[2].is_text);
  EXPECT_EQ(ids.value().prompt[2].id, 3);

  auto mixed = Parse({{"prompt", json::array({12, "text", 56})}});
  ASSERT_TRUE(mixed.ok());
  ASSERT_EQ(mixed.value().prompt.size(), 3u);
  EXPECT_TRUE(mixed.value().prompt[1].is_text);
  EXPECT_EQ(mixed.value().prompt[1].text, "text");

  // One prompt wrapped in an array is that prompt.
  auto wrapped = Parse({{"prompt", json::array({json::array({7, 8})})}});
  ASSERT_TRUE(wrapped.ok());
  EXPECT_EQ(wrapped.value().prompt.size(), 2u);
  auto one_text = Parse({{"prompt", json::array({"only"})}});
  ASSERT_TRUE(one_text.ok());
  EXPECT_EQ(one_text.value().prompt[0].text, "only");
}

TEST(LlamaCompletionRequest, SeveralPromptsAreRefusedNamingPrompt) {
  auto r = Parse({{"prompt", {"a", "b"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().param, "prompt");
  EXPECT_NE(r.error().message.find("one prompt per request"), std::string::npos);
  EXPECT_EQ(ParamOf({{"prompt", json::array({json::array({1}), json::array({2})})}}), "prompt");
}

TEST(LlamaCompletionRequest, BadPromptsNameTheField) {
  EXPECT_EQ(ParamOf(json::object()), "prompt");
  EXPECT_EQ(ParamOf({{"prompt", 5}}), "prompt");
  EXPECT_EQ(ParamOf({{"prompt", json::object()}}), "prompt");
  EXPECT_EQ(ParamOf({{"prompt", json::array()}}), "prompt");
  EXPECT_EQ(ParamOf({{"prompt", {1, 2.5}}}), "prompt[1]");
  EXPECT_EQ(ParamOf({{"prompt", {1, -4}}}), "prompt[1]");
  EXPECT_EQ(ParamOf({{"prompt", {1, 4294967296LL}}}), "prompt[1]");
  EXPECT_EQ(ParamOf({{"prompt", json::array({1, nullptr})}}), "prompt[1]");
  EXPECT_FALSE(ParseLlamaCompletion(json::array(), {}).ok());
}

TEST(LlamaCompletionRequest, NPredictAndIdSlot) {
  LlamaDefaults d;
  d.n_predict = 64;
  d.parallel = 2;
  EXPECT_EQ(Parse({{"prompt", "x"}}, d).value().n_predict, 64);
  EXPECT_EQ(Parse({{"prompt", "x"}, {"n_predict", 0}}, d).value().n_predict, 0);
  EXPECT_EQ(Parse({{"prompt", "x"}, {"n_predict", -1}}, d).value().n_predict, -1);
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"n_predict", -2}}, d), "n_predict");
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"n_predict", 1.5}}, d), "n_predict");
  EXPECT_EQ(Parse({{"prompt", "x"}, {"id_slot", 1}}, d).value().id_slot, 1);
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"id_slot", 2}}, d), "id_slot");
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"id_slot", -2}}, d), "id_slot");
}

TEST(LlamaCompletionRequest, SamplingUsesLlamaServersSpellingsAndDefaults) {
  LlamaDefaults d;
  d.temperature = 0.5f;
  d.seed = 42;
  auto def = Parse({{"prompt", "x"}}, d);
  ASSERT_TRUE(def.ok());
  const SamplingParams& s = def.value().req.sampling;
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.top_p, 0.95f);
  EXPECT_FLOAT_EQ(s.min_p, 0.05f);
  ASSERT_TRUE(s.seed.has_value());
  EXPECT_EQ(*s.seed, 42u);

  auto r = Parse({{"prompt", "x"}, {"temperature", -1}, {"top_k", -5}, {"top_p", 2}, {"seed", -1},
                  {"repeat_penalty", 1.2}, {"min_p", 0}, {"stop", {"\n"}}, {"stream", true}, {"n_probs", 3},
                  {"logit_bias", {{5, -2.0}, {6, false}}}, {"grammar", "root ::= \"a\""}},
                 d);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const LlamaCompletion& c = r.value();
  EXPECT_FLOAT_EQ(c.req.sampling.temperature, 0.0f);  // negative: greedy
  EXPECT_EQ(c.req.sampling.top_k, 0);                 // <= 0: off
  EXPECT_FLOAT_EQ(c.req.sampling.top_p, 1.0f);
  EXPECT_FALSE(c.req.sampling.seed.has_value());      // -1: a fresh seed, whatever --seed says
  EXPECT_FLOAT_EQ(c.req.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(c.req.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(c.req.stream);
  EXPECT_TRUE(c.req.logprobs);
  EXPECT_EQ(c.req.top_logprobs, 3);
  ASSERT_EQ(c.req.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(c.req.sampling.logit_bias[0].first, 5);
  EXPECT_TRUE(std::isinf(c.req.sampling.logit_bias[1].second));
  EXPECT_EQ(c.req.grammar, "root ::= \"a\"");
  auto obj_bias = Parse({{"prompt", "x"}, {"logit_bias", {{"17", 1.5}}}});
  ASSERT_TRUE(obj_bias.ok());
  EXPECT_EQ(obj_bias.value().req.sampling.logit_bias[0].first, 17);
  auto schema = Parse({{"prompt", "x"}, {"json_schema", {{"type", "object"}}}});
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ(schema.value().req.response_format, ResponseFormat::kJsonSchema);
}

// Knobs ember has no sampler for: their "off" value passes (the web UI sends them), anything else is a
// 400 naming the knob, never a silently different distribution.
TEST(LlamaCompletionRequest, UnsupportedSamplersAreRefusedUnlessOff) {
  const json off = {{"prompt", "x"}, {"mirostat", 0}, {"dry_multiplier", 0}, {"xtc_probability", 0},
                    {"typical_p", 1}, {"dynatemp_range", 0}, {"ignore_eos", false}, {"n_cmpl", 1}};
  EXPECT_TRUE(Parse(off).ok());
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"mirostat", 2}, {"dry_multiplier", 0.8}, {"xtc_probability", 0.5}, {"typical_p", 0.9},
           {"dynatemp_range", 0.3}, {"ignore_eos", true}, {"n_cmpl", 2}}) {
    json body = off;
    body[key] = value;
    EXPECT_EQ(ParamOf(body), key) << key;
  }
}

TEST(LlamaCompletionRequest, WrongTypesNameTheField) {
  const std::vector<std::pair<std::string, json>> rows = {
      {"n_predict", "many"}, {"id_slot", "0"},        {"cache_prompt", 1},   {"return_tokens", "yes"},
      {"stream", "true"},    {"stop", 3},             {"temperature", "hot"}, {"top_k", "x"},
      {"top_p", json::array()}, {"min_p", "0"},       {"seed", "42"},        {"repeat_penalty", "1"},
      {"presence_penalty", "0"}, {"n_probs", 100},    {"grammar", 1},        {"json_schema", "x"},
      {"logit_bias", "x"},   {"timings_per_token", 1}, {"mirostat", "0"},    {"model", 3}, {"cache_salt", 1}};
  for (const auto& [key, value] : rows) {
    json body = {{"prompt", "x"}};
    body[key] = value;
    auto r = Parse(body);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.error().http_status, 400) << key;
    EXPECT_EQ(r.error().param.rfind(key, 0), 0u) << key << " -> " << r.error().param;
  }
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"logit_bias", {{5}}}}), "logit_bias[0]");
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"logit_bias", {{"word", 1}}}}), "logit_bias.word");
  EXPECT_EQ(ParamOf({{"prompt", "x"}, {"stop", {"a", 1}}}), "stop[1]");
}

TEST(LlamaTokenizeRequest, DefaultsAndWrongTypes) {
  auto r = ParseLlamaTokenize({{"content", "hi"}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().add_special);  // llama-server's default
  EXPECT_TRUE(r.value().parse_special);
  EXPECT_FALSE(r.value().with_pieces);
  EXPECT_EQ(ParseLlamaTokenize(json::object()).error().param, "content");
  EXPECT_EQ(ParseLlamaTokenize({{"content", 1}}).error().param, "content");
  EXPECT_EQ(ParseLlamaTokenize({{"content", "x"}, {"add_special", "yes"}}).error().param, "add_special");
  EXPECT_EQ(ParseLlamaTokenize({{"content", "x"}, {"with_pieces", 1}}).error().param, "with_pieces");
  EXPECT_FALSE(ParseLlamaTokenize("text").ok());
}

TEST(LlamaDetokenizeRequest, TokenIdsOnly) {
  auto r = ParseLlamaDetokenize({{"tokens", {1, 2}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ParseLlamaDetokenize(json::object()).error().param, "tokens");
  EXPECT_EQ(ParseLlamaDetokenize({{"tokens", "1 2"}}).error().param, "tokens");
  EXPECT_EQ(ParseLlamaDetokenize({{"tokens", {1, -1}}}).error().param, "tokens[1]");
  EXPECT_EQ(ParseLlamaDetokenize({{"tokens", {1, 2147483648LL}}}).error().param, "tokens[1]");
}

TEST(LlamaPieces, StringWhenValidUtf8ElseBytes) {
  EXPECT_EQ(PieceJson(" world"), json(" world"));
  EXPECT_EQ(PieceJson("\xC3\xA1"), json("\xC3\xA1"));  // á, whole
  EXPECT_EQ(PieceJson("\xC3"), json::array({195}));   // half of it
  EXPECT_EQ(PieceJson("\xA1"), json::array({161}));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\xA4\x97"));   // 🤗
  EXPECT_TRUE(IsValidUtf8(""));
}

}  // namespace
}  // namespace ember::server
