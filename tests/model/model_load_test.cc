// Model loading: every tensor's presence, type and shape is validated, with errors naming the tensor.
#include "model/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "format/gguf_writer.h"

namespace ember {
namespace {

constexpr int kEmbd = 32, kHead = 4, kHeadKv = 2, kFf = 64, kVocab = 16, kLayers = 2;

struct Tweak {
  std::string skip;                          // tensor to leave out
  std::map<std::string, std::vector<uint64_t>> shape;  // tensor -> replacement ne
  std::map<std::string, GgmlType> type;      // tensor -> replacement type (must fit the shape)
  std::string arch = "llama";
  std::map<std::string, uint32_t> u32;       // extra u32 metadata keys
  std::map<std::string, float> f32;          // extra f32 metadata keys
  std::function<void(GgufWriter&)> meta;     // last: any other metadata change (types included)
};

void Add(GgufWriter& w, const Tweak& t, const std::string& name, std::vector<uint64_t> ne) {
  if (name == t.skip) return;
  if (t.shape.count(name)) ne = t.shape.at(name);
  const GgmlType type = t.type.count(name) ? t.type.at(name) : GgmlType::F32;
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  std::vector<uint8_t> data(RowBytes(type, ne[0]) * (n / ne[0]), 0);
  ASSERT_TRUE(w.AddTensor(name, type, ne, std::move(data)).ok()) << name;
}

StatusOr<std::unique_ptr<Model>> Build(const Tweak& t, std::vector<uint8_t>* bytes) {
  GgufWriter w;
  const std::string a = t.arch;
  w.SetStr("general.architecture", a);
  w.SetU32(a + ".embedding_length", kEmbd);
  w.SetU32(a + ".block_count", kLayers);
  w.SetU32(a + ".attention.head_count", kHead);
  w.SetU32(a + ".attention.head_count_kv", kHeadKv);
  w.SetU32(a + ".feed_forward_length", kFf);
  w.SetU32(a + ".context_length", 128);
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  for (const auto& [k, v] : t.u32) w.SetU32(k, v);
  for (const auto& [k, v] : t.f32) w.SetF32(k, v);
  if (t.meta) t.meta(w);
  const uint64_t hd = kEmbd / kHead;
  Add(w, t, "token_embd.weight", {kEmbd, kVocab});
  Add(w, t, "output_norm.weight", {kEmbd});
  for (int i = 0; i < kLayers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    Add(w, t, b + "attn_norm.weight", {kEmbd});
    Add(w, t, b + "attn_q.weight", {kEmbd, kEmbd});
    Add(w, t, b + "attn_k.weight", {kEmbd, hd * kHeadKv});
    Add(w, t, b + "attn_v.weight", {kEmbd, hd * kHeadKv});
    Add(w, t, b + "attn_output.weight", {kEmbd, kEmbd});
    if (a == "qwen3" || a == "gemma3") {
      Add(w, t, b + "attn_q_norm.weight", {hd});
      Add(w, t, b + "attn_k_norm.weight", {hd});
    }
    if (a == "gemma3") {
      Add(w, t, b + "post_attention_norm.weight", {kEmbd});
      Add(w, t, b + "post_ffw_norm.weight", {kEmbd});
    }
    Add(w, t, b + "ffn_norm.weight", {kEmbd});
    Add(w, t, b + "ffn_gate.weight", {kEmbd, kFf});
    Add(w, t, b + "ffn_up.weight", {kEmbd, kFf});
    Add(w, t, b + "ffn_down.weight", {kFf, kEmbd});
  }
  *bytes = w.ToBytes();
  EMBER_ASSIGN_OR_RETURN(auto file, GgufFile::Parse(bytes->data(), bytes->size(), "test.gguf"));
  return Model::FromGguf(std::move(file));
}

void ExpectError(const Tweak& t, StatusCode code, const std::string& needle) {
  std::vector<uint8_t> bytes;
  auto m = Build(t, &bytes);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().ToString();
}

TEST(ModelLoadTest, ValidModelLoads) {
  std::vector<uint8_t> bytes;
  auto m = Build(Tweak{}, &bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_vocab, kVocab);
  EXPECT_EQ(c.head_dim_k, kEmbd / kHead);
  EXPECT_EQ(c.n_head_kv, kHeadKv);
  EXPECT_TRUE((*m)->tied_output());
  EXPECT_EQ((*m)->output().data, (*m)->token_embd().data);  // weights used in place
  const KvConfig kv = (*m)->MakeKvConfig(KvDtype::kF16);
  EXPECT_EQ(kv.n_kv_head, kHeadKv);
  EXPECT_EQ(kv.n_layer, kLayers);
}

TEST(ModelLoadTest, MissingTensorIsNamed) {
  Tweak t;
  t.skip = "blk.1.ffn_up.weight";
  ExpectError(t, StatusCode::kNotFound, "blk.1.ffn_up.weight");
  Tweak q;
  q.arch = "qwen3";
  q.skip = "blk.0.attn_k_norm.weight";
  ExpectError(q, StatusCode::kNotFound, "blk.0.attn_k_norm.weight");
}

TEST(ModelLoadTest, WrongShapeIsNamed) {
  Tweak t;
  t.shape["blk.0.attn_k.weight"] = {kEmbd, kEmbd};  // GQA expects kEmbd / 2 outputs
  ExpectError(t, StatusCode::kInvalidArgument, "blk.0.attn_k.weight");
}

TEST(ModelLoadTest, WrongTypeIsNamed) {
  Tweak t;
  t.type["blk.0.ffn_norm.weight"] = GgmlType::F16;  // norms must be f32
  ExpectError(t, StatusCode::kInvalidArgument, "blk.0.ffn_norm.weight");
  Tweak u;
  u.type["blk.1.attn_q.weight"] = GgmlType::I32;  // not a matmul weight type
  ExpectError(u, StatusCode::kUnimplemented, "blk.1.attn_q.weight");
}

TEST(ModelLoadTest, UnknownArchitectureAndMissingKey) {
  Tweak t;
  t.arch = "mamba";
  ExpectError(t, StatusCode::kUnimplemented, "mamba");
  // qwen2 needs q/k/v biases, which this builder does not write.
  Tweak q;
  q.arch = "qwen2";
  ExpectError(q, StatusCode::kNotFound, "blk.0.attn_q.bias");
}

// Metadata a converter or an attacker got wrong: each is an error naming the key, never an abort, a
// throw, or an allocation sized by the bad value (block_count 2^40 used to reach layers_.resize()).
TEST(ModelLoadTest, CorruptMetadataIsNamed) {
  struct Case {
    std::function<void(GgufWriter&)> meta;
    std::string needle;
  };
  const Case cases[] = {
      {[](GgufWriter& w) { w.SetU32("general.architecture", 3); }, "key 'general.architecture': expected string"},
      {[](GgufWriter& w) { w.SetStr("llama.context_length", "4k"); }, "key 'llama.context_length': expected an integer"},
      {[](GgufWriter& w) { w.SetF32("llama.block_count", 2); }, "key 'llama.block_count': expected an integer"},
      {[](GgufWriter& w) { w.SetI32("llama.embedding_length", -1); }, "'llama.embedding_length' is -1, outside 1.."},
      {[](GgufWriter& w) { w.SetU64("llama.block_count", 1ull << 40); }, "'llama.block_count' is 1099511627776"},
      {[](GgufWriter& w) { w.SetU64("llama.feed_forward_length", ~0ull); }, "'llama.feed_forward_length': value"},
      {[](GgufWriter& w) { w.SetI32("llama.attention.head_count_kv", -2); }, "'llama.attention.head_count_kv' is -2"},
      {[](GgufWriter& w) { w.SetU64("llama.context_length", 1ull << 62); }, "'llama.context_length' is"},
      {[](GgufWriter& w) { w.SetI32("llama.context_length", 0); }, "'llama.context_length' is 0"},
      // A huge head dimension with llama3 rope scaling used to size the rope factor table (2^39 floats).
      {[](GgufWriter& w) {
         w.SetU64("llama.attention.key_length", 1ull << 40);
         w.SetStr("llama.rope.scaling.type", "llama3");
       },
       "'llama.attention.key_length' is 1099511627776"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    Tweak t;
    t.meta = c.meta;
    ExpectError(t, StatusCode::kInvalidArgument, c.needle);
  }
}

// gemma3: the local/global pattern, per-kind RoPE bases and the Gemma scales come from the metadata the
// way llama.cpp reads them; window layers become KV window layers.
TEST(ModelLoadTest, Gemma3ConfigAndWindowLayers) {
  Tweak t;
  t.arch = "gemma3";
  t.u32["gemma3.attention.sliding_window"] = 64;
  t.u32["gemma3.attention.sliding_window_pattern"] = 2;  // layer 0 local, layer 1 global
  t.f32["gemma3.rope.freq_base"] = 1e6f;
  t.f32["gemma3.rope.freq_base_swa"] = 5000.0f;
  std::vector<uint8_t> bytes;
  auto m = Build(t, &bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.n_swa, 64);
  EXPECT_TRUE(c.is_swa(0));
  EXPECT_FALSE(c.is_swa(1));
  EXPECT_EQ(c.rope_freq_base, 1e6f);
  EXPECT_EQ(c.rope_freq_base_swa, 5000.0f);
  EXPECT_EQ(c.rope_layout, kernels::RopeLayout::kNeox);
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / std::sqrt(static_cast<float>(kEmbd / kHead)));
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(static_cast<float>(kEmbd)));
  EXPECT_EQ(c.final_logit_softcap, 0.0f);
  ASSERT_NE((*m)->layers()[1].attn_post_norm, nullptr);
  ASSERT_NE((*m)->layers()[1].ffn_post_norm, nullptr);
  const KvConfig kv = (*m)->MakeKvConfig(KvDtype::kF16);
  ASSERT_EQ(kv.kinds.size(), 2u);
  EXPECT_EQ(kv.kinds[0].kind, StateKind::kWindow);
  EXPECT_EQ(kv.kinds[0].window, 64);
  EXPECT_EQ(kv.kinds[1].kind, StateKind::kFull);
  EXPECT_EQ(kv.WindowMargin(64), 32);  // max(one block, window / 4)
  EXPECT_TRUE(kv.Validate().ok());

