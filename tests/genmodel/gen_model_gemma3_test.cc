// gen-model --arch gemma3: the tensors and keys llama.cpp's gemma3 loader reads (post-norms, q/k norms,
// sliding window and pattern, the local RoPE base), the Gemma 3 tokenizer, and llama.cpp loading it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "genmodel/gen_model.h"
#include "genmodel/peer_check_test_util.h"
#include "support/test_support.h"

namespace ember {
namespace {

using testing::TempDir;

GenModelOptions TinyGemma() {
  GenModelOptions o;
  o.arch = "gemma3";
  o.tokenizer = "gemma3";
  o.n_layer = 3;
  o.n_embd = 64;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ff = 96;
  o.n_ctx = 1024;
  o.sliding_window = 32;
  o.swa_pattern = 3;
  return o;
}

TEST(GenModelGemma3, WritesGemma3TensorsAndKeys) {
  TempDir dir;
  GenModelReport rep;
  ASSERT_TRUE(GenerateModel(TinyGemma(), dir.file("g.gguf"), &rep).ok());
  auto f = GgufFile::Open(dir.file("g.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.Str("general.architecture"), "gemma3");
  EXPECT_EQ(*g.U32("gemma3.attention.sliding_window"), 32u);
  EXPECT_EQ(*g.U32("gemma3.attention.sliding_window_pattern"), 3u);
  EXPECT_EQ(*g.F32("gemma3.rope.freq_base"), 1e6f);
  EXPECT_EQ(*g.F32("gemma3.rope.freq_base_swa"), 10000.0f);
  EXPECT_FALSE(g.Has("gemma3.final_logit_softcapping"));
  EXPECT_EQ(*g.Str("tokenizer.ggml.model"), "llama");  // SentencePiece-style Gemma 3 vocabulary
  EXPECT_EQ(*g.U32("tokenizer.ggml.bos_token_id"), 2u);
  for (int l = 0; l < 3; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* t : {"attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"}) {
      const GgufTensorInfo* ti = g.FindTensor(b + t + ".weight");
      ASSERT_NE(ti, nullptr) << b << t;
      EXPECT_EQ(ti->type, GgmlType::F32);
    }
    EXPECT_EQ(g.FindTensor(b + "attn_q_norm.weight")->ne[0], 16u);
    EXPECT_EQ(g.FindTensor(b + "post_ffw_norm.weight")->ne[0], 64u);
  }
  EXPECT_GT(rep.n_vocab, 262000);

  // No window: the keys are absent (llama.cpp then runs every layer global); a soft-cap is written.
  GenModelOptions o = TinyGemma();
  o.sliding_window = 0;
  o.logit_softcap = 30;
  ASSERT_TRUE(GenerateModel(o, dir.file("n.gguf"), &rep).ok());
  auto n = GgufFile::Open(dir.file("n.gguf"));
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE((*n)->Has("gemma3.attention.sliding_window"));
  EXPECT_EQ(*(*n)->F32("gemma3.final_logit_softcapping"), 30.0f);
}

TEST(GenModelGemma3, RejectsBadOptions) {
  GenModelReport rep;
  GenModelOptions o = TinyGemma();
  o.swa_pattern = -1;
  EXPECT_EQ(GenerateModel(o, "/nonexistent/x.gguf", &rep).code(), StatusCode::kInvalidArgument);
  o = TinyGemma();
  o.rope_scaling = "llama3";
  EXPECT_EQ(GenerateModel(o, "/nonexistent/x.gguf", &rep).code(), StatusCode::kInvalidArgument);
}

// llama.cpp loads gemma3 files ember writes (tied and untied, three weight types) with finite outputs.
TEST(GenModelGemma3Peer, LlamaCppLoadsGemma3) {
  TempDir dir;
  nlohmann::json list = nlohmann::json::array();
  int k = 0;
  for (const std::string type : {"f32", "f16", "q8_0"}) {
    GenModelOptions o = TinyGemma();
    o.type = o.type_embd = o.type_output = *GgmlTypeFromName(type);
    o.tied = (k++ % 2) == 0;
    GenModelReport rep;
    const std::string path = dir.file("gemma3-" + type + ".gguf");
    ASSERT_TRUE(GenerateModel(o, path, &rep).ok()) << path;
    EXPECT_TRUE(rep.fallbacks.empty()) << path;
    list.push_back({{"path", path}, {"tokens", {2, 105, 1000, 2000, 106}}});
  }
  testing::ExpectPeerLoadsAll(dir, list);
}

}  // namespace
}  // namespace ember
