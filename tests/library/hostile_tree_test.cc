// Odd and hostile trees: link loops, unreadable folders, huge and deep folders, manifests that lie. The
// scan ends, says what it could not do, and never writes, moves or deletes anything.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <set>

#include "library/model_catalog.h"
#include "library_test_util.h"
#include "util/env_wrapper.h"
#include "util/sha256.h"

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

std::string ModelLayer(const std::string& digest_json) {
  return R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":)" + digest_json +
         R"(,"size":1}]})";
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// Every entry below `root` (links not followed): its kind, size, mode, mtime, link target and a hash of
// its bytes. Equal before and after a scan = the scan changed nothing.
std::string TreeChecksum(const std::string& root) {
  std::string listing;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& p = it->path();
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    listing += p.string() + " mode=" + std::to_string(st.st_mode) + " size=" + std::to_string(st.st_size) +
               " mtime=" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISLNK(st.st_mode)) listing += " -> " + fs::read_symlink(p).string();
    if (S_ISREG(st.st_mode)) listing += " sha=" + Sha256Hex(::ember::testing::ReadFileToString(p.string()));
    listing += "\n";
  }
  return listing;
}

// An Env that cannot list one folder, as if its permissions refused us (a test running as root would
// read a chmod 000 folder anyway).
class RefusingEnv : public EnvWrapper {
 public:
  RefusingEnv(Env* target, std::string refused) : EnvWrapper(target), refused_(std::move(refused)) {}
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    if (dir == refused_) return ErrnoStatus("opendir", dir, EACCES);
    return EnvWrapper::GetChildren(dir);
  }

 private:
  std::string refused_;
};

TEST(HostileTree, LinkLoopsAreNotFollowed) {
  TempDir t;
  PlaceModel(t.file("m/a/x.gguf"));
  fs::create_directory_symlink("..", t.file("m/a/up"));
  fs::create_directory_symlink(t.file("m"), t.file("m/a/root"));
  fs::create_directory_symlink(t.file("m/b"), t.file("m/c"));
  fs::create_directory_symlink(t.file("m/c"), t.file("m/b"));  // c -> b -> c
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("m")};
  const ScanResult r = ScanLibrary(o);
  ASSERT_EQ(r.models.size(), 1u) << Names(r.models);
  EXPECT_EQ(r.models[0].name, "x");
  EXPECT_TRUE(r.warnings.empty()) << Joined(r.warnings);
}

TEST(HostileTree, ALinkedRootIsEntered) {
  TempDir t;
  PlaceModel(t.file("real/x.gguf"));
  fs::create_directory_symlink(t.file("real"), t.file("link"));
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("link")};
  EXPECT_NE(Find(ScanModels(o), "x"), nullptr);
}

TEST(HostileTree, AnUnreadableFolderIsAWarningAndTheRestIsScanned) {
  TempDir t;
  PlaceModel(t.file("m/locked/hidden.gguf"));
  PlaceModel(t.file("m/open/seen.gguf"));
  RefusingEnv env(Env::Default(), t.file("m/locked"));
  ScanOptions o = Hermetic("");
  o.env = &env;
  o.models_dirs = {t.file("m")};
  const ScanResult r = ScanLibrary(o);
  ASSERT_EQ(r.models.size(), 1u) << Names(r.models);
  EXPECT_EQ(r.models[0].name, "seen");
  EXPECT_TRUE(AnyContains(r.warnings, "cannot list " + t.file("m/locked"))) << Joined(r.warnings);
}

TEST(HostileTree, AHugeFolderIsCutAtTheEntryBound) {
  TempDir t;
  fs::create_directories(t.file("m/crowd"));
  for (int i = 0; i < 300; ++i) WriteText(t.file("m/crowd/f" + std::to_string(1000 + i)), "");
  PlaceModel(t.file("m/z/late.gguf"));
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("m")};
  o.limits.max_entries = 100;
  const ScanResult r = ScanLibrary(o);
  EXPECT_TRUE(r.models.empty()) << Names(r.models);
  EXPECT_TRUE(AnyContains(r.warnings, "looked at 100 directory entries")) << Joined(r.warnings);
  o.limits.max_entries = 1000;
  EXPECT_NE(Find(ScanModels(o), "late"), nullptr);
}

TEST(HostileTree, DeepFoldersAreCutAtTheDepthBound) {
  TempDir t;
  std::string deep = t.file("m");
  for (int i = 0; i < 5; ++i) deep += "/d" + std::to_string(i);
  PlaceModel(deep + "/deep.gguf");
  PlaceModel(t.file("m/d0/shallow.gguf"));
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("m")};
  o.limits.max_depth = 2;
  const ScanResult r = ScanLibrary(o);
  ASSERT_EQ(r.models.size(), 1u) << Names(r.models);
  EXPECT_EQ(r.models[0].name, "shallow");
  EXPECT_TRUE(AnyContains(r.warnings, "2 folder levels")) << Joined(r.warnings);
  o.limits.max_depth = 5;
  EXPECT_NE(Find(ScanModels(o), "deep"), nullptr);
}