  // No sliding_window key: every layer global, full-attention KV; pattern defaults to 6.
  Tweak g;
  g.arch = "gemma3";
  auto full = Build(g, &bytes);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ((*full)->config().n_swa, 0);
  EXPECT_FALSE((*full)->config().is_swa(0));
  EXPECT_TRUE((*full)->MakeKvConfig(KvDtype::kF16).kinds.empty());
  g.u32["gemma3.attention.sliding_window"] = 16;
  auto six = Build(g, &bytes);
  ASSERT_TRUE(six.ok());
  EXPECT_TRUE((*six)->config().is_swa(0) && (*six)->config().is_swa(1));  // il % 6 < 5
  EXPECT_EQ((*six)->config().rope_freq_base_swa, 10000.0f);
  g.f32["gemma3.final_logit_softcapping"] = 30.0f;
  auto capped = Build(g, &bytes);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ((*capped)->config().final_logit_softcap, 30.0f);
}

TEST(ModelLoadTest, Gemma3MissingPostNormIsNamed) {
  Tweak t;
  t.arch = "gemma3";
  t.skip = "blk.1.post_ffw_norm.weight";
  ExpectError(t, StatusCode::kNotFound, "blk.1.post_ffw_norm.weight");
}

}  // namespace
}  // namespace ember
