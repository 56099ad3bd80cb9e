// `ember inspect` on broken files: a clear message on stderr and exit status 1, never an abort.
#include <gtest/gtest.h>

#include <functional>

#include "format/gguf_writer.h"
#include "support/test_support.h"

namespace ember {
namespace {

using ::ember::testing::EmberBinary;
using ::ember::testing::RunCommand;
using ::ember::testing::ShellQuote;
using ::ember::testing::TempDir;

// Writes a small llama model (tweaked) and runs `ember inspect [flags] FILE 2>&1`.
::ember::testing::CommandResult Inspect(const std::function<void(GgufWriter&)>& tweak, const std::string& flags = "") {
  TempDir dir;
  GgufWriter w;
  w.SetStr("general.architecture", "llama");
  w.SetU32("llama.block_count", 1);
  w.SetU32("llama.embedding_length", 32);
  w.SetU32("llama.attention.head_count", 4);
  w.SetU32("llama.context_length", 256);
  w.SetStrArray("tokenizer.ggml.tokens", {"a", "b", "c"});
  EXPECT_TRUE(w.AddTensor("token_embd.weight", GgmlType::F32, {32, 3}, std::vector<uint8_t>(32 * 3 * 4)).ok());
  tweak(w);
  const std::string path = dir.file("m.gguf");
  EXPECT_TRUE(w.WriteFile(path).ok());
  return RunCommand(EmberBinary() + " inspect " + flags + " " + ShellQuote(path) + " 2>&1");
}

void ExpectFailure(const std::function<void(GgufWriter&)>& tweak, const std::string& needle) {
  for (const std::string flags : {"", "--json"}) {
    SCOPED_TRACE(flags);
    const auto r = Inspect(tweak, flags);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("ember inspect: InvalidArgument"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
  }
}

TEST(InspectCli, ValidFileExitsZero) {
  const auto r = Inspect([](GgufWriter&) {});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("summary:"), std::string::npos) << r.out;
}

TEST(InspectCli, WrongArchitectureType) {
  ExpectFailure([](GgufWriter& w) { w.SetU32("general.architecture", 1); },
                "key 'general.architecture': expected string, found uint32");
}

TEST(InspectCli, WrongTokenListType) {
  ExpectFailure([](GgufWriter& w) { w.SetU32("tokenizer.ggml.tokens", 3); },
                "key 'tokenizer.ggml.tokens': expected array, found uint32");
}

TEST(InspectCli, WrongContextLengthType) {
  ExpectFailure([](GgufWriter& w) { w.SetStr("llama.context_length", "lots"); },
                "key 'llama.context_length': expected an integer, found string");
}

TEST(InspectCli, NegativeAndHugeDimensions) {
  ExpectFailure([](GgufWriter& w) { w.SetI32("llama.embedding_length", -32); }, "'llama.embedding_length' is -32");
  ExpectFailure([](GgufWriter& w) { w.SetU64("llama.block_count", 1ull << 40); }, "'llama.block_count' is 1099511627776");
}

TEST(InspectCli, HumanOutputStillShowsTheMetadata) {
  const auto r = Inspect([](GgufWriter& w) { w.SetU32("general.architecture", 1); });
  EXPECT_NE(r.out.find("general.architecture = 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("summary:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ember