TEST(HostileTree, TheModelBoundStopsTheScanAndSaysSo) {
  TempDir t;
  for (int i = 0; i < 5; ++i) PlaceModel(t.file("m/m" + std::to_string(i) + ".gguf"));
  ScanOptions o = Hermetic("");
  o.models_dirs = {t.file("m")};
  o.limits.max_models = 3;
  const ScanResult r = ScanLibrary(o);
  EXPECT_EQ(r.models.size(), 3u);
  EXPECT_TRUE(AnyContains(r.warnings, "stopped listing after 3 models")) << Joined(r.warnings);
}

TEST(HostileTree, OllamaManifestsThatLieAreListedWithTheReason) {
  TempDir t;
  const std::string root = t.file("ollama");
  const std::string lib = root + "/manifests/registry.ollama.ai/library/";
  PlaceModel(root + "/blobs/sha256-" + std::string(kDigest));
  WriteText(root + "/secret", "outside the blobs folder");
  WriteText(lib + "notjson/latest", "this is not JSON");
  WriteText(lib + "deep/latest", std::string(100000, '[') + std::string(100000, ']'));
  WriteText(lib + "wrongtype/latest", R"({"layers":{"mediaType":"application/vnd.ollama.image.model"}})");
  WriteText(lib + "escape/latest", ModelLayer(R"("sha256:../../secret")"));
  WriteText(lib + "escape2/latest", ModelLayer("\"sha256:" + std::string(61, 'a') + "/..\""));
  WriteText(lib + "numeric/latest", ModelLayer("12"));
  WriteText(lib + "missing/latest", ModelLayer("\"sha256:" + std::string(64, 'b') + "\""));
  WriteText(lib + "short/latest", ModelLayer("\"sha256:" + std::string(kDigest) + "\""));  // size 1: unfinished
  WriteText(lib + "huge/latest", std::string(2 << 20, ' ') + "{}");
  ScanOptions o = Hermetic("");
  o.env_vars = std::map<std::string, std::string>{{"OLLAMA_MODELS", root}};
  const std::vector<ModelRecord> found = ScanModels(o);
  ASSERT_EQ(found.size(), 9u) << Names(found);
  const std::map<std::string, std::string> why = {
      {"notjson:latest", "manifest: "},
      {"deep:latest", "manifest: JSON nested deeper than 64"},
      {"wrongtype:latest", "manifest: manifest has no 'layers' array"},
      {"escape:latest", "manifest: layer 0: digest is not sha256:<64 hex digits>"},
      {"escape2:latest", "manifest: layer 0: digest is not lowercase hex"},
      {"numeric:latest", "manifest: layer 0: digest is not a string"},
      {"missing:latest", "blob sha256-" + std::string(64, 'b') + " is missing"},
      {"short:latest", "the manifest says 1 (an unfinished pull?)"},
      {"huge:latest", "manifest: manifest is larger than 1048576 bytes"},
  };
  for (const auto& [name, needle] : why) {
    SCOPED_TRACE(name);
    const ModelRecord* r = Find(found, name);
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->runnable);
    EXPECT_NE(r->why_not.find(needle), std::string::npos) << r->why_not;
  }
}

TEST(HostileTree, AScanWritesMovesAndDeletesNothing) {
  TempDir t;
  const std::string home = t.file("home");
  const std::string ollama = home + "/.ollama/models";
  PlaceModel(ollama + "/blobs/sha256-" + std::string(kDigest));
  WriteText(ollama + "/manifests/registry.ollama.ai/library/tiny/latest",
            ModelLayer("\"sha256:" + std::string(kDigest) + "\""));
  PlaceModel(home + "/.cache/llama.cpp/a.gguf");
  PlaceModel(home + "/.lmstudio/models/p/r/b-00001-of-00002.gguf");
  WriteText(home + "/.lmstudio/settings.json", "{\"downloadsFolder\": \"" + t.file("dl") + "\"}");
  PlaceModel(t.file("dl/p/r/c.gguf"));
  const std::string repo = home + "/.cache/huggingface/hub/models--o--r";
  PlaceModel(repo + "/blobs/x");
  fs::create_directories(repo + "/snapshots/1");
  fs::create_symlink("../../blobs/x", repo + "/snapshots/1/x.gguf");
  fs::create_directory_symlink("..", repo + "/snapshots/1/loop");
  WriteText(home + "/.cache/llama.cpp/broken.gguf", "GGUF");
  const std::string before = TreeChecksum(t.path().string());
  ScanOptions o = Hermetic(home);
  o.models_dirs = {t.path().string()};
  o.data_dir = home;
  const ScanResult r = ScanLibrary(o);
  EXPECT_GE(r.models.size(), 5u) << Names(r.models);
  EXPECT_EQ(TreeChecksum(t.path().string()), before);
}

}  // namespace
}  // namespace ember::library
