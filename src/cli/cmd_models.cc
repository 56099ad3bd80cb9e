// `ember models`: the model library (library/model_catalog.h) — every GGUF file and safetensors folder
// found in --models-dir folders, ember's data dir and the other tools' stores, with whether ember can
// run it. Read-only. Exit 0 whatever is (or is not) found; 1 only for a bad flag.
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "library/catalog_format.h"
#include "library/model_catalog.h"

namespace ember::cli {
namespace {

struct Args {
  std::vector<std::string> models_dirs;
  bool no_stores = false;
  bool json = false;
  bool path = false;
};

int Run(const Args& a) {
  library::ScanOptions options = library::ProcessScanOptions();
  options.models_dirs = a.models_dirs;
  options.include_stores = !a.no_stores;
  const library::ScanResult result = library::ScanLibrary(options);
  if (a.json) {
    std::cout << library::ScanResultJson(result).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  for (const std::string& w : result.warnings) std::cerr << "ember models: warning: " << w << "\n";
  if (result.models.empty()) {
    std::cout << "No models found.\n";
  } else {
    size_t runnable = 0;
    for (const auto& m : result.models) runnable += m.runnable ? 1 : 0;
    std::cout << library::RenderModelTable(result.models, a.path) << "\n"
              << result.models.size() << (result.models.size() == 1 ? " model, " : " models, ") << runnable
              << " runnable by ember.\n";
  }
  std::cout << library::RenderLocations(result.locations);
  return 0;
}

constexpr const char* kFooter =
    "Where it looks, in this order (a name two places offer goes to the first; the later one is shown\n"
    "as NAME@SOURCE):\n"
    "  --models-dir DIR     each folder given, and the folders below it (a folder that is an Ollama store\n"
    "                       or a Hugging Face hub cache is read as one)\n"
    "  ember                $XDG_DATA_HOME/ember, else ~/.local/share/ember\n"
    "  llama.cpp            $LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp (-hf downloads)\n"
    "  lm-studio            ~/.lmstudio/models (or the home named in ~/.lmstudio-home-pointer), the\n"
    "                       downloadsFolder of its settings.json, and the older ~/.cache/lm-studio/models\n"
    "  ollama               $OLLAMA_MODELS, else ~/.ollama/models; then /usr/share/ollama/.ollama/models\n"
    "                       (the Linux service's); models named as `ollama list` names them, e.g. qwen3:0.6b\n"
    "  hf                   $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; a GGUF file\n"
    "                       is named org/repo:FILE-STEM, a safetensors model org/repo\n"
    "Names elsewhere are the file's stem (a split GGUF's without -00001-of-0000N). RUNNABLE says why not\n"
    "when ember cannot run a model: split GGUF files, safetensors folders, vision projectors (mmproj),\n"
    "an architecture or tokenizer ember does not support, a damaged file. Only headers are read; nothing\n"
    "is written, moved or deleted. docs/library.md has the details.";

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("models", "List the models on this machine (GGUF files, safetensors folders) and "
                                         "whether ember can run each");
  c->add_option("--models-dir", a->models_dirs, "Also look in DIR and below (repeatable; searched first)")
      ->type_name("DIR");
  c->add_flag("--no-stores", a->no_stores, "Skip the other tools' stores: only --models-dir and ember's data dir");
  c->add_flag("--json", a->json, "Machine-readable output: models, the locations searched, warnings");
  c->add_flag("--path", a->path, "Show each model's path (for Ollama: the blob file)");
  c->footer(kFooter);
  c->callback([a, set_exit] { set_exit(Run(*a)); });
}

EMBER_REGISTER_COMMAND("models", Setup);

}  // namespace
}  // namespace ember::cli
