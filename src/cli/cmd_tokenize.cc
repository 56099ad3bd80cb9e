// ember tokenize / ember detokenize: the tokenizer of a GGUF model (a vocab-only file is enough), with the
// same results as llama.cpp's llama_tokenize / llama_detokenize.
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "tokenizer/tokenizer.h"

namespace ember::cli {
namespace {

using nlohmann::json;

struct TokenizeArgs {
  std::string model, text, file;
  bool special = false, no_bos = false, as_json = false;
};

struct DetokenizeArgs {
  std::string model, ids;
  bool special = false, as_json = false;
};

int Fail(const std::string& message, bool as_json) {
  if (as_json) {
    std::cout << json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    std::cerr << "error: " << message << "\n";
  }
  return 1;
}

int RunTokenize(const TokenizeArgs& a) {
  std::string text = a.text;
  if (!a.file.empty()) {
    std::ifstream in(a.file, std::ios::binary);
    if (!in) return Fail("cannot open " + a.file, a.as_json);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto tok = LoadTokenizerFromGguf(a.model);
  if (!tok.ok()) return Fail(tok.status().ToString(), a.as_json);
  const std::vector<int32_t> ids = (*tok)->Encode(text, /*add_special=*/!a.no_bos, a.special);
  if (a.as_json) {
    std::cout << json{{"ids", ids}, {"n_tokens", ids.size()}}.dump() << "\n";
    return 0;
  }
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
  std::cout << "\n";
  return 0;
}

// "1,2,3" (spaces allowed) -> ids; InvalidArgument names the bad entry.
StatusOr<std::vector<int32_t>> ParseIds(const std::string& list, int32_t n_vocab) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    const std::string s = item.substr(b, e - b + 1);
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v >= n_vocab) {
      return InvalidArgument("bad token id '" + s + "' (vocabulary has " + std::to_string(n_vocab) + " tokens)");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

int RunDetokenize(const DetokenizeArgs& a) {
  auto tok = LoadTokenizerFromGguf(a.model);
  if (!tok.ok()) return Fail(tok.status().ToString(), a.as_json);
  auto ids = ParseIds(a.ids, (*tok)->n_vocab());
  if (!ids.ok()) return Fail(ids.status().ToString(), a.as_json);
  const std::string text = (*tok)->Detokenize(*ids, a.special);
  if (a.as_json) {
    std::cout << json{{"text", text}}.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    std::cout << text << "\n";
  }
  return 0;
}

void SetupTokenize(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<TokenizeArgs>();
  auto* c = app.add_subcommand("tokenize", "Text -> token ids with a model's tokenizer (as llama.cpp's llama_tokenize)");
  c->add_option("model", a->model, "GGUF model (vocab-only is enough)")->required();
  auto* text = c->add_option("--text", a->text, "Text to tokenize");
  auto* file = c->add_option("--file", a->file, "File whose bytes to tokenize");
  text->excludes(file);
  c->add_flag("--special", a->special, "Parse special-token texts such as <|im_start|> into their ids");
  c->add_flag("--no-bos", a->no_bos, "Do not add BOS/EOS even where the model's tokenizer adds them");
  c->add_flag("--json", a->as_json, "Print {\"ids\": [...], \"n_tokens\": N}");
  c->callback([a, set_exit, text, file] {
    if (text->count() == 0 && file->count() == 0) {
      set_exit(Fail("one of --text or --file is required", a->as_json));
      return;
    }
    set_exit(RunTokenize(*a));
  });
}

void SetupDetokenize(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<DetokenizeArgs>();
  auto* c = app.add_subcommand("detokenize", "Token ids -> text (as llama.cpp's llama_detokenize)");
  c->add_option("model", a->model, "GGUF model (vocab-only is enough)")->required();
  c->add_option("--ids", a->ids, "Comma-separated token ids, e.g. 128000,9906")->required();
  c->add_flag("--special", a->special, "Render control tokens (e.g. <|eot_id|>) as text");
  c->add_flag("--json", a->as_json, "Print {\"text\": \"...\"}");
  c->callback([a, set_exit] { set_exit(RunDetokenize(*a)); });
}

}  // namespace

EMBER_REGISTER_COMMAND("tokenize", SetupTokenize);
EMBER_REGISTER_COMMAND("detokenize", SetupDetokenize);

}  // namespace ember::cli
