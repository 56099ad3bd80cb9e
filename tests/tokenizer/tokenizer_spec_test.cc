// Reading a tokenizer from user files (GGUF metadata, HF tokenizer.json / tokenizer_config.json): a member
// of the wrong type or an out-of-range id is an error naming it, never an exception that ends the process.
#include "tokenizer/tokenizer_spec.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "support/mem_env.h"
#include "support/test_support.h"

namespace ember {
namespace {

using nlohmann::json;

StatusOr<TokenizerSpec> FromGguf(const std::function<void(GgufWriter&)>& tweak, VocabText text = VocabText::kCopy) {
  GgufWriter w;
  w.SetStr("tokenizer.ggml.model", "gpt2");
  w.SetStrArray("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.SetStrArray("tokenizer.ggml.merges", {"a b"});
  tweak(w);
  static std::vector<uint8_t> bytes;
  bytes = w.ToBytes();
  auto f = GgufFile::Parse(bytes.data(), bytes.size(), "tok.gguf");
  if (!f.ok()) return f.status();
  return TokenizerSpecFromGguf(**f, text);
}

TEST(TokenizerSpecGguf, WrongTypesAndIdsAreNamed) {
  ASSERT_TRUE(FromGguf([](GgufWriter&) {}).ok());
  auto tokens = FromGguf([](GgufWriter& w) { w.SetU32("tokenizer.ggml.tokens", 3); });
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("'tokenizer.ggml.tokens': expected array"), std::string::npos)
      << tokens.status().ToString();
  auto merges = FromGguf([](GgufWriter& w) { w.SetI32Array("tokenizer.ggml.merges", {1}); });
  ASSERT_FALSE(merges.ok());
  EXPECT_NE(merges.status().message().find("tokenizer.ggml.merges"), std::string::npos);
  for (int32_t bad : {-5, 3, 1 << 30}) {
    auto id = FromGguf([bad](GgufWriter& w) { w.SetI32("tokenizer.ggml.bos_token_id", bad); });
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_NE(id.status().message().find("bos_token_id " + std::to_string(bad) + " is outside the vocabulary"),
              std::string::npos)
        << id.status().ToString();
  }
}

// Counting only (what `ember models` asks): the same sizes, ids and errors, no token text or merges.
TEST(TokenizerSpecGguf, CountOnlyKeepsSizesIdsAndErrors) {
  const auto tweak = [](GgufWriter& w) {
    w.SetU32("tokenizer.ggml.eos_token_id", 2);
    w.SetStr("tokenizer.ggml.pre", "qwen2");
  };
  StatusOr<TokenizerSpec> full = FromGguf(tweak);
  StatusOr<TokenizerSpec> counted = FromGguf(tweak, VocabText::kCountOnly);
  ASSERT_TRUE(full.ok() && counted.ok());
  EXPECT_EQ(counted->tokens, std::vector<std::string>(3));
  EXPECT_TRUE(counted->merges.empty());
  EXPECT_EQ(full->merges.size(), 1u);
  EXPECT_EQ(counted->token_types, full->token_types);
  EXPECT_EQ(counted->eos_id, 2);
  EXPECT_EQ(counted->pre, "qwen2");
  for (const auto& bad : std::vector<std::function<void(GgufWriter&)>>{
           [](GgufWriter& w) { w.SetU32("tokenizer.ggml.tokens", 3); },
           [](GgufWriter& w) { w.SetI32Array("tokenizer.ggml.merges", {1}); },
           [](GgufWriter& w) { w.SetI32("tokenizer.ggml.bos_token_id", 3); }}) {
    StatusOr<TokenizerSpec> a = FromGguf(bad);
    StatusOr<TokenizerSpec> b = FromGguf(bad, VocabText::kCountOnly);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().message(), b.status().message());
  }
}

// Writes tokenizer.json / tokenizer_config.json (after `tweak`) and reads them.
StatusOr<TokenizerSpec> FromHf(const std::function<void(json& tok, json& cfg)>& tweak) {
  json tok = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}},
              {"added_tokens", {{{"id", 3}, {"content", "<s>"}, {"special", true}}}}};
  json cfg = {{"bos_token", "<s>"}, {"add_bos_token", true}};
  tweak(tok, cfg);
  ::ember::testing::TempDir dir;
  std::ofstream(dir.file("tokenizer.json")) << tok.dump();
  std::ofstream(dir.file("tokenizer_config.json")) << cfg.dump();
  return TokenizerSpecFromHf(dir.file("tokenizer.json"), dir.file("tokenizer_config.json"), "llama-bpe");
}

