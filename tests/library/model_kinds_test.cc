// The kinds of file a library holds that ember cannot run as they are, each listed once with a reason,
// and the naming rule when two places offer the same name.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "format/gguf_writer.h"
#include "library/gguf_describe.h"
#include "library/model_catalog.h"
#include "library/safetensors_folder.h"
#include "library_test_util.h"

namespace ember::library {
namespace {

using ::ember::testing::TempDir;
using testing::Find;
using testing::Hermetic;
using testing::Names;
using testing::PlaceModel;
using testing::TinyModel;
using testing::WriteText;
namespace fs = std::filesystem;

std::vector<ModelRecord> ScanDir(const std::string& dir) {
  ScanOptions o = Hermetic("");
  o.models_dirs = {dir};
  return ScanModels(o);
}

// A safetensors file: 8-byte little-endian header length, the JSON header, the data.
void WriteSafetensors(const std::string& path, const std::string& header, size_t data_bytes) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  WriteText(path, bytes + header + std::string(data_bytes, '\x01'));
}

TEST(ModelKinds, SplitGgufIsListedOnceNotRunnable) {
  TempDir t;
  PlaceModel(t.file("m/big-Q8_0-00001-of-00002.gguf"));
  PlaceModel(t.file("m/big-Q8_0-00002-of-00002.gguf"));
  PlaceModel(t.file("m/gappy-00001-of-00003.gguf"));
  PlaceModel(t.file("m/gappy-00003-of-00003.gguf"));
  PlaceModel(t.file("m/whole-00001-of-00001.gguf"));
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 3u) << Names(found);
  const ModelRecord* big = Find(found, "big-Q8_0");
  ASSERT_NE(big, nullptr) << Names(found);
  EXPECT_FALSE(big->runnable);
  EXPECT_EQ(big->why_not, kSplitNotSupported);
  EXPECT_EQ(big->path, t.file("m/big-Q8_0-00001-of-00002.gguf"));
  EXPECT_EQ(big->size_bytes, 2 * fs::file_size(TinyModel()));
  const ModelRecord* whole = Find(found, "whole");
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(whole->runnable) << whole->why_not;
  EXPECT_EQ(big->parameters, 2 * whole->parameters);  // each part's tensors counted
  const ModelRecord* gappy = Find(found, "gappy");
  ASSERT_NE(gappy, nullptr);
  EXPECT_EQ(gappy->why_not, std::string(kSplitNotSupported) + " (2 of 3 parts present)");
}

TEST(ModelKinds, VisionProjectorIsNotRunnable) {
  TempDir t;
  GgufWriter w;
  w.SetStr("general.architecture", "clip");
  w.SetBool("clip.has_vision_encoder", true);
  ASSERT_TRUE(w.AddTensor("v.patch_embd.weight", GgmlType::F32, {4, 4}, std::vector<uint8_t>(64)).ok());
  fs::create_directories(t.file("m"));
  ASSERT_TRUE(w.WriteFile(t.file("m/mmproj-tiny-f16.gguf")).ok());
  // llama.cpp's cache names one "<org>_<repo>_mmproj-...": the name says so when the header cannot.
  WriteText(t.file("m/org_repo_mmproj-F16.gguf"), "GGUF, and then not much");
  PlaceModel(t.file("m/mmproj-but-really-llama.gguf"));  // a readable architecture wins over the name
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 3u) << Names(found);
  const ModelRecord* clip = Find(found, "mmproj-tiny-f16");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->arch, "clip");
  EXPECT_FALSE(clip->runnable);
  EXPECT_EQ(clip->why_not, kProjectorNotRunnable);
  EXPECT_EQ(Find(found, "org_repo_mmproj-F16")->why_not, kProjectorNotRunnable);
  EXPECT_TRUE(Find(found, "mmproj-but-really-llama")->runnable);
}

TEST(ModelKinds, UnsupportedArchitectureSaysWhich) {
  TempDir t;
  fs::create_directories(t.file("m"));
  GgufWriter w;
  w.SetStr("general.architecture", "mamba");
  w.SetU32("mamba.context_length", 8192);
  ASSERT_TRUE(w.AddTensor("token_embd.weight", GgmlType::F32, {4, 4}, std::vector<uint8_t>(64)).ok());
  ASSERT_TRUE(w.WriteFile(t.file("m/mamba.gguf")).ok());
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].arch, "mamba");
  EXPECT_EQ(found[0].context_length, 8192);
  EXPECT_FALSE(found[0].runnable);
  EXPECT_EQ(found[0].why_not, "model: architecture 'mamba' is not supported");
  EXPECT_NE(CheckRunnable(t.file("m/mamba.gguf")).message().find("architecture 'mamba' is not supported"),
            std::string::npos);
  EXPECT_TRUE(CheckRunnable(TinyModel()).ok());
}

