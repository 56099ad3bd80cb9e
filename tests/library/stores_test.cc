// One fake store per layout under a temporary home, each holding the real tiny model: the scan finds it
// where the tool keeps it, names it as the header says, reads its columns, and calls it runnable.
#include <gtest/gtest.h>

#include "library/model_catalog.h"
#include "library_test_util.h"

namespace ember::library {
namespace {

using ::ember::testing::TempDir;
using testing::Find;
using testing::Hermetic;
using testing::kDigest;
using testing::Names;
using testing::PlaceModel;
using testing::TinyModel;
using testing::WriteText;
namespace fs = std::filesystem;

std::string Manifest(const std::string& digest, uint64_t size) {
  return R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
         R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
         std::string(64, 'e') + R"(","size":10},"layers":[{"mediaType":"application/vnd.ollama.image.template",)"
         R"("digest":"sha256:)" + std::string(64, 'f') + R"(","size":5},)"
         R"({"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + digest +
         R"(","size":)" + std::to_string(size) + "}]}";
}

uint64_t TinySize() { return fs::file_size(TinyModel()); }

// The columns every copy of the tiny model shows.
void ExpectTiny(const ModelRecord* r, ModelSource source) {
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->source, source);
  EXPECT_EQ(r->format, "gguf");
  EXPECT_EQ(r->arch, "llama");
  EXPECT_GT(r->parameters, 8'000'000u);  // 128,256 x 64 embedding rows alone
  EXPECT_EQ(r->quant, "Q8_0");
  EXPECT_EQ(r->size_bytes, TinySize());
  EXPECT_EQ(r->context_length, 2048);
  EXPECT_TRUE(r->runnable) << r->why_not;
  EXPECT_EQ(r->why_not, "");
}

TEST(Stores, ModelsDirAndDataDirAreWalkedWithNamesFromStems) {
  TempDir t;
  const std::string models = t.file("models"), data = t.file("data");
  PlaceModel(models + "/a.gguf");
  PlaceModel(models + "/family/b.GGUF");
  PlaceModel(data + "/demo.gguf");
  WriteText(models + "/notes.txt", "not a model");
  ScanOptions o = Hermetic("");
  o.models_dirs = {models};
  o.data_dir = data;
  const ScanResult r = ScanLibrary(o);
  ASSERT_EQ(r.models.size(), 3u) << Names(r.models);
  ExpectTiny(Find(r.models, "a"), ModelSource::kModelsDir);
  ExpectTiny(Find(r.models, "b"), ModelSource::kModelsDir);
  ExpectTiny(Find(r.models, "demo"), ModelSource::kEmberData);
  EXPECT_EQ(Find(r.models, "b")->path, models + "/family/b.GGUF");
  ASSERT_EQ(r.locations.size(), 2u);
  EXPECT_EQ(r.locations[0].origin, "--models-dir");
  EXPECT_EQ(r.locations[0].models, 2);
  EXPECT_EQ(r.locations[1].models, 1);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Stores, LlamaCppCacheFromLlamaCacheXdgOrHome) {
  TempDir t;
  const std::string home = t.file("home");
  PlaceModel(home + "/.cache/llama.cpp/ggml-org_tiny-GGUF_tiny-Q8_0.gguf");
  WriteText(home + "/.cache/llama.cpp/ggml-org_tiny-GGUF_tiny-Q8_0.gguf.etag", "\"x\"");
  WriteText(home + "/.cache/llama.cpp/manifest=ggml-org=tiny-GGUF=latest.json", "{}");
  ExpectTiny(Find(ScanModels(Hermetic(home)), "ggml-org_tiny-GGUF_tiny-Q8_0"), ModelSource::kLlamaCpp);

  PlaceModel(t.file("xdg/llama.cpp/x.gguf"));
  ScanOptions xdg = Hermetic(home);
  xdg.env_vars = std::map<std::string, std::string>{{"XDG_CACHE_HOME", t.file("xdg")}};
  std::vector<ModelRecord> found = ScanModels(xdg);
  ExpectTiny(Find(found, "x"), ModelSource::kLlamaCpp);
  EXPECT_EQ(Find(found, "ggml-org_tiny-GGUF_tiny-Q8_0"), nullptr) << "XDG_CACHE_HOME replaces ~/.cache";

  PlaceModel(t.file("lc/y.gguf"));
  ScanOptions lc = Hermetic(home);
  lc.env_vars = std::map<std::string, std::string>{{"LLAMA_CACHE", t.file("lc")}, {"XDG_CACHE_HOME", t.file("xdg")}};
  const ScanResult r = ScanLibrary(lc);
  ExpectTiny(Find(r.models, "y"), ModelSource::kLlamaCpp);
  EXPECT_EQ(Find(r.models, "x"), nullptr) << Names(r.models);
  EXPECT_EQ(r.locations.front().origin, "LLAMA_CACHE");
}

