// The small rules behind the library's rows: file names, model names, where each store lives, and how
// numbers are shown.
#include <gtest/gtest.h>

#include "library/catalog_format.h"
#include "library/file_type_name.h"
#include "library/gguf_file_name.h"
#include "library/hf_store.h"
#include "library/model_names.h"
#include "library/ollama_store.h"
#include "library/store_roots.h"

namespace ember::library {
namespace {

TEST(GgufFileName, ExtensionStemAndSplitSuffix) {
  EXPECT_TRUE(HasGgufExtension("a.gguf"));
  EXPECT_TRUE(HasGgufExtension("A.GGUF"));
  EXPECT_FALSE(HasGgufExtension(".gguf"));
  EXPECT_FALSE(HasGgufExtension("a.gguf.part"));
  EXPECT_FALSE(HasGgufExtension("a.ggu"));
  EXPECT_EQ(GgufStem("Qwen3-0.6B-Q8_0.gguf"), "Qwen3-0.6B-Q8_0");

  const std::optional<SplitName> s = ParseSplitName("Qwen3-30B-A3B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->stem, "Qwen3-30B-A3B-Q4_K_M");
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  for (const char* not_split : {"x-00004-of-00003.gguf", "x-00000-of-00003.gguf", "x-0001-of-00003.gguf",
                                "-00001-of-00003.gguf", "x-00001-of-00003.bin", "x_00001-of-00003.gguf",
                                "x-00001-0f-00003.gguf", "x-0000a-of-00003.gguf", "model.gguf"}) {
    EXPECT_FALSE(ParseSplitName(not_split).has_value()) << not_split;
  }
}

TEST(ModelNames, FirstClaimantKeepsTheNameLaterOnesGetSourceSuffixes) {
  std::vector<ModelRecord> m(5);
  const ModelSource sources[] = {ModelSource::kModelsDir, ModelSource::kHuggingFace, ModelSource::kHuggingFace,
                                 ModelSource::kOllama, ModelSource::kLlamaCpp};
  const char* names[] = {"x", "x", "x", "x@hf-2", "y"};
  for (size_t i = 0; i < m.size(); ++i) {
    m[i].source = sources[i];
    m[i].name = names[i];
  }
  AssignUniqueNames(&m);
  EXPECT_EQ(m[0].name, "x");
  EXPECT_EQ(m[1].name, "x@hf");
  EXPECT_EQ(m[2].name, "x@hf-3");  // "x@hf-2" is another record's own name
  EXPECT_EQ(m[3].name, "x@hf-2");
  EXPECT_EQ(m[4].name, "y");
}

TEST(OllamaNames, AsOllamaListShowsThem) {
  EXPECT_EQ(OllamaModelName("registry.ollama.ai", "library", "qwen3", "0.6b"), "qwen3:0.6b");
  EXPECT_EQ(OllamaModelName("registry.ollama.ai", "someone", "tiny", "latest"), "someone/tiny:latest");
  EXPECT_EQ(OllamaModelName("hf.co", "bartowski", "Qwen3-GGUF", "Q4_K_M"), "hf.co/bartowski/Qwen3-GGUF:Q4_K_M");
}

TEST(HfRepoIds, FromCacheFolderNames) {
  EXPECT_EQ(HfRepoId("models--Qwen--Qwen3-0.6B-GGUF"), "Qwen/Qwen3-0.6B-GGUF");
  EXPECT_EQ(HfRepoId("models--gpt2"), "gpt2");
  EXPECT_FALSE(HfRepoId("datasets--a--b").has_value());
  EXPECT_FALSE(HfRepoId("models--").has_value());
  EXPECT_FALSE(HfRepoId("models----x").has_value());
  EXPECT_FALSE(HfRepoId("models--x--").has_value());
  EXPECT_FALSE(HfRepoId(".locks").has_value());
}

// Every store's folders for a set of variables, as "source path (origin)".
std::vector<std::string> Roots(const EnvVars& vars, const std::string& home) {
  std::vector<std::string> warnings;
  std::vector<std::string> out;
  for (const StoreRoot& r : StoreRoots(vars, home, {"/srv/ollama"}, Env::Default(), &warnings)) {
    out.push_back(std::string(ModelSourceName(r.source)) + " " + r.path + " (" + r.origin + ")");
  }
  EXPECT_TRUE(warnings.empty());
  return out;
}

TEST(StoreRoots, DefaultsUnderHome) {
  const std::vector<std::string> want = {
      "llama.cpp /nonexistent-home/.cache/llama.cpp (default)",
      "lm-studio /nonexistent-home/.lmstudio/models (default)",
      "lm-studio /nonexistent-home/.cache/lm-studio/models (older default)",
      "ollama /nonexistent-home/.ollama/models (default)",
      "ollama /srv/ollama (system service)",
      "hf /nonexistent-home/.cache/huggingface/hub (default)",
  };
  EXPECT_EQ(Roots({}, "/nonexistent-home"), want);
}

TEST(StoreRoots, VariablesMoveTheStores) {
  const std::vector<std::string> want = {
      "llama.cpp /lc (LLAMA_CACHE)",
      "lm-studio /h/.lmstudio/models (default)",
      "lm-studio /h/.cache/lm-studio/models (older default)",
      "ollama /om (OLLAMA_MODELS)",
      "ollama /srv/ollama (system service)",
      "hf /hub (HF_HUB_CACHE)",
  };
  EXPECT_EQ(Roots({{"LLAMA_CACHE", "/lc"}, {"OLLAMA_MODELS", "/om"}, {"HF_HUB_CACHE", "/hub"}, {"HF_HOME", "/hfh"},
                   {"XDG_CACHE_HOME", "/xdg"}},
                  "/h"),
            want);
  const std::vector<std::string> xdg = Roots({{"XDG_CACHE_HOME", "/xdg"}, {"HF_HOME", "/hfh"}}, "");
  const std::vector<std::string> want_xdg = {"llama.cpp /xdg/llama.cpp (XDG_CACHE_HOME)",
                                             "ollama /srv/ollama (system service)", "hf /hfh/hub (HF_HOME)"};
  EXPECT_EQ(xdg, want_xdg);
  // A relative XDG_CACHE_HOME is invalid (the XDG rule) and ignored; the legacy hub variable still counts.
  const std::vector<std::string> rel = Roots({{"XDG_CACHE_HOME", "rel"}, {"HUGGINGFACE_HUB_CACHE", "/old"}}, "/h");
  EXPECT_EQ(rel.front(), "llama.cpp /h/.cache/llama.cpp (default)");
  EXPECT_EQ(rel.back(), "hf /old (HUGGINGFACE_HUB_CACHE)");
}

TEST(DataDir, XdgDataHomeOrHome) {
  EXPECT_EQ(DefaultDataDir("/xdg", "/h"), "/xdg/ember");
  EXPECT_EQ(DefaultDataDir("relative", "/h"), "/h/.local/share/ember");
  EXPECT_EQ(DefaultDataDir("", ""), "");
}

TEST(Format, ParametersSizesAndContexts) {
  EXPECT_EQ(FormatParameters(596049920), "0.6B");
  EXPECT_EQ(FormatParameters(494032768), "0.5B");
  EXPECT_EQ(FormatParameters(7241732096), "7.2B");
  EXPECT_EQ(FormatParameters(70553706496), "71B");
  EXPECT_EQ(FormatParameters(134515008), "135M");
  EXPECT_EQ(FormatParameters(8'400'000), "8.4M");
  EXPECT_EQ(FormatParameters(1'500), "1.5K");
  EXPECT_EQ(FormatParameters(0), "-");
  EXPECT_EQ(FormatSize(640), "640 B");
  EXPECT_EQ(FormatSize(1288490188), "1.2 GiB");
  EXPECT_EQ(FormatSize(639631360), "610 MiB");
  EXPECT_EQ(FormatSize(1023 * 1024), "1023 KiB");
  EXPECT_EQ(FormatSize(1024 * 1024 - 1), "1.0 MiB");
  EXPECT_EQ(FormatContext(40960), "40K");
  EXPECT_EQ(FormatContext(131072), "128K");
  EXPECT_EQ(FormatContext(1000), "1000");
  EXPECT_EQ(FormatContext(0), "-");
  EXPECT_EQ(FileTypeName(15), "Q4_K_M");
  EXPECT_EQ(FileTypeName(7), "Q8_0");
  EXPECT_EQ(FileTypeName(4), "");
  EXPECT_EQ(FileTypeName(-1), "");
}

TEST(Format, TableColumnsLineUp) {
  ModelRecord a;
  a.name = "qwen3:0.6b";
  a.arch = "qwen3";
  a.parameters = 596049920;
  a.quant = "Q8_0";
  a.size_bytes = 639631360;
  a.context_length = 40960;
  a.source = ModelSource::kOllama;
  a.runnable = true;
  a.path = "/blobs/sha256-x";
  ModelRecord b;
  b.name = "x";
  b.source = ModelSource::kModelsDir;
  b.why_not = "split GGUF files are not supported yet";
  b.path = "/m/x-00001-of-00002.gguf";
  const std::string table = RenderModelTable({a, b}, /*with_path=*/true);
  const std::string want =
      "NAME        ARCH   PARAMS  QUANT  SIZE     CTX  SOURCE      RUNNABLE                                    PATH\n"
      "qwen3:0.6b  qwen3  0.6B    Q8_0   610 MiB  40K  ollama      yes                                         "
      "/blobs/sha256-x\n"
      "x           -      -       -      0 B      -    models-dir  no: split GGUF files are not supported yet  "
      "/m/x-00001-of-00002.gguf\n";
  EXPECT_EQ(table, want);
}

}  // namespace
}  // namespace ember::library
