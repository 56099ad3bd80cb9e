// Native llama-bench as `ember bench --vs-llamacpp`'s peer: its recorded `-o json` output parsed, the
// argv it gets (ember's settings), a stand-in binary run end to end, finding it (and a clear message
// when it is missing), and the labelling of every printed line and JSON field by peer kind.
#include "bench/llama_bench.h"
#include "bench/peer_compare.h"
#include "support/test_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace ember::bench {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(EMBER_SOURCE_DIR) + "/tests/bench/fixtures/llama_bench/";

std::string WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
  return path;
}

TEST(LlamaBenchJson, ParsesRecordedOutput) {
  auto pp = ParseLlamaBenchJson(testing::ReadFileToString(kFixtures + "pp64.json"));
  ASSERT_TRUE(pp.ok()) << pp.status().ToString();
  ASSERT_EQ(pp->size(), 1u);
  const LlamaBenchTest& t = (*pp)[0];
  EXPECT_EQ(t.n_prompt, 64);
  EXPECT_EQ(t.n_gen, 0);
  EXPECT_EQ(t.n_depth, 0);
  EXPECT_EQ(t.threads, 2);
  EXPECT_EQ(t.type_k, "f16");
  EXPECT_EQ(t.type_v, "f16");
  EXPECT_FALSE(t.flash_attn);
  EXPECT_EQ(t.build_commit, "80fb11a");
  ASSERT_EQ(t.samples_ts.size(), 2u);
  EXPECT_DOUBLE_EQ(t.samples_ts[0], 1.81098);
  EXPECT_DOUBLE_EQ(t.median_ts(), (1.81098 + 1.90863) / 2);

  auto tg = ParseLlamaBenchJson(testing::ReadFileToString(kFixtures + "tg8-d64.json"));
  ASSERT_TRUE(tg.ok()) << tg.status().ToString();
  EXPECT_EQ((*tg)[0].n_prompt, 0);
  EXPECT_EQ((*tg)[0].n_gen, 8);
  EXPECT_EQ((*tg)[0].n_depth, 64);
  EXPECT_GT((*tg)[0].median_ts(), 0);
}

TEST(LlamaBenchJson, RefusesWhatIsNotItsOutput) {
  for (const std::string bad : {"", "| model | size |", "{\"n_prompt\": 1}", "[]", "[{\"n_prompt\": 512}]",
                                "[{\"n_prompt\": 512, \"n_gen\": 0, \"n_threads\": 2, \"avg_ts\": 0}]"}) {
    auto r = ParseLlamaBenchJson(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // Another version's flash_attn spelling, no samples: avg_ts is the speed.
  auto other = ParseLlamaBenchJson(R"([{"n_prompt": 8, "n_gen": 0, "n_threads": 1, "avg_ts": 5.5, "flash_attn": "on"}])");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_TRUE((*other)[0].flash_attn);
  EXPECT_DOUBLE_EQ((*other)[0].median_ts(), 5.5);
}

TEST(LlamaBenchArgv, CarriesEmbersSettings) {
  LlamaBenchSettings s;
  s.threads = 2;
  s.kv = "f32";
  s.ubatch = 256;
  s.reps = 3;
  const auto argv = LlamaBenchArgv("/p/llama-bench", "/m/a b.gguf", 0, 128, 512, s);
  const std::vector<std::string> want = {"/p/llama-bench", "-m", "/m/a b.gguf", "-p", "0", "-n", "128", "-d", "512",
                                         "-t", "2", "-ctk", "f32", "-ctv", "f32", "-fa", "off", "-b", "2048",
                                         "-ub", "256", "-r", "3", "-o", "json"};
  EXPECT_EQ(argv, want);
  // The batch holds the longest prompt in one call.
  EXPECT_EQ(LlamaBenchArgv("b", "m", 4096, 0, 0, s)[18], "4096");
}

class LlamaBenchRunTest : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  std::string dir_ = tmp_.path().string();
};

TEST_F(LlamaBenchRunTest, RunsAStandInAndReadsItsTest) {
  // Logs on stderr like the real one, prints the recorded JSON, records its argv.
  const std::string bin = WriteScript(dir_ + "/llama-bench", "printf '%s\\n' \"$@\" > '" + dir_ + "/args'\n"
                                                             "echo 'llama_model_loader: ...' >&2\n"
                                                             "cat '" + kFixtures + "tg8-d64.json'\n");
  LlamaBenchSettings s;
  s.threads = 2;
  auto t = RunLlamaBench(bin, "m.gguf", 0, 8, 64, s);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->n_gen, 8);
  EXPECT_THAT(testing::ReadFileToString(dir_ + "/args"), HasSubstr("-fa\noff\n"));
  // Asked for another shape than it printed: an error, not a wrong number.
  auto wrong = RunLlamaBench(bin, "m.gguf", 512, 0, 0, s);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("expected one test of -p 512 -n 0"));
  // It fails: its exit code and stderr.
  const std::string failing = WriteScript(dir_ + "/failing", "echo 'error: failed to load model' >&2\nexit 1\n");
  auto failed = RunLlamaBench(failing, "m.gguf", 512, 0, 0, s);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("failed to load model"));
}

