// qwen3moe routing and hyperparameters (model/moe.h): RouteRow's softmax, top-k order, tie rule and
// normalisation against values worked out here; the expert keys read from a hostile file are bounded and
// named, and expert_feed_forward_length defaults as llama.cpp 80fb11a derives it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/model_config.h"
#include "model/moe.h"

namespace ember {
namespace {

TEST(MoeRouteTest, TopKInDescendingOrderWithNormalisedWeights) {
  const float logits[] = {0.0f, 2.0f, 1.0f, 3.0f, -1.0f};
  int32_t ids[2];
  float w[2];
  RouteRow(logits, 5, 2, /*norm=*/true, ids, w);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 1);
  // Normalised over the two chosen: the softmax denominator cancels, leaving e^3 / (e^3 + e^2).
  const double w0 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.0));
  EXPECT_NEAR(w[0], w0, 1e-6);
  EXPECT_NEAR(w[1], 1 - w0, 1e-6);

  RouteRow(logits, 5, 2, /*norm=*/false, ids, w);  // plain softmax probabilities
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(2.0) / z, 1e-6);
}

TEST(MoeRouteTest, TiesGoToTheLowerExpertAndAllExpertsCanBeChosen) {
  const float flat[] = {0.5f, 0.5f, 0.5f, 0.5f};
  int32_t ids[4];
  float w[4];
  RouteRow(flat, 4, 4, true, ids, w);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(ids[j], j);
    EXPECT_FLOAT_EQ(w[j], 0.25f);
  }
  // A row whose chosen probabilities underflow is divided by the fp16 floor, not by zero.
  const float spread[] = {0.0f, -200.0f, -200.0f};
  RouteRow(spread, 3, 1, true, ids, w);
  EXPECT_EQ(ids[0], 0);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  int32_t id2[2];
  float w2[2];
  RouteRow(spread, 3, 2, true, id2, w2);
  EXPECT_EQ(id2[1], 1);
  EXPECT_TRUE(std::isfinite(w2[1]));
}

StatusOr<ModelConfig> Read(const std::function<void(GgufWriter&)>& tweak) {
  GgufWriter w;
  w.SetStr("general.architecture", "qwen3moe");
  w.SetU32("qwen3moe.embedding_length", 64);
  w.SetU32("qwen3moe.block_count", 2);
  w.SetU32("qwen3moe.attention.head_count", 4);
  w.SetU32("qwen3moe.feed_forward_length", 256);
  w.SetU32("qwen3moe.expert_count", 16);
  w.SetU32("qwen3moe.expert_used_count", 4);
  if (tweak) tweak(w);
  const std::vector<uint8_t> bytes = w.ToBytes();
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Parse(bytes.data(), bytes.size(), "t.gguf"));
  return ReadModelConfig(*f, "qwen3moe");
}

TEST(MoeConfigTest, ExpertKeysAndTheirDefaults) {
  auto c = Read(nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->moe());
  EXPECT_EQ(c->n_expert, 16);
  EXPECT_EQ(c->n_expert_used, 4);
  EXPECT_EQ(c->n_ff_exp, 256 / 4);  // feed_forward_length / expert_used_count without the key
  auto sized = Read([](GgufWriter& w) { w.SetU32("qwen3moe.expert_feed_forward_length", 96); });
  ASSERT_TRUE(sized.ok());
  EXPECT_EQ(sized->n_ff_exp, 96);
}

TEST(MoeConfigTest, HostileExpertKeysAreRefusedNamingTheKey) {
  const struct {
    std::function<void(GgufWriter&)> tweak;
    const char* want;
  } cases[] = {
      {[](GgufWriter& w) { w.SetU32("qwen3moe.expert_count", 0); }, "'qwen3moe.expert_count' is 0"},
      {[](GgufWriter& w) { w.SetU32("qwen3moe.expert_count", 100000); }, "'qwen3moe.expert_count' is 100000"},
      {[](GgufWriter& w) { w.SetU32("qwen3moe.expert_used_count", 17); }, "'qwen3moe.expert_used_count' is 17"},
      {[](GgufWriter& w) { w.SetI32("qwen3moe.expert_used_count", -1); }, "'qwen3moe.expert_used_count' is -1"},
      {[](GgufWriter& w) { w.SetStr("qwen3moe.expert_count", "16"); }, "'qwen3moe.expert_count': expected an integer"},
      {[](GgufWriter& w) { w.SetU64("qwen3moe.expert_feed_forward_length", 1ull << 40); },
       "'qwen3moe.expert_feed_forward_length' is"},
  };
  for (const auto& c : cases) {
    auto r = Read(c.tweak);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace ember