void ExpectHfError(const std::function<void(json&, json&)>& tweak, const std::string& needle) {
  const auto r = FromHf(tweak);
  ASSERT_FALSE(r.ok()) << "expected: " << needle;
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

TEST(TokenizerSpecHf, ValidFiles) {
  const auto r = FromHf([](json&, json&) {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tokens.size(), 4u);
  EXPECT_EQ(r->bos_id, 3);
  EXPECT_TRUE(r->add_bos);
}

TEST(TokenizerSpecHf, WrongTypesAreErrorsNotExceptions) {
  ExpectHfError([](json& t, json&) { t["model"] = "BPE"; }, "no 'model' object");
  ExpectHfError([](json& t, json&) { t["model"]["type"] = 7; }, "'type' must be a string");
  ExpectHfError([](json& t, json&) { t["model"]["byte_fallback"] = "yes"; }, "'byte_fallback' must be true or false");
  ExpectHfError([](json& t, json&) { t["model"]["vocab"] = {"a", "b"}; }, "model.vocab missing");
  ExpectHfError([](json& t, json&) { t["model"]["vocab"]["a"] = "0"; }, "bad id for a");
  ExpectHfError([](json& t, json&) { t["model"]["vocab"]["a"] = INT64_MAX; }, "bad id for a");  // id + 1 overflowed
  ExpectHfError([](json& t, json&) { t["model"]["merges"] = "a b"; }, "model.merges must be a list");
  ExpectHfError([](json& t, json&) { t["added_tokens"] = 5; }, "'added_tokens' must be a list");
  ExpectHfError([](json& t, json&) { t["added_tokens"] = {5}; }, "added_tokens entry must be an object");
  ExpectHfError([](json& t, json&) { t["added_tokens"][0]["id"] = "3"; }, "bad id for an added token");
  ExpectHfError([](json& t, json&) { t["added_tokens"][0]["content"] = 3; }, "'content' must be a string");
  ExpectHfError([](json& t, json&) { t["added_tokens"][0]["special"] = 1; }, "'special' must be true or false");
  ExpectHfError([](json&, json& c) { c = json::array(); }, "not a JSON object");
  ExpectHfError([](json&, json& c) { c["add_eos_token"] = "true"; }, "'add_eos_token' must be true or false");
}

TEST(TokenizerSpecHf, OddOptionalMembersAreIgnored) {
  // Shapes other converters write; none of them is an error.
  const auto r = FromHf([](json& t, json& c) {
    t["post_processor"] = {{"type", 5}};
    c["bos_token"] = {{"content", 5}};
    c["chat_template"] = json::array();
    c["add_bos_token"] = nullptr;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->bos_id, -1);
}

TEST(TokenizerSpecHf, ReadsThroughTheEnvItIsGiven) {
  // The files exist only in the in-memory Env: read from disk, both would be missing.
  MemEnv env;
  const json tok = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", json::array()}}}};
  const std::string t = tok.dump(), c = json::object().dump();
  env.PutDurableFile("/hf/tokenizer.json", {t.begin(), t.end()});
  env.PutDurableFile("/hf/tokenizer_config.json", {c.begin(), c.end()});
  auto r = TokenizerSpecFromHf("/hf/tokenizer.json", "/hf/tokenizer_config.json", "llama-bpe", &env);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tokens.size(), 2u);
  auto missing = TokenizerSpecFromHf("/hf/tokenizer.json", "/hf/nope.json", "llama-bpe", &env);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/hf/nope.json"), std::string::npos) << missing.status().ToString();
}

}  // namespace
}  // namespace ember
