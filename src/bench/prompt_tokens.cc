#include "bench/prompt_tokens.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "util/subprocess.h"

namespace ember::bench {

const std::string& BenchPromptText() {
  // Ordinary prose with numbers, punctuation and code-like words, so the ids exercise a realistic mix
  // of merges rather than one repeated token.
  static const std::string kText =
      "The lighthouse keeper wrote in her log every evening at nine. On the 14th of March the wind turned "
      "north-east, the barometer fell to 982 hPa, and three fishing boats came in early. She trimmed the "
      "wick, wound the clockwork that turned the lens, and counted the flashes: one every 7.5 seconds, as "
      "the charts promised. Later she read about tide tables, the way a harbour master computes high water "
      "from the moon's transit, and why a spring tide follows the new moon by a day or two. Before sleeping "
      "she copied a small program into her notebook: for (int i = 0; i < n; ++i) total += depth[i] * 0.3048; "
      "then printed the total in metres. ";
  return kText;
}

std::vector<int32_t> StretchTokens(const std::vector<int32_t>& ids, int n) {
  std::vector<int32_t> out;
  if (ids.empty() || n <= 0) return out;
  out.reserve(static_cast<size_t>(n));
  out.push_back(ids[0]);
  if (ids.size() == 1) {
    out.resize(static_cast<size_t>(n), ids[0]);
    return out;
  }
  for (size_t i = 1; out.size() < static_cast<size_t>(n); i = i + 1 < ids.size() ? i + 1 : 1) out.push_back(ids[i]);
  return out;
}

namespace {

// Writes the prompt to a temp file, runs `argv` + the file's path, and reads {"ids": [...]}.
StatusOr<std::vector<int32_t>> TokenizeVia(std::vector<std::string> argv, const std::string& model, int n) {
  const auto path = std::filesystem::temp_directory_path() / ("ember-bench-prompt-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(path);
    out << BenchPromptText();
    if (!out) return IoError("write " + path.string());
  }
  argv.push_back(path.string());
  auto r = RunProcess(argv, 120);
  std::filesystem::remove(path);
  if (!r.ok()) return r.status();
  nlohmann::json j = nlohmann::json::parse(r->out, nullptr, false);
  if (r->exit_code != 0 || j.is_discarded() || !j.is_object() || !j.contains("ids") || !j["ids"].is_array())
    return Internal(argv[0] + " tokenize " + model + " failed: " + r->out.substr(0, 300) + r->err.substr(0, 300));
  std::vector<int32_t> ids;
  for (const auto& v : j["ids"])
    if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
  if (ids.empty()) return Internal("tokenize returned no ids for " + model);
  return StretchTokens(ids, n);
}

}  // namespace

StatusOr<std::vector<int32_t>> TokenizeWithEmber(const std::string& ember_binary, const std::string& model, int n) {
  return TokenizeVia({ember_binary, "tokenize", model, "--json", "--file"}, model, n);
}

StatusOr<std::vector<int32_t>> TokenizeWithPeer(const std::string& node, const std::string& runner_mjs,
                                                const std::string& model, int n) {
  return TokenizeVia({node, runner_mjs, "tokenize", model, "--text-file"}, model, n);
}

}  // namespace ember::bench
