// The qwen35 hyperparameters read from a hostile file (docs/hybrid.md): every ssm.* size is bounded and
// checked against the others before anything is sized from it, the recurrent-layer list must cover the
// layers, the MTP count must leave a trunk, and each refusal names its key; a valid set gives the
// layer kinds and state sizes llama.cpp 80fb11a derives.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/model_config.h"

namespace ember {
namespace {

StatusOr<ModelConfig> Read(const std::function<void(GgufWriter&)>& tweak) {
  GgufWriter w;
  w.SetStr("general.architecture", "qwen35");
  w.SetU32("qwen35.embedding_length", 64);
  w.SetU32("qwen35.block_count", 8);
  w.SetU32("qwen35.attention.head_count", 4);
  w.SetU32("qwen35.attention.head_count_kv", 2);
  w.SetU32("qwen35.attention.key_length", 16);
  w.SetU32("qwen35.feed_forward_length", 128);
  w.SetU32("qwen35.rope.dimension_count", 4);
  w.SetU32("qwen35.ssm.conv_kernel", 4);
  w.SetU32("qwen35.ssm.state_size", 16);
  w.SetU32("qwen35.ssm.group_count", 2);
  w.SetU32("qwen35.ssm.time_step_rank", 4);
  w.SetU32("qwen35.ssm.inner_size", 64);
  if (tweak) tweak(w);
  const std::vector<uint8_t> bytes = w.ToBytes();
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Parse(bytes.data(), bytes.size(), "t.gguf"));
  return ReadModelConfig(*f, "qwen35");
}

TEST(Qwen35ConfigTest, AValidSetGivesTheLayerKindsAndStateSizes) {
  auto c = Read(nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->recurrent_layers.size(), 8u);
  for (int il = 0; il < 8; ++il) EXPECT_EQ(c->is_recurrent(il), (il + 1) % 4 != 0) << il;  // interval 4
  EXPECT_EQ(c->ssm_conv_channels(), 2 * 2 * 16 + 64);
  EXPECT_EQ(c->ssm_state_floats(), 3 * 128 + 4 * 16 * 16);
  auto listed = Read([](GgufWriter& w) {
    w.SetI32Array("qwen35.attention.recurrent_layers", {1, 0, 1, 0, 1, 0, 1, 0});
    w.SetU32("qwen35.block_count", 9);
    w.SetU32("qwen35.nextn_predict_layers", 1);  // the ninth block is MTP: not in the trunk
  });
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->n_layer, 8);
  EXPECT_EQ(listed->n_mtp_layers, 1);
  EXPECT_TRUE(listed->is_recurrent(0));
  EXPECT_FALSE(listed->is_recurrent(1));
}

TEST(Qwen35ConfigTest, HostileValuesAreRefusedNamingTheKey) {
  const struct {
    std::function<void(GgufWriter&)> tweak;
    const char* want;
  } cases[] = {
      {[](GgufWriter& w) { w.SetU32("qwen35.ssm.conv_kernel", 1); }, "ssm.conv_kernel' must be at least 2"},
      {[](GgufWriter& w) { w.SetU32("qwen35.ssm.conv_kernel", 65); }, "'qwen35.ssm.conv_kernel' is 65"},
      {[](GgufWriter& w) { w.SetU64("qwen35.ssm.state_size", 1ull << 40); }, "'qwen35.ssm.state_size' is"},
      {[](GgufWriter& w) { w.SetI32("qwen35.ssm.group_count", -1); }, "'qwen35.ssm.group_count' is -1"},
      {[](GgufWriter& w) { w.SetU32("qwen35.ssm.inner_size", 63); }, "ssm.inner_size (63) must be"},
      {[](GgufWriter& w) { w.SetU32("qwen35.ssm.group_count", 3); }, "must be a multiple of ssm.group_count (3)"},
      {[](GgufWriter& w) { w.SetStr("qwen35.ssm.time_step_rank", "4"); }, "'qwen35.ssm.time_step_rank': expected an integer"},
      {[](GgufWriter& w) { w.SetI32Array("qwen35.attention.recurrent_layers", {1, 0}); }, "has 2 entries for 8 layers"},
      {[](GgufWriter& w) { w.SetStrArray("qwen35.attention.recurrent_layers", {"x"}); }, "expected array of integers"},
      {[](GgufWriter& w) { w.SetU32("qwen35.full_attention_interval", 0); }, "'qwen35.full_attention_interval' is 0"},
      {[](GgufWriter& w) { w.SetU32("qwen35.nextn_predict_layers", 8); }, "'qwen35.nextn_predict_layers' is 8"},
  };
  for (const auto& c : cases) {
    auto r = Read(c.tweak);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
  // Missing ssm keys are named too.
  GgufWriter w;
  w.SetStr("general.architecture", "qwen35");
  w.SetU32("qwen35.embedding_length", 64);
  w.SetU32("qwen35.block_count", 2);
  w.SetU32("qwen35.attention.head_count", 4);
  w.SetU32("qwen35.feed_forward_length", 128);
  const std::vector<uint8_t> bytes = w.ToBytes();
  auto f = GgufFile::Parse(bytes.data(), bytes.size(), "t.gguf");
  ASSERT_TRUE(f.ok());
  auto r = ReadModelConfig(**f, "qwen35");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ssm.conv_kernel"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ember
