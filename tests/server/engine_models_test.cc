// The real engine behind several models (server/engine_model_loader.h), on tiny generated models:
// FindServedModels over a folder (runnable and not, MODEL first, served context), EngineModelLoader's
// cost, and the router unloading a model for --max-loaded 1 and reloading it warm from the SSD tier
// (the same greedy reply, its prompt served from "ssd").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/engine_model_loader.h"
#include "server/model_router.h"
#include "support/test_support.h"

namespace ember::server {
namespace {

namespace fs = std::filesystem;

class EngineModelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (int seed : {7, 8}) {
      std::string name = "m";
      name += std::to_string(seed);
      const std::string cmd = testing::EmberBinary() + " gen-model --out " + dir_->file(name + ".gguf") +
                              " --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type f32 --ctx 1024 --seed " +
                              std::to_string(seed) + " > /dev/null";
      ASSERT_EQ(testing::RunCommand(cmd).exit_code, 0);
    }
    std::ofstream(dir_->file("junk.gguf")) << "not a model";
  }
  static void TearDownTestSuite() { delete dir_; }

  static ServeOptions Options() {
    ServeOptions o;
    o.models_dirs = {dir_->path().string()};
    o.model_stores = false;
    return o;
  }
  static const ModelSpec& Find(const std::vector<ModelSpec>& specs, const std::string& name) {
    for (const ModelSpec& s : specs) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << "no model " << name;
    return specs.front();
  }

  static testing::TempDir* dir_;
};
testing::TempDir* EngineModelsTest::dir_ = nullptr;

TEST_F(EngineModelsTest, FindServedModelsListsAFolderRunnableOrNot) {
  const std::vector<ModelSpec> specs = FindServedModels(Options());
  ASSERT_EQ(specs.size(), 3u);
  const ModelSpec& m7 = Find(specs, "m7");
  EXPECT_TRUE(m7.runnable) << m7.why_not;
  EXPECT_EQ(m7.path, dir_->file("m7.gguf"));
  EXPECT_EQ(m7.source, "models-dir");
  EXPECT_EQ(m7.arch, "llama");
  EXPECT_EQ(m7.context_length, 1024);
  EXPECT_EQ(m7.size_bytes, fs::file_size(dir_->file("m7.gguf")));
  const ModelSpec& junk = Find(specs, "junk");
  EXPECT_FALSE(junk.runnable);
  EXPECT_FALSE(junk.why_not.empty());

  ServeOptions with_model = Options();
  with_model.model_path = dir_->file("m8.gguf");
  with_model.ctx_size = 256;
  const std::vector<ModelSpec> again = FindServedModels(with_model);
  ASSERT_EQ(again.size(), 3u);  // MODEL is one of the folder's: listed once
  EXPECT_EQ(again[0].name, "m8");
  EXPECT_EQ(again[0].source, "MODEL");
  EXPECT_TRUE(again[0].runnable);
  EXPECT_EQ(again[0].context_length, 256);  // --ctx-size is what a sequence gets
}

TEST_F(EngineModelsTest, TheCostIsTheFileAndOneToParallelFullContexts) {
  ServeOptions o = Options();
  o.parallel = 3;
  o.ctx_size = 512;
  EngineModelLoader loader(o);
  const std::vector<ModelSpec> specs = FindServedModels(o);
  const ModelSpec& m7 = Find(specs, "m7");
  StatusOr<ModelCost> c = loader.Estimate(m7);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->weight_bytes, fs::file_size(m7.path));
  ASSERT_GT(c->min_kv_bytes, 0u);
  EXPECT_EQ(c->min_kv_bytes % (512 + 32), 0u);  // a whole number of bytes per position, context + a block
  EXPECT_EQ(c->want_kv_bytes, 3 * c->min_kv_bytes);
  o.kv_budget = "1M";
  StatusOr<ModelCost> fixed = EngineModelLoader(o).Estimate(m7);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->min_kv_bytes, 1u << 20);
  EXPECT_EQ(fixed->want_kv_bytes, 1u << 20);
  EXPECT_FALSE(loader.Estimate(Find(specs, "junk")).ok());
}

// A model file reached through a link (Hugging Face's snapshots link to their blobs; users link model
// files into a --models-dir) is listed, costed and loaded like the file itself.
TEST_F(EngineModelsTest, ALinkedModelFileIsServed) {
  testing::TempDir links;
  fs::create_symlink(dir_->file("m7.gguf"), links.file("linked.gguf"));
  ServeOptions o;
  o.models_dirs = {links.path().string()};
  o.model_stores = false;
  o.parallel = 1;
  o.ssd_cache_dir = (links.path() / "ssd").string();
  const std::vector<ModelSpec> specs = FindServedModels(o);
  const ModelSpec& linked = Find(specs, "linked");
  EXPECT_TRUE(linked.runnable) << linked.why_not;
  EngineModelLoader loader(o);
  StatusOr<ModelCost> c = loader.Estimate(linked);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->weight_bytes, fs::file_size(dir_->file("m7.gguf")));
  StatusOr<std::unique_ptr<InferenceBackend>> b = loader.Load(linked, c->min_kv_bytes);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
}

TEST_F(EngineModelsTest, AModelUnloadedForRoomReloadsWarmFromTheSsdTier) {
  ServeOptions o = Options();
  o.parallel = 1;
  o.prompt_cache_bytes = "64M";
  o.ssd_cache_dir = (dir_->path() / "ssd").string();
  EngineModelLoader loader(o);
  ModelRouter::Options ro;
  ro.max_loaded = 1;
  ModelRouter router(FindServedModels(o), &loader, ro);

  std::vector<int32_t> prompt;
  for (int i = 0; i < 80; ++i) prompt.push_back(300 + (i * 41) % 500);
  struct Run {
    std::vector<int32_t> tokens;
    GenerationResult result;
  };
  auto generate = [&](const std::string& model) {
    Acquired got = router.Acquire(model);
    EXPECT_TRUE(got.ok()) << got.message;
    Run r;
    if (!got.ok()) return r;
    GenerationRequest req;
    req.prompt = prompt;
    req.max_tokens = 8;
    req.sampling.temperature = 0;
    Status st = got.lease.backend().Generate(req, [&](const TokenEvent& ev) { r.tokens.push_back(ev.id); return true; },
                                            &r.result);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return r;
  };
  const Run cold = generate("m7");
  EXPECT_EQ(cold.result.cached_tokens, 0);
  generate("m8");  // --max-loaded 1: m7 is unloaded, its cache flushed to SSD first
  std::vector<ModelStatus> list = router.List();
  EXPECT_EQ(list[1].state, ModelState::kUnloaded) << list[1].spec.name;  // sorted: junk, m7, m8
  EXPECT_EQ(list[1].unloads, 1u);
  const Run warm = generate("m7");
  EXPECT_EQ(warm.result.cache_tier, "ssd");
  EXPECT_GE(warm.result.cached_tokens, static_cast<int32_t>(prompt.size()) - 1);
  EXPECT_EQ(warm.tokens, cold.tokens);
  EXPECT_EQ(router.stats().lru_unloads, 2u);
}

}  // namespace
}  // namespace ember::server
