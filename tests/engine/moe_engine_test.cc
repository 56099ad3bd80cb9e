// The expert mixture reads only the experts its rows chose (model/moe.h): with the router zeroed every
// row's softmax is flat, so the tie rule picks experts 0..k-1, and the other experts' weights are
// overwritten with NaN in the file. A forward that touched any of them would turn the logits into NaN;
// the control run poisons a chosen expert instead and must see NaN, so the test can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "format/gguf.h"

namespace ember {
namespace {

constexpr int kExperts = 8, kUsed = 2, kExpertFf = 32, kEmbd = 64, kLayers = 2;

// Writes `value` over experts [e0, e1) of every *_exps tensor and zeros over every router.
void Poison(const std::string& path, int e0, int e1) {
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<std::pair<uint64_t, std::vector<float>>> writes;
  for (const GgufTensorInfo& t : (*f)->tensors()) {
    const uint64_t at = (*f)->data_offset() + t.offset;
    if (t.name.find("ffn_gate_inp") != std::string::npos) {
      writes.push_back({at, std::vector<float>(t.n_elements, 0.0f)});
    } else if (t.name.find("_exps.weight") != std::string::npos) {
      ASSERT_EQ(t.type, GgmlType::F32);
      const uint64_t per = t.n_elements / kExperts;
      writes.push_back({at + e0 * per * sizeof(float),
                        std::vector<float>((e1 - e0) * per, std::numeric_limits<float>::quiet_NaN())});
    }
  }
  f->reset();
  std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
  for (const auto& [at, v] : writes) {
    out.seekp(static_cast<std::streamoff>(at));
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
  ASSERT_TRUE(out.good());
}

// Prefill 40 tokens in chunks of 16, then 4 decodes; whether every logit of every step was finite.
bool RunFinite(const std::string& path) {
  EngineOptions eo;
  eo.threads = 2;
  eo.load_tokenizer = false;
  eo.ubatch = 16;
  auto engine = Engine::Load(path, eo);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return false;
  auto seq = (*engine)->NewSequence();
  EXPECT_TRUE(seq.ok());
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(100 + 37 * i);
  auto logits = (*engine)->Prefill(**seq, prompt, 16);
  EXPECT_TRUE(logits.ok());
  if (!logits.ok()) return false;
  const int64_t nv = (*engine)->model().config().n_vocab;
  bool finite = true;
  for (int step = 0; step < 5; ++step) {
    for (int64_t i = 0; i < nv; ++i) finite = finite && std::isfinite((*logits)[i]);
    if (step == 4) break;
    logits = (*engine)->Decode(**seq, 200 + step);
    EXPECT_TRUE(logits.ok());
    if (!logits.ok()) return false;
  }
  return finite;
}

TEST(MoeEngineTest, ExpertsNoRowChoseAreNeverRead) {
  const std::string dir = testutil::MakeTempDir("moe_unread");
  const std::string args = "--arch qwen3moe --tokenizer llama3 --n-layer " + std::to_string(kLayers) + " --n-embd " +
                           std::to_string(kEmbd) + " --n-head 4 --n-head-kv 2 --n-ff 64 --experts " +
                           std::to_string(kExperts) + " --experts-used " + std::to_string(kUsed) + " --expert-ff " +
                           std::to_string(kExpertFf) + " --type f32 --seed 9";
  const std::string unread = testutil::GenModel(dir, "unread", args);
  Poison(unread, kUsed, kExperts);  // NaN in every expert the flat router never picks
  EXPECT_TRUE(RunFinite(unread)) << "an expert no row chose was read";

  const std::string control = testutil::GenModel(dir, "control", args);
  Poison(control, kUsed - 1, kExperts);  // NaN in a chosen expert too
  EXPECT_FALSE(RunFinite(control)) << "the poison did not reach the logits: the test would not see a stray read";
}

}  // namespace
}  // namespace ember