TEST(Stores, LmStudioFoldersSettingsAndHomePointer) {
  TempDir t;
  const std::string home = t.file("home");
  PlaceModel(home + "/.lmstudio/models/lmstudio-community/Tiny-GGUF/Tiny-Q8_0.gguf");
  PlaceModel(home + "/.cache/lm-studio/models/TheBloke/Old-GGUF/old.Q8_0.gguf");
  PlaceModel(t.file("big-disk/pub/Moved-GGUF/moved.gguf"));
  WriteText(home + "/.lmstudio/settings.json", R"({"downloadsFolder": ")" + t.file("big-disk") + R"(", "x": [1]})");
  std::vector<ModelRecord> found = ScanModels(Hermetic(home));
  ExpectTiny(Find(found, "Tiny-Q8_0"), ModelSource::kLmStudio);
  ExpectTiny(Find(found, "old.Q8_0"), ModelSource::kLmStudio);
  ExpectTiny(Find(found, "moved"), ModelSource::kLmStudio);

  // The home pointer moves LM Studio's whole home.
  PlaceModel(t.file("elsewhere/models/p/r/pointed.gguf"));
  WriteText(home + "/.lmstudio-home-pointer", t.file("elsewhere") + "\n");
  found = ScanModels(Hermetic(home));
  ExpectTiny(Find(found, "pointed"), ModelSource::kLmStudio);
  EXPECT_EQ(Find(found, "Tiny-Q8_0"), nullptr) << Names(found);
}

TEST(Stores, LmStudioSettingsThatAreNotJsonAreAWarning) {
  TempDir t;
  const std::string home = t.file("home");
  PlaceModel(home + "/.lmstudio/models/p/r/m.gguf");
  WriteText(home + "/.lmstudio/settings.json", "{\"downloadsFolder\": 7}");
  const ScanResult r = ScanLibrary(Hermetic(home));
  ExpectTiny(Find(r.models, "m"), ModelSource::kLmStudio);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("'downloadsFolder' is not a string"), std::string::npos) << r.warnings[0];
}

TEST(Stores, OllamaManifestsResolveToBlobsWithOllamaNames) {
  TempDir t;
  const std::string root = t.file("home/.ollama/models");
  PlaceModel(root + "/blobs/sha256-" + kDigest);
  WriteText(root + "/manifests/registry.ollama.ai/library/tiny/latest", Manifest(kDigest, TinySize()));
  WriteText(root + "/manifests/registry.ollama.ai/someone/tiny/q8", Manifest(kDigest, TinySize()));
  WriteText(root + "/manifests/hf.co/ggml-org/Tiny-GGUF/Q8_0", Manifest(kDigest, TinySize()));
  const ScanResult r = ScanLibrary(Hermetic(t.file("home")));
  ASSERT_EQ(r.models.size(), 3u) << Names(r.models);
  for (const char* name : {"tiny:latest", "someone/tiny:q8", "hf.co/ggml-org/Tiny-GGUF:Q8_0"}) {
    SCOPED_TRACE(name);
    const ModelRecord* m = Find(r.models, name);
    ExpectTiny(m, ModelSource::kOllama);
    EXPECT_EQ(m->path, root + "/blobs/sha256-" + kDigest);
  }
}

TEST(Stores, OllamaFromOllamaModelsAndTheSystemService) {
  TempDir t;
  for (const std::string& root : {t.file("custom"), t.file("system")}) {
    PlaceModel(root + "/blobs/sha256-" + kDigest);
  }
  WriteText(t.file("custom/manifests/registry.ollama.ai/library/mine/latest"), Manifest(kDigest, TinySize()));
  WriteText(t.file("system/manifests/registry.ollama.ai/library/service/latest"), Manifest(kDigest, TinySize()));
  ScanOptions o = Hermetic(t.file("home"));
  o.env_vars = std::map<std::string, std::string>{{"OLLAMA_MODELS", t.file("custom")}};
  o.ollama_system_dirs = {t.file("system")};
  const std::vector<ModelRecord> found = ScanModels(o);
  ExpectTiny(Find(found, "mine:latest"), ModelSource::kOllama);
  ExpectTiny(Find(found, "service:latest"), ModelSource::kOllama);
}