TEST_F(LlamaBenchRunTest, FindsTheBuildOrSaysHowToGetIt) {
  const std::string bindir = dir_ + "/bin";
  fs::create_directories(bindir);
  WriteScript(bindir + "/llama-bench", "exit 0\n");
  const std::string built = WriteScript(dir_ + "/build-peer-built", "echo 'build-peer: ok' >&2\necho '" + bindir + "'\n");
  auto found = FindLlamaBench("", built);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, bindir + "/llama-bench");

  const std::string unbuilt = WriteScript(
      dir_ + "/build-peer-unbuilt", "echo 'build-peer: not built yet (or built with other flags); run scripts/build-peer' >&2\nexit 1\n");
  auto missing = FindLlamaBench("", unbuilt);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("native llama-bench not found"));
  EXPECT_THAT(missing.status().message(), HasSubstr("not built yet"));
  EXPECT_THAT(missing.status().message(), HasSubstr("scripts/build-peer"));

  auto no_script = FindLlamaBench("", dir_ + "/no-such-script");
  ASSERT_FALSE(no_script.ok());
  EXPECT_THAT(no_script.status().message(), HasSubstr("no-such-script"));

  auto explicit_missing = FindLlamaBench(dir_ + "/nope", built);
  ASSERT_FALSE(explicit_missing.ok());
  EXPECT_THAT(explicit_missing.status().message(), HasSubstr("--llama-bench " + dir_ + "/nope"));
}

TEST_F(LlamaBenchRunTest, ChoosesNativeOrFallsBackSayingWhy) {
  const std::string bindir = dir_ + "/bin";
  fs::create_directories(bindir);
  WriteScript(bindir + "/llama-bench", "exit 0\n");
  const std::string built = WriteScript(dir_ + "/bp-built", "echo '" + bindir + "'\n");
  const std::string unbuilt = WriteScript(dir_ + "/bp-unbuilt", "echo 'build-peer: not built yet' >&2\nexit 1\n");

  auto native = ChoosePeer(PeerMode::kAuto, "", built);
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native->kind, PeerKind::kLlamaBench);
  EXPECT_TRUE(native->fallback_reason.empty());

  auto fallback = ChoosePeer(PeerMode::kAuto, "", unbuilt);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->kind, PeerKind::kBinding);
  EXPECT_THAT(fallback->fallback_reason, HasSubstr("native llama-bench not found"));

  auto required = ChoosePeer(PeerMode::kNative, "", unbuilt);
  ASSERT_FALSE(required.ok());
  EXPECT_THAT(required.status().message(), HasSubstr("--peer native"));
  EXPECT_THAT(required.status().message(), HasSubstr("scripts/build-peer"));

  auto asked = ChoosePeer(PeerMode::kBinding, "", built);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->kind, PeerKind::kBinding);
  EXPECT_THAT(asked->fallback_reason, HasSubstr("--peer binding"));

  EXPECT_FALSE(ParsePeerMode("llama").ok());
  EXPECT_EQ(*ParsePeerMode("native"), PeerMode::kNative);
}