TEST(ModelKinds, SafetensorsFolderIsListedWithItsHeaders) {
  TempDir t;
  const std::string dir = t.file("m/Qwen3-Tiny");
  WriteText(dir + "/config.json",
            R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","max_position_embeddings":40960})");
  WriteSafetensors(dir + "/model-00001-of-00002.safetensors",
                   R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,64]}})", 64);
  WriteSafetensors(dir + "/model-00002-of-00002.safetensors",
                   R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  WriteText(dir + "/tokenizer.json", "{}");
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 1u) << Names(found);
  const ModelRecord& r = found[0];
  EXPECT_EQ(r.name, "Qwen3-Tiny");
  EXPECT_EQ(r.path, dir);
  EXPECT_EQ(r.format, "safetensors");
  EXPECT_EQ(r.arch, "qwen3");
  EXPECT_EQ(r.parameters, 34u);
  EXPECT_EQ(r.quant, "BF16");
  EXPECT_EQ(r.context_length, 40960);
  EXPECT_EQ(r.size_bytes, fs::file_size(dir + "/model-00001-of-00002.safetensors") +
                              fs::file_size(dir + "/model-00002-of-00002.safetensors"));
  EXPECT_FALSE(r.runnable);
  EXPECT_EQ(r.why_not, kSafetensorsNotSupported);
}

TEST(ModelKinds, DamagedSafetensorsAreNamedInWhyNot) {
  TempDir t;
  const std::string dir = t.file("m/broken");
  WriteText(dir + "/config.json", R"({"model_type": 3})");
  WriteText(dir + "/model.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}");
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].why_not,
            std::string(kSafetensorsNotSupported) + " (config.json: 'model_type' is not a string)");
}

TEST(ModelKinds, TruncatedCorruptAndOddFilesAreListedWithAReason) {
  TempDir t;
  fs::create_directories(t.file("m"));
  const std::string tiny = ::ember::testing::ReadFileToString(TinyModel());
  WriteText(t.file("m/truncated.gguf"), tiny.substr(0, tiny.size() / 2));
  WriteText(t.file("m/garbage.gguf"), "GGUF\x03\x00\x00\x00 this is not the rest of a GGUF file");
  WriteText(t.file("m/empty.gguf"), "");
  fs::create_symlink(t.file("nowhere.gguf"), t.file("m/dangling.gguf"));
  ASSERT_EQ(::mkfifo(t.file("m/pipe.gguf").c_str(), 0600), 0);  // opening it would wait for a writer
  const std::vector<ModelRecord> found = ScanDir(t.file("m"));
  ASSERT_EQ(found.size(), 5u) << Names(found);
  for (const ModelRecord& r : found) {
    SCOPED_TRACE(r.name);
    EXPECT_FALSE(r.runnable);
    EXPECT_FALSE(r.why_not.empty());
    EXPECT_EQ(r.why_not.find('\n'), std::string::npos);
  }
  EXPECT_EQ(Find(found, "pipe")->why_not, "not a regular file");
  EXPECT_NE(Find(found, "dangling")->why_not.find("broken symbolic link"), std::string::npos);
  EXPECT_EQ(Find(found, "truncated")->size_bytes, tiny.size() / 2);
}

TEST(ModelKinds, NameClashesGoToTheFirstSourceThenSourceSuffixes) {
  TempDir t;
  const std::string home = t.file("home");
  PlaceModel(t.file("models/a.gguf"));
  PlaceModel(t.file("data/a.gguf"));
  PlaceModel(home + "/.lmstudio/models/p1/r/a.gguf");
  PlaceModel(home + "/.lmstudio/models/p2/r/a.gguf");
  PlaceModel(home + "/.lmstudio/models/p3/r/a@ember.gguf");  // proposes the suffix the data dir's copy would get
  ScanOptions o = Hermetic(home);
  o.models_dirs = {t.file("models")};
  o.data_dir = t.file("data");
  const std::vector<ModelRecord> first = ScanModels(o);
  const std::map<std::string, std::string> want = {
      {"a", t.file("models/a.gguf")},
      {"a@ember-2", t.file("data/a.gguf")},
      {"a@lm-studio", home + "/.lmstudio/models/p1/r/a.gguf"},
      {"a@lm-studio-2", home + "/.lmstudio/models/p2/r/a.gguf"},
      {"a@ember", home + "/.lmstudio/models/p3/r/a@ember.gguf"},
  };
  std::map<std::string, std::string> got;
  for (const ModelRecord& r : first) got[r.name] = r.path;
  EXPECT_EQ(got, want) << Names(first);
  // The same tree, the same names, in name order.
  const std::vector<ModelRecord> again = ScanModels(o);
  ASSERT_EQ(again.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(again[i].name, first[i].name);
    EXPECT_EQ(again[i].path, first[i].path);
    if (i > 0) {
      EXPECT_LT(first[i - 1].name, first[i].name);
    }
  }
}

}  // namespace
}  // namespace ember::library
