// Engine::Load's progress: the prefault reports the weight bytes it maps, ending at exactly its total,
// and a load with a (disabled) bar is the same load.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "engine/load_progress.h"
#include "support/test_support.h"

namespace ember {
namespace {

using testing::EmberBinary;
using testing::RunCommand;
using testing::ShellQuote;
using testing::TempDir;

std::string MakeModel(const TempDir& dir, const std::string& extra) {
  const std::string path = dir.file("m.gguf");
  const auto r = RunCommand(EmberBinary() + " gen-model --out " + ShellQuote(path) +
                            " --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --type q8_0 " + extra);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return path;
}

TEST(LoadProgress, PrefaultReportsEveryWeightByteOnce) {
  for (const std::string extra : {"", "--untied"}) {
    SCOPED_TRACE(extra);
    TempDir dir;
    const std::string path = MakeModel(dir, extra);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    EngineOptions eo;
    eo.threads = 1;
    eo.load_progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
    auto e = Engine::Load(path, eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    const GgufFile& f = (*e)->model().gguf();
    // Tied: the whole data section; untied: all but the token table (decode reads a few of its rows).
    uint64_t want = f.file_size() - f.data_offset();
    if (extra == "--untied") want -= (*e)->model().token_embd().n_bytes;
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), std::make_pair(want, want));
    for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  }
}

TEST(LoadProgress, NoPrefaultNoCalls) {
  TempDir dir;
  const std::string path = MakeModel(dir, "");
  int calls = 0;
  EngineOptions eo;
  eo.threads = 1;
  eo.prefault_weights = false;
  eo.load_progress = [&](uint64_t, uint64_t) { ++calls; };
  ASSERT_TRUE(Engine::Load(path, eo).ok());
  EXPECT_EQ(calls, 0);
}

TEST(LoadProgress, LoadWithADisabledBarLoadsTheModel) {
  TempDir dir;
  const std::string path = MakeModel(dir, "");
  EngineOptions eo;
  eo.threads = 1;
  auto e = LoadEngineWithProgress(path, eo, {.enabled = false});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_NE((*e)->tokenizer(), nullptr);
  auto missing = LoadEngineWithProgress(dir.file("absent.gguf"), eo, {.enabled = false});
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace ember