PeerComparison TwoRounds(PeerKind kind) {
  PeerComparison c;
  c.kind = kind;
  c.binary = kind == PeerKind::kLlamaBench ? "/peer/llama-bench" : "/src/peers/llamacpp/runner.mjs";
  if (kind == PeerKind::kBinding) c.fallback_reason = "native llama-bench not found (...)";
  c.build_commit = kind == PeerKind::kLlamaBench ? "80fb11a" : "";
  c.threads = 2;
  c.pp = 512;
  c.tg = 128;
  c.long_pp = 2048;
  c.ember = {{120, 25, 110}, {100, 24, 100}};
  c.peer = {{100, 20, 100}, {100, 24, 125}};
  return c;
}

TEST(PeerCompare, RatiosAreOfMediansWithPerRoundRanges) {
  const RatioSummary s = Summarize({120, 100, 90}, {100, 100, 100});
  EXPECT_DOUBLE_EQ(s.ember, 100);
  EXPECT_DOUBLE_EQ(s.peer, 100);
  EXPECT_DOUBLE_EQ(s.ratio, 1.0);
  EXPECT_DOUBLE_EQ(s.round_min, 0.9);
  EXPECT_DOUBLE_EQ(s.round_max, 1.2);
  const nlohmann::json r = RatiosJson(TwoRounds(PeerKind::kLlamaBench));
  EXPECT_DOUBLE_EQ(r["prefill"]["ratio"].get<double>(), 110.0 / 100.0);
  EXPECT_DOUBLE_EQ(r["decode"]["round_min"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r["decode"]["round_max"].get<double>(), 1.25);
  EXPECT_EQ(r["long_prefill"]["metric"], "pp2048");
  EXPECT_DOUBLE_EQ(r["long_prefill"]["round_min"].get<double>(), 0.8);
}

TEST(PeerCompare, EveryLineAndFieldNamesThePeer) {
  for (PeerKind kind : {PeerKind::kLlamaBench, PeerKind::kBinding}) {
    const PeerComparison c = TwoRounds(kind);
    const std::string name = kind == PeerKind::kLlamaBench ? "llama-bench" : "node-llama-cpp binding";
    for (const std::string& line : ComparisonLines(c)) EXPECT_THAT(line, HasSubstr(name)) << line;
    const nlohmann::json p = PeerJson(c);
    EXPECT_EQ(p["kind"], PeerKindName(kind));
    EXPECT_EQ(p["native"].get<bool>(), kind == PeerKind::kLlamaBench);
    EXPECT_EQ(p["flash_attn"], "off");
    EXPECT_EQ(p["tg_depth"], 512);
    const nlohmann::json r = RatiosJson(c);
    EXPECT_EQ(r["vs"], PeerKindName(kind));
    for (const char* k : {"prefill", "decode", "long_prefill"}) EXPECT_EQ(r[k]["vs"], PeerKindName(kind)) << k;
    const std::string md = ComparisonMarkdown(c, "m.gguf");
    EXPECT_THAT(md, HasSubstr("ember ÷ " + name));
    EXPECT_THAT(md, HasSubstr("| pp512 |"));
    EXPECT_THAT(md, HasSubstr("| tg128 |"));
    EXPECT_THAT(md, HasSubstr("| pp2048 |"));
  }
  // The binding says it is not native llama.cpp, why it overstates ember, and why it was used.
  const PeerComparison b = TwoRounds(PeerKind::kBinding);
  EXPECT_THAT(PeerJson(b)["description"].get<std::string>(), HasSubstr("NOT native llama.cpp"));
  EXPECT_THAT(PeerJson(b)["description"].get<std::string>(), HasSubstr("overstate ember"));
  EXPECT_THAT(PeerJson(b)["fallback_reason"].get<std::string>(), HasSubstr("not found"));
  EXPECT_THAT(ComparisonMarkdown(b, "m.gguf"), HasSubstr("NOT native llama.cpp"));
  EXPECT_FALSE(PeerJson(TwoRounds(PeerKind::kLlamaBench)).contains("fallback_reason"));
}

}  // namespace
}  // namespace ember::bench
