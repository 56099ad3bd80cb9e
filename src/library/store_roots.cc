#include "library/store_roots.h"

#include <cstdlib>

#include "library/lmstudio_settings.h"

namespace ember::library {
namespace {

std::string Var(const EnvVars& vars, const char* name) {
  const auto it = vars.find(name);
  return it == vars.end() ? "" : it->second;
}

// A small file's text through links, or "" when it is absent, not a file or over `limit` bytes.
StatusOr<std::string> ReadSmallFile(const std::string& path, size_t limit, Env* env) {
  StatusOr<PathInfo> info = env->Stat(path, /*follow_symlinks=*/true);
  if (!info.ok() || info->type != PathInfo::Type::kFile) return std::string();
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<MappedRegion> map, env->MapFile(path));
  if (map->size() > limit) return InvalidArgument("larger than " + std::to_string(limit) + " bytes");
  return std::string(reinterpret_cast<const char*>(map->data()), map->size());
}

void AddLmStudio(const std::string& home, Env* env, std::vector<StoreRoot>* roots,
                 std::vector<std::string>* warnings) {
  const std::string pointer_path = JoinPath(home, ".lmstudio-home-pointer");
  std::string lm_home = JoinPath(home, ".lmstudio");
  std::string origin = "default";
  if (StatusOr<std::string> text = ReadSmallFile(pointer_path, kMaxHomePointerBytes, env); text.ok()) {
    if (std::string p = ParseLmStudioHomePointer(*text); !p.empty()) {
      lm_home = p;
      origin = "~/.lmstudio-home-pointer";
    }
  }
  roots->push_back({ModelSource::kLmStudio, JoinPath(lm_home, "models"), origin});
  const std::string settings_path = JoinPath(lm_home, "settings.json");
  StatusOr<std::string> settings = ReadSmallFile(settings_path, kMaxLmStudioSettingsBytes, env);
  if (settings.ok() && !settings->empty()) {
    StatusOr<std::string> folder = ParseLmStudioDownloadsFolder(*settings);
    if (!folder.ok()) {
      warnings->push_back(settings_path + ": " + folder.status().message());
    } else if (!folder->empty() && folder->front() == '/') {
      roots->push_back({ModelSource::kLmStudio, *folder, "settings.json downloadsFolder"});
    }
  } else if (!settings.ok()) {
    warnings->push_back(settings_path + ": " + settings.status().message());
  }
  roots->push_back({ModelSource::kLmStudio, JoinPath(home, ".cache/lm-studio/models"), "older default"});
}

}  // namespace

std::vector<StoreRoot> StoreRoots(const EnvVars& vars, const std::string& home,
                                  const std::vector<std::string>& ollama_system_dirs, Env* env,
                                  std::vector<std::string>* warnings) {
  std::vector<StoreRoot> roots;
  const auto add = [&](ModelSource s, const std::string& path, const std::string& origin) {
    if (!path.empty()) roots.push_back({s, path, origin});
  };
  std::string xdg_cache = Var(vars, "XDG_CACHE_HOME");
  if (xdg_cache.empty() || xdg_cache.front() != '/') xdg_cache.clear();
  const auto under_home = [&](const char* rel) { return home.empty() ? std::string() : JoinPath(home, rel); };

  if (std::string v = Var(vars, "LLAMA_CACHE"); !v.empty()) {
    add(ModelSource::kLlamaCpp, v, "LLAMA_CACHE");
  } else if (!xdg_cache.empty()) {
    add(ModelSource::kLlamaCpp, JoinPath(xdg_cache, "llama.cpp"), "XDG_CACHE_HOME");
  } else {
    add(ModelSource::kLlamaCpp, under_home(".cache/llama.cpp"), "default");
  }

  if (!home.empty()) AddLmStudio(home, env, &roots, warnings);

  if (std::string v = Var(vars, "OLLAMA_MODELS"); !v.empty()) {
    add(ModelSource::kOllama, v, "OLLAMA_MODELS");
  } else {
    add(ModelSource::kOllama, under_home(".ollama/models"), "default");
  }
  for (const std::string& dir : ollama_system_dirs) add(ModelSource::kOllama, dir, "system service");

  const std::string hf_home = Var(vars, "HF_HOME");
  if (std::string v = Var(vars, "HF_HUB_CACHE"); !v.empty()) {
    add(ModelSource::kHuggingFace, v, "HF_HUB_CACHE");
  } else if (std::string legacy = Var(vars, "HUGGINGFACE_HUB_CACHE"); !legacy.empty()) {
    add(ModelSource::kHuggingFace, legacy, "HUGGINGFACE_HUB_CACHE");
  } else if (!hf_home.empty()) {
    add(ModelSource::kHuggingFace, JoinPath(hf_home, "hub"), "HF_HOME");
  } else if (!xdg_cache.empty()) {
    add(ModelSource::kHuggingFace, JoinPath(xdg_cache, "huggingface/hub"), "XDG_CACHE_HOME");
  } else {
    add(ModelSource::kHuggingFace, under_home(".cache/huggingface/hub"), "default");
  }
  return roots;
}

EnvVars ProcessStoreVars() {
  EnvVars vars;
  for (const char* name : kStoreVarNames) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') vars[name] = v;
  }
  return vars;
}

}  // namespace ember::library