TEST(Stores, HuggingFaceSnapshotsAreLinksIntoBlobs) {
  TempDir t;
  const std::string hub = t.file("home/.cache/huggingface/hub");
  const std::string repo = hub + "/models--ggml-org--Tiny-GGUF";
  PlaceModel(repo + "/blobs/aaaa");
  fs::create_directories(repo + "/snapshots/rev1");
  fs::create_symlink("../../blobs/aaaa", repo + "/snapshots/rev1/tiny-q8_0.gguf");
  WriteText(repo + "/refs/main", "rev1");
  fs::create_directories(hub + "/datasets--someone--data/snapshots/r");
  PlaceModel(hub + "/datasets--someone--data/snapshots/r/not-a-model.gguf");
  const ScanResult r = ScanLibrary(Hermetic(t.file("home")));
  ASSERT_EQ(r.models.size(), 1u) << Names(r.models);
  const ModelRecord* m = Find(r.models, "ggml-org/Tiny-GGUF:tiny-q8_0");
  ExpectTiny(m, ModelSource::kHuggingFace);
  EXPECT_EQ(m->path, repo + "/snapshots/rev1/tiny-q8_0.gguf");
}

TEST(Stores, HuggingFaceLatestRevisionFirstOlderOnlyForPathsItLacks) {
  TempDir t;
  const std::string hub = t.file("hub");
  const std::string repo = hub + "/models--org--repo";
  PlaceModel(repo + "/blobs/new");
  PlaceModel(repo + "/blobs/old");
  for (const char* rev : {"aaa-old", "zzz-new"}) fs::create_directories(repo + "/snapshots/" + rev);
  fs::create_symlink("../../blobs/old", repo + "/snapshots/aaa-old/m.gguf");
  fs::create_symlink("../../blobs/old", repo + "/snapshots/aaa-old/gone-from-main.gguf");
  fs::create_symlink("../../blobs/new", repo + "/snapshots/zzz-new/m.gguf");
  WriteText(repo + "/refs/main", "zzz-new\n");
  ScanOptions o = Hermetic("");
  o.env_vars = std::map<std::string, std::string>{{"HF_HOME", t.path().string()}};
  const std::vector<ModelRecord> found = ScanModels(o);
  ASSERT_EQ(found.size(), 2u) << Names(found);
  EXPECT_EQ(Find(found, "org/repo:m")->path, repo + "/snapshots/zzz-new/m.gguf");
  EXPECT_EQ(Find(found, "org/repo:gone-from-main")->path, repo + "/snapshots/aaa-old/gone-from-main.gguf");
}

TEST(Stores, HfHubCacheVariableWinsOverHfHome) {
  TempDir t;
  PlaceModel(t.file("a/models--o--r/snapshots/1/x.gguf"));
  PlaceModel(t.file("b/hub/models--o--r/snapshots/1/y.gguf"));
  ScanOptions o = Hermetic("");
  o.env_vars = std::map<std::string, std::string>{{"HF_HUB_CACHE", t.file("a")}, {"HF_HOME", t.file("b")}};
  const std::vector<ModelRecord> found = ScanModels(o);
  ASSERT_EQ(found.size(), 1u) << Names(found);
  EXPECT_EQ(found[0].name, "o/r:x");
}

TEST(Stores, AModelsDirThatIsAStoreIsReadAsOne) {
  TempDir t;
  PlaceModel(t.file("ollama/blobs/sha256-") + kDigest);
  WriteText(t.file("ollama/manifests/registry.ollama.ai/library/tiny/latest"), Manifest(kDigest, TinySize()));
  PlaceModel(t.file("hub/models--o--r/snapshots/1/x.gguf"));
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("ollama"), t.file("hub")};
  const std::vector<ModelRecord> found = ScanModels(o);
  ExpectTiny(Find(found, "tiny:latest"), ModelSource::kModelsDir);
  ExpectTiny(Find(found, "o/r:x"), ModelSource::kModelsDir);
  EXPECT_EQ(found.size(), 2u) << Names(found);
}

TEST(Stores, NoStoresMeansOnlyTheNamedFolders) {
  TempDir t;
  PlaceModel(t.file("home/.cache/llama.cpp/x.gguf"));
  ScanOptions o = Hermetic(t.file("home"));
  o.include_stores = false;
  const ScanResult r = ScanLibrary(o);
  EXPECT_TRUE(r.models.empty()) << Names(r.models);
  EXPECT_TRUE(r.locations.empty());
}

TEST(Stores, EveryLocationIsReportedPresentOrNot) {
  TempDir t;
  const std::string home = t.file("home");
  fs::create_directories(home + "/.ollama/models/manifests");
  const ScanResult r = ScanLibrary(Hermetic(home));
  EXPECT_TRUE(r.models.empty());
  std::vector<std::string> seen;
  for (const ScanLocation& l : r.locations) {
    seen.push_back(std::string(ModelSourceName(l.source)) + " " + l.path.substr(home.size()) + " " + l.origin +
                   (l.present ? " present" : ""));
  }
  const std::vector<std::string> want = {
      "llama.cpp /.cache/llama.cpp default",
      "lm-studio /.lmstudio/models default",
      "lm-studio /.cache/lm-studio/models older default",
      "ollama /.ollama/models default present",
      "hf /.cache/huggingface/hub default",
  };
  EXPECT_EQ(seen, want);
}

}  // namespace
}  // namespace ember::library
