// `ember cache ls|inspect|verify|gc`: look after the SSD prompt cache (docs/coldtier.md) without a server.
// Everything goes through the cold tier's Env seam and entry-file readers, so the tool sees exactly what
// a server would: a file these readers reject is one a server would delete at startup.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include <nlohmann/json.hpp>

#include "cache/cache_options.h"
#include "tiered/ssd_paths.h"
#include "cli/command.h"
#include "coldtier/entry_file.h"
#include "coldtier/entry_format.h"
#include "util/env.h"
#include "util/progress.h"
#include "coldtier/private_dir.h"

namespace ember::cli {
namespace {

using nlohmann::ordered_json;

struct FileRef {
  std::string identity;
  std::string path;
  bool temp = false;
  uint64_t bytes = 0;
  int64_t mtime_us = 0;
};

// What Walk found: files, identity directories, and directories refused (coldtier/private_dir.h).
struct WalkResult {
  std::vector<FileRef> files;
  std::vector<std::string> identities;
  std::vector<std::string> problems;  // one message per refused directory (path and fix)
  bool root_refused = false;          // DIR itself (or listing it) failed: nothing was walked
};

// Whether a child is a directory to descend into; a link or an unsafe directory is a problem, never
// followed (exactly what a server would refuse).
bool UsableDir(Env& env, const std::string& path, std::vector<std::string>* problems) {
  StatusOr<PathInfo> info = env.Stat(path, /*follow_symlinks=*/false);
  if (!info.ok() || (info->type != PathInfo::Type::kDir && info->type != PathInfo::Type::kSymlink)) return false;
  Status st = CheckPrivateDir(env, path, DirRole::kOwn);
  if (!st.ok()) problems->push_back(st.message());
  return st.ok();
}

FileRef Ref(Env& env, const std::string& id, const std::string& path, bool temp) {
  FileRef f;
  f.identity = id;
  f.path = path;
  f.temp = temp;
  f.bytes = env.FileSize(path).ok() ? *env.FileSize(path) : 0;
  f.mtime_us = env.GetMtimeMicros(path).ok() ? *env.GetMtimeMicros(path) : 0;
  return f;
}

// Every entry and temp file under <root>/<identity>/<ns>/ (the layout of docs/coldtier.md), plus temp
// files of interrupted identity.json writes. A missing root is an empty cache; a root that fails the
// checks is walked not at all.
WalkResult Walk(Env& env, const std::string& root) {
  WalkResult out;
  if (Status st = CheckPrivateDir(env, root, DirRole::kRoot); !st.ok()) {
    if (st.code() != StatusCode::kNotFound) {
      out.problems.push_back(st.message());
      out.root_refused = true;
    }
    return out;
  }
  auto ids = env.GetChildren(root);
  if (!ids.ok()) {
    out.problems.push_back(ids.status().message());
    out.root_refused = true;
    return out;
  }
  std::sort(ids->begin(), ids->end());
  for (const std::string& id : *ids) {
    const std::string id_dir = JoinPath(root, id);
    if (!UsableDir(env, id_dir, &out.problems)) continue;
    out.identities.push_back(id);
    auto nss = env.GetChildren(id_dir);
    if (!nss.ok()) continue;
    std::sort(nss->begin(), nss->end());
    for (const std::string& ns : *nss) {
      const std::string ns_dir = JoinPath(id_dir, ns);
      if (ns.ends_with(kTempExtension) && env.Stat(ns_dir, false).ok() &&
          env.Stat(ns_dir, false)->type == PathInfo::Type::kFile) {
        out.files.push_back(Ref(env, id, ns_dir, /*temp=*/true));
        continue;
      }
      if (!UsableDir(env, ns_dir, &out.problems)) continue;
      auto names = env.GetChildren(ns_dir);
      if (!names.ok()) continue;
      for (const std::string& name : *names) {
        const bool temp = name.ends_with(kTempExtension);
        if (!temp && !name.ends_with(kEntryExtension)) continue;
        out.files.push_back(Ref(env, id, JoinPath(ns_dir, name), temp));
      }
    }
  }
  return out;
}

// Prints each refused directory; true if there was one (the command then exits 1).
bool ReportProblems(const char* cmd, const std::vector<std::string>& problems) {
  for (const std::string& p : problems) std::fprintf(stderr, "ember cache %s: refused: %s\n", cmd, p.c_str());
  return !problems.empty();
}

// A refused DIR: its reason, and exit 1 before printing any listing or summary (which would read as
// "an empty cache").
int RefuseRoot(const char* cmd, const WalkResult& walk) {
  ReportProblems(cmd, walk.problems);
  return 1;
}

// identity.json is written by ember and a few hundred bytes; anything far larger is not ours.
constexpr uint64_t kMaxIdentityFileBytes = 64 << 10;

// Locks every identity directory a deleting command walks, as a server does; one a running server holds
// is left out (and named). Returns the locks, held until the command ends.
std::vector<std::unique_ptr<FileLock>> LockIdentities(Env& env, const std::string& root, const char* cmd,
                                                      WalkResult& walk) {
  std::vector<std::unique_ptr<FileLock>> locks;
  std::vector<std::string> busy;
  for (const std::string& id : walk.identities) {
    StatusOr<std::unique_ptr<FileLock>> lock = env.LockFile(JoinPath(JoinPath(root, id), kLockFileName));
    if (lock.ok()) {
      locks.push_back(std::move(lock).value());
      continue;
    }
    busy.push_back(id);
    std::fprintf(stderr, "ember cache %s: skipping %s: in use by a running server (%s)\n", cmd,
                 JoinPath(root, id).c_str(), lock.status().message().c_str());
  }
  std::erase_if(walk.files, [&](const FileRef& f) { return std::count(busy.begin(), busy.end(), f.identity) > 0; });
  return locks;
}

// A field of identity.json for display: the file is untrusted, so any other type is shown as "?".
std::string AboutField(const ordered_json& about, const char* key) {
  auto it = about.find(key);
  return it != about.end() && it->is_string() ? it->get<std::string>() : "?";
}

std::string Age(int64_t mtime_us) {
  const double s = static_cast<double>(Env::Default()->WallMicros() - mtime_us) / 1e6;
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0fm", s / 60);
  else if (s < 172800) std::snprintf(buf, sizeof buf, "%.0fh", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.0fd", s / 86400);
  return buf;
}

ordered_json HeaderJson(const EntryHeader& h) {
  std::vector<int32_t> head(h.tokens.begin(), h.tokens.begin() + std::min<size_t>(h.tokens.size(), 16));
  ordered_json layers = ordered_json::array();
  for (size_t l = 0; l < h.config.kinds.size(); ++l) {
    ordered_json layer = {{"kind", StateKindName(h.config.kinds[l].kind)}, {"window", h.config.kinds[l].window},
                          {"min_reusable_offset", l < h.min_reusable_offset.size() ? h.min_reusable_offset[l] : 0}};
    // A hybrid's entry is a checkpoint of its recurrent state (docs/hybrid.md): served at its length only.
    if (h.config.kinds[l].kind == StateKind::kRecurrent) layer["state_floats"] = h.config.kinds[l].state_floats;
    layers.push_back(std::move(layer));
  }
  ordered_json tensors = ordered_json::array();
  for (const TensorRef& t : h.tensors) {
    tensors.push_back({{"name", t.name}, {"offset", t.offset}, {"size", t.size}, {"chunk_size", t.chunk_size},
                       {"chunks", t.chunk_checksums.size()}});
  }
  return {{"identity", h.identity}, {"namespace", h.ns}, {"n_tokens", h.tokens.size()}, {"first_tokens", head},
          {"kv", {{"n_layer", h.config.n_layer}, {"n_kv_head", h.config.n_kv_head}, {"head_dim_k", h.config.head_dim_k},
                  {"head_dim_v", h.config.head_dim_v}, {"block_size", h.config.block_size},
                  {"dtype", KvDtypeName(h.config.dtype)}, {"layers", layers}}},
          {"data_offset", h.data_offset}, {"file_size", h.file_size}, {"tensors", tensors}};
}

int Ls(const std::string& root, bool json, bool entries) {
  Env& env = *PosixEnv::Default();
  WalkResult walk = Walk(env, root);
  if (walk.root_refused) return RefuseRoot("ls", walk);
  const std::vector<std::string>& ids = walk.identities;
  const std::vector<FileRef>& files = walk.files;
  ordered_json out = {{"dir", root}, {"identities", ordered_json::array()}};
  for (const std::string& id : ids) {
    ordered_json j = {{"identity", id}, {"entries", 0}, {"bytes", 0}, {"temp_files", 0}};
    const std::string about_path = JoinPath(JoinPath(root, id), "identity.json");
    // Missing, not a regular file, oversized or not a JSON object: not ours, not shown.
    if (StatusOr<uint64_t> n = env.FileSize(about_path); n.ok() && *n <= kMaxIdentityFileBytes) {
      if (auto raw = env.ReadFile(about_path); raw.ok()) {
        ordered_json d = ordered_json::parse(std::string(raw->begin(), raw->end()), nullptr, false);
        if (d.is_object()) j["about"] = d;
      }
    }
    ordered_json list = ordered_json::array();
    for (const FileRef& f : files) {
      if (f.identity != id) continue;
      if (f.temp) {
        j["temp_files"] = j["temp_files"].get<int>() + 1;
        continue;
      }
      j["entries"] = j["entries"].get<int>() + 1;
      j["bytes"] = j["bytes"].get<uint64_t>() + f.bytes;
      if (!entries) continue;
      ordered_json e = {{"path", f.path}, {"bytes", f.bytes}, {"mtime_us", f.mtime_us}};
      if (auto h = ReadHeader(env, f.path); h.ok()) {
        e["namespace"] = h->ns;
        e["n_tokens"] = h->tokens.size();
      } else {
        e["error"] = h.status().ToString();
      }
      list.push_back(std::move(e));
    }
    if (entries) j["files"] = std::move(list);
    out["identities"].push_back(std::move(j));
  }
  const bool refused = ReportProblems("ls", walk.problems);
  if (json) {
    // Untrusted strings (a namespace, identity.json) may not be UTF-8: replaced, never thrown on.
    std::printf("%s\n", out.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
    return refused ? 1 : 0;
  }
  std::printf("%s\n", root.c_str());
  if (ids.empty()) std::printf("  (no cache directories)\n");
  for (const ordered_json& j : out["identities"]) {
    std::string about;
    if (j.contains("about")) {
      about = "  " + AboutField(j["about"], "model_path") + ", kv " + AboutField(j["about"], "kv_dtype");
    }
    std::printf("  %-40s %6d entries %12s%s%s\n", j["identity"].get<std::string>().c_str(), j["entries"].get<int>(),
                FormatBytes(j["bytes"].get<uint64_t>()).c_str(), about.c_str(),
                j["temp_files"].get<int>() ? "  (temp files left over: run `ember cache gc`)" : "");
    if (!entries) continue;
    for (const ordered_json& e : j["files"]) {
      std::printf("    %s  %s  %s tokens  %s old\n", e["path"].get<std::string>().c_str(),
                  FormatBytes(e["bytes"].get<uint64_t>()).c_str(),
                  e.contains("n_tokens") ? std::to_string(e["n_tokens"].get<size_t>()).c_str() : "?",
                  Age(e["mtime_us"].get<int64_t>()).c_str());
    }
  }
  return refused ? 1 : 0;
}

int Inspect(const std::string& file, bool json, bool verify) {
  Env& env = *PosixEnv::Default();
  StatusOr<EntryHeader> h = ReadHeader(env, file);
  if (!h.ok()) {
    std::fprintf(stderr, "ember cache inspect: %s\n", h.status().ToString().c_str());
    return 1;
  }
  ordered_json j = HeaderJson(*h);
  Status data = Status::Ok();
  if (verify) data = ReadEntry(env, file, /*verify_tensors=*/true).status();
  if (verify) j["data"] = data.ok() ? "ok" : data.ToString();
  if (json) {
    std::printf("%s\n", j.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s\n  identity   %s\n  namespace  %s\n  tokens     %zu\n  kv         %d layers x %d heads, dims %d/%d, %s, "
                "block %d\n  file       %s (data at %llu)\n",
                file.c_str(), h->identity.c_str(), h->ns.empty() ? "(default)" : h->ns.c_str(), h->tokens.size(),
                h->config.n_layer, h->config.n_kv_head, h->config.head_dim_k, h->config.head_dim_v,
                KvDtypeName(h->config.dtype), h->config.block_size, FormatBytes(h->file_size).c_str(),
                static_cast<unsigned long long>(h->data_offset));
    for (const TensorRef& t : h->tensors) {
      std::printf("  tensor     %s: %s at %llu, %zu checksummed chunks\n", t.name.c_str(), FormatBytes(t.size).c_str(),
                  static_cast<unsigned long long>(t.offset), t.chunk_checksums.size());
    }
    if (verify) std::printf("  data       %s\n", data.ok() ? "checksums ok" : data.ToString().c_str());
  }
  return data.ok() ? 0 : 1;
}

// Verifies every entry file of every identity (header, checksums, that it sits in its identity's dir).
int Verify(const std::string& root, bool remove) {
  Env& env = *PosixEnv::Default();
  WalkResult walk = Walk(env, root);
  if (walk.root_refused) return RefuseRoot("verify", walk);
  std::vector<std::unique_ptr<FileLock>> locks;
  if (remove) locks = LockIdentities(env, root, "verify", walk);
  int ok = 0, bad = 0;
  // Reading every byte of a large cache takes a while: a bar on a terminal, in bytes.
  uint64_t bytes = 0;
  for (const FileRef& f : walk.files) bytes += f.temp ? 0 : f.bytes;
  ProgressBar bar("verify", bytes, {.enabled = ShowProgress(), .unit = ProgressBar::Unit::kBytes});
  for (const FileRef& f : walk.files) {
    if (f.temp) continue;
    StatusOr<LoadedEntry> e = ReadEntry(env, f.path, /*verify_tensors=*/true);
    Status st = e.status();
    if (st.ok() && e->header.identity != f.identity) st = Corrupt(f.path + ": identity does not match its directory");
    bar.Advance(f.bytes);
    if (st.ok()) {
      ++ok;
      continue;
    }
    ++bad;
    bar.Log("BAD  " + st.ToString(), stdout);
    if (remove && env.RemoveFile(f.path).ok()) bar.Log("     deleted", stdout);
  }
  bar.Finish();
  std::printf("%d entries ok, %d bad%s\n", ok, bad, bad && !remove ? " (--delete removes them)" : "");
  if (ReportProblems("verify", walk.problems)) return 1;
  return bad == 0 || remove ? 0 : 1;
}

// Removes temp files and entries whose header does not verify; then, with a byte limit, the oldest
// entries (by mtime, which a restore touches) across all identities until the total fits.
int Gc(const std::string& root, const std::string& max_bytes_text, bool dry_run) {
  Env& env = *PosixEnv::Default();
  uint64_t max_bytes = 0;
  if (!max_bytes_text.empty()) {
    StatusOr<size_t> b = ParseByteSize(max_bytes_text);
    if (!b.ok()) {
      std::fprintf(stderr, "ember cache gc: %s\n", b.status().ToString().c_str());
      return 2;
    }
    max_bytes = *b;
  }
  WalkResult walk = Walk(env, root);
  if (walk.root_refused) return RefuseRoot("gc", walk);
  std::vector<std::unique_ptr<FileLock>> locks = LockIdentities(env, root, "gc", walk);
  ProgressBar bar("gc", walk.files.size(), {.enabled = ShowProgress()});  // one header read per file
  auto remove = [&](const std::string& path, const char* why) {
    // Above the bar while it is drawn; a plain line once it is finished (or off).
    bar.Log(std::string(dry_run ? "would delete " : "delete ") + path + " (" + why + ")", stdout);
    if (!dry_run) (void)env.RemoveFile(path);
  };
  std::vector<FileRef> kept;
  uint64_t total = 0;
  for (const FileRef& f : walk.files) {
    bar.Advance();
    if (f.temp) {
      remove(f.path, "temp file of an interrupted write");
    } else if (!ReadHeader(env, f.path).ok()) {
      remove(f.path, "corrupt header");
    } else {
      kept.push_back(f);
      total += f.bytes;
    }
  }
  bar.Finish();
  std::sort(kept.begin(), kept.end(), [](const FileRef& a, const FileRef& b) { return a.mtime_us < b.mtime_us; });
  for (size_t i = 0; max_bytes > 0 && total > max_bytes && i < kept.size(); ++i) {
    remove(kept[i].path, "oldest, over --max-bytes");
    total -= kept[i].bytes;
  }
  std::printf("%s now holds %s%s\n", root.c_str(), FormatBytes(total).c_str(),
              walk.problems.empty() ? "" : " (not counting refused directories)");
  return ReportProblems("gc", walk.problems) ? 1 : 0;
}

void SetupCache(CLI::App& app, std::function<void(int)> set_exit) {
  CLI::App* cmd = app.add_subcommand("cache", "Inspect and maintain the SSD prompt cache");
  cmd->footer(
      "The SSD cache keeps one file per cached prefix under DIR/<identity>/<namespace>/, where <identity>\n"
      "hashes the model's weights, tokenizer, KV dtype and format versions: entries are only ever reused by\n"
      "the exact model that wrote them. A running `ember serve` locks its identity directory; `gc` and\n"
      "`verify --delete` take the same lock and skip (and name) directories a server holds. Directories\n"
      "owned by another user, writable by group or others, or reached through a link inside DIR are refused\n"
      "(exit 1), as a server would refuse them.");
  cmd->require_subcommand(1);
  auto dir = std::make_shared<std::string>(DefaultSsdCacheDir());
  auto json = std::make_shared<bool>(false);
  auto entries = std::make_shared<bool>(false);
  auto file = std::make_shared<std::string>();
  auto verify = std::make_shared<bool>(false);
  auto remove = std::make_shared<bool>(false);
  auto max_bytes = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);

  CLI::App* ls = cmd->add_subcommand("ls", "List cache directories (one per model identity) with entry counts and sizes");
  ls->add_option("--dir", *dir, "Cache directory")->capture_default_str();
  ls->add_flag("--json", *json, "Machine-readable output");
  ls->add_flag("--entries", *entries, "Also list every entry file (namespace, tokens, size, age)");
  ls->callback([=] { set_exit(Ls(*dir, *json, *entries)); });

  CLI::App* inspect = cmd->add_subcommand("inspect", "Show one entry file's header (and check its data with --verify)");
  inspect->add_option("FILE", *file, "An .entry file")->required();
  inspect->add_flag("--json", *json, "Machine-readable output");
  inspect->add_flag("--verify", *verify, "Also read the tensor data and check its checksums");
  inspect->callback([=] { set_exit(Inspect(*file, *json, *verify)); });

  CLI::App* ver = cmd->add_subcommand("verify", "Check every entry's header and data checksums (exit 1 if any is bad)");
  ver->add_option("--dir", *dir, "Cache directory")->capture_default_str();
  ver->add_flag("--delete", *remove, "Delete bad entries");
  ver->callback([=] { set_exit(Verify(*dir, *remove)); });

  CLI::App* gc = cmd->add_subcommand("gc", "Delete leftover temp files and corrupt entries; with --max-bytes, oldest entries too");
  gc->add_option("--dir", *dir, "Cache directory")->capture_default_str();
  gc->add_option("--max-bytes", *max_bytes, "Keep at most this much, e.g. 20G (oldest entries go first)");
  gc->add_flag("--dry-run", *dry_run, "Only print what would be deleted");
  gc->callback([=] { set_exit(Gc(*dir, *max_bytes, *dry_run)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("cache", SetupCache);

}  // namespace ember::cli
