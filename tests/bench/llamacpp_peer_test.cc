// The peer calls of `ember bench --vs-llamacpp` and `ember bench-tokenizer`, against a stand-in runner
// (a shell script in place of runner.mjs, /bin/sh in place of node) that records the argv it was given.
#include "bench/llamacpp_peer.h"
#include "support/test_support.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::bench {
namespace {

namespace fs = std::filesystem;

class LlamaCppPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    args_ = dir_ + "/args";
  }

  // A runner that writes "$#" and each argument on a line of args_, logs a line, then prints `reply`.
  PeerCommand FakePeer(const std::string& reply, int exit_code = 0) {
    const std::string script = dir_ + "/runner.sh";
    std::ofstream(script) << "printf '%s\\n' \"$#\" \"$@\" > '" << args_ << "'\n"
                          << "echo 'loading model...'\n"
                          << "echo 'peer says hello' >&2\n"
                          << "echo '" << reply << "'\n"
                          << "exit " << exit_code << "\n";
    PeerCommand p;
    p.node = "/bin/sh";
    p.runner_mjs = script;
    p.timeout_s = 30;
    return p;
  }

  testing::TempDir tmp_;  // removed with the fixture
  std::string dir_ = tmp_.path().string();
  std::string args_;
};

// A model path that popen("node runner.mjs bench '" + model + "' ...") split at the quote and handed to
// a shell: the command substitution and the `; touch` ran.
std::string HostilePath(const std::string& dir) {
  return dir + "/it's my \"model\" $(touch " + dir + "/pwned); touch " + dir + "/pwned2 `id` *.gguf";
}

TEST_F(LlamaCppPeerTest, DecodeBenchPassesAHostileModelPathAsOneArgument) {
  const std::string model = HostilePath(dir_);
  auto j = RunPeerDecodeBench(FakePeer(R"({"prefill_tok_s": 120.5, "decode_tok_s": 30.25})"), model, {1, 2, 3},
                              9, 2, "f16");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_DOUBLE_EQ((*j)["prefill_tok_s"].get<double>(), 120.5);
  EXPECT_DOUBLE_EQ((*j)["decode_tok_s"].get<double>(), 30.25);
  EXPECT_EQ(testing::ReadFileToString(args_), "10\nbench\n" + model + "\n--tokens\n1,2,3\n--gen\n9\n--threads\n2\n--kv\nf16\n");
  EXPECT_FALSE(fs::exists(dir_ + "/pwned"));
  EXPECT_FALSE(fs::exists(dir_ + "/pwned2"));
}

TEST_F(LlamaCppPeerTest, TokenizeBenchPassesHostilePathsAsOneArgumentEach) {
  const std::string model = HostilePath(dir_);
  const std::string text = dir_ + "/text; rm -rf ~ 'x'.txt";
  auto j = RunPeerTokenizeBench(FakePeer(R"({"bytes": 10, "n_tokens": 4, "best_ms": 1, "mb_per_s": 0.01})"), model,
                                text, 3, /*special=*/true);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["n_tokens"].get<int>(), 4);
  EXPECT_EQ(testing::ReadFileToString(args_), "7\ntokenize-bench\n" + model + "\n--text-file\n" + text + "\n--runs\n3\n--special\n");
  EXPECT_FALSE(fs::exists(dir_ + "/pwned"));
  EXPECT_FALSE(fs::exists(dir_ + "/pwned2"));
}

TEST_F(LlamaCppPeerTest, FailuresAreErrorsWithThePeersWords) {
  // Non-zero exit: the error says how it ended and what it printed on stderr.
  auto failed = RunPeerDecodeBench(FakePeer(R"({"decode_tok_s": 1})", 3), "m.gguf", {1}, 2, 1, "f16");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("exited 3"), std::string::npos) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("peer says hello"), std::string::npos) << failed.status().ToString();
  // The runner's own error object.
  auto reported = RunPeerTokenizeBench(FakePeer(R"({"error": "cannot load m.gguf"})"), "m.gguf", "t", 1, false);
  ASSERT_FALSE(reported.ok());
  EXPECT_NE(reported.status().message().find("cannot load m.gguf"), std::string::npos);
  // No JSON at all.
  auto silent = RunPeerTokenizeBench(FakePeer("done"), "m.gguf", "t", 1, false);
  EXPECT_FALSE(silent.ok());
  // No interpreter.
  PeerCommand missing = FakePeer("{}");
  missing.node = dir_ + "/no-node";
  auto absent = RunPeerTokenizeBench(missing, "m.gguf", "t", 1, false);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("no-node"), std::string::npos) << absent.status().ToString();
}

TEST(LastJsonObject, SkipsLogLinesAndTrailingText) {
  auto j = LastJsonObject("loading\n{\"a\": 1}\n{\"b\": 2}\nbye\n");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->dump(), R"({"b":2})");
  EXPECT_FALSE(LastJsonObject("no json here\n[1, 2]\n").ok());
}

}  // namespace
}  // namespace ember::bench
