// Summarize (what `ember inspect` prints under "summary"): missing keys are zeros, but a key that is
// present with the wrong type or an absurd value is an error naming the key, never a crash.
#include "format/model_summary.h"

#include <gtest/gtest.h>

#include <functional>

#include "format/gguf_writer.h"

namespace ember {
namespace {

// A small llama file; `tweak` changes its metadata before writing.
StatusOr<ModelSummary> SummarizeWith(const std::function<void(GgufWriter&)>& tweak) {
  GgufWriter w;
  w.SetStr("general.architecture", "llama");
  w.SetU32("llama.block_count", 2);
  w.SetU32("llama.embedding_length", 64);
  w.SetU32("llama.attention.head_count", 4);
  w.SetU32("llama.attention.head_count_kv", 2);
  w.SetU32("llama.context_length", 128);
  w.SetStrArray("tokenizer.ggml.tokens", {"a", "b"});
  EXPECT_TRUE(w.AddTensor("token_embd.weight", GgmlType::F32, {64, 2}, std::vector<uint8_t>(64 * 2 * 4)).ok());
  tweak(w);
  static std::vector<uint8_t> bytes;  // the parsed file points into it
  bytes = w.ToBytes();
  auto f = GgufFile::Parse(bytes.data(), bytes.size(), "m.gguf");
  if (!f.ok()) return f.status();
  return Summarize(**f);
}

void ExpectError(const std::function<void(GgufWriter&)>& tweak, const std::string& key, const std::string& why) {
  const auto s = SummarizeWith(tweak);
  ASSERT_FALSE(s.ok()) << "expected an error about " << key;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find(key), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find(why), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find("m.gguf"), std::string::npos) << s.status().ToString();
}

TEST(ModelSummary, ValidFile) {
  const auto s = SummarizeWith([](GgufWriter&) {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->arch, "llama");
  EXPECT_EQ(s->n_layer, 2);
  EXPECT_EQ(s->head_dim, 16);
  EXPECT_EQ(s->n_vocab, 2);
  EXPECT_EQ(s->kv_bytes_per_token_f16, 2u * 2 * (16 + 16) * 2);
  EXPECT_EQ(s->n_params, 128u);
}

TEST(ModelSummary, MissingKeysAreZero) {
  GgufWriter w;
  w.SetStrArray("tokenizer.ggml.tokens", {"a"});
  const auto bytes = w.ToBytes();
  auto f = GgufFile::Parse(bytes.data(), bytes.size(), "vocab.gguf");
  ASSERT_TRUE(f.ok());
  const auto s = Summarize(**f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->arch, "");
  EXPECT_EQ(s->kv_bytes_per_token_f16, 0u);
}

TEST(ModelSummary, WrongTypesAreNamed) {
  ExpectError([](GgufWriter& w) { w.SetU32("general.architecture", 7); }, "general.architecture", "expected string");
  ExpectError([](GgufWriter& w) { w.SetStr("llama.context_length", "4096"); }, "llama.context_length",
              "expected an integer");
  ExpectError([](GgufWriter& w) { w.SetF32("llama.block_count", 2.0f); }, "llama.block_count", "expected an integer");
  ExpectError([](GgufWriter& w) { w.SetU32("tokenizer.ggml.tokens", 5); }, "tokenizer.ggml.tokens", "expected array");
  ExpectError([](GgufWriter& w) { w.SetI32Array("tokenizer.ggml.tokens", {1, 2}); }, "tokenizer.ggml.tokens",
              "expected array of string");
  ExpectError([](GgufWriter& w) { w.SetStrArray("tokenizer.ggml.scores", {"x"}); }, "tokenizer.ggml.scores",
              "expected array of float32");
  ExpectError([](GgufWriter& w) { w.SetStr("tokenizer.ggml.bos_token_id", "1"); }, "tokenizer.ggml.bos_token_id",
              "expected an integer");
}

TEST(ModelSummary, AbsurdValuesAreNamed) {
  // Each of these would overflow kv_bytes_per_token (signed overflow) or divide INT64_MIN by -1.
  ExpectError([](GgufWriter& w) { w.SetI32("llama.embedding_length", -1); }, "llama.embedding_length", "outside 0..");
  ExpectError([](GgufWriter& w) { w.SetU64("llama.block_count", 1ull << 40); }, "llama.block_count", "outside 0..");
  ExpectError([](GgufWriter& w) { w.SetI32("llama.attention.head_count", -1); }, "llama.attention.head_count",
              "outside 0..");
  ExpectError([](GgufWriter& w) { w.SetU64("llama.attention.key_length", ~0ull); }, "llama.attention.key_length",
              "out of range");
}

}  // namespace
}  // namespace ember
