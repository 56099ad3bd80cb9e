// ember template: renders a model's chat template (GGUF `tokenizer.chat_template`) for a message list,
// exactly as the server will build the prompt. Useful to eyeball prompts and to diff against other engines.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "format/gguf.h"
#include "template/chat_template.h"

namespace ember::cli {
namespace {

using nlohmann::ordered_json;

struct Args {
  std::string model, messages, tools, template_file, enable_thinking;
  bool add_generation_prompt = false, as_json = false;
};

int Fail(const std::string& message, bool as_json) {
  if (as_json) {
    std::cout << ordered_json{{"error", message}}.dump(-1, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  } else {
    std::cerr << "ember template: " << message << "\n";
  }
  return 1;
}

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

StatusOr<ordered_json> ReadJson(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  ordered_json j = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(path + ": not valid JSON");
  return j;
}

// The template and the BOS/EOS token texts from the GGUF metadata (a missing BOS/EOS id leaves "").
struct ModelTemplate {
  std::string chat_template, bos, eos;
};

StatusOr<ModelTemplate> LoadFromGguf(const std::string& path) {
  EMBER_ASSIGN_OR_RETURN(auto file, GgufFile::Open(path));
  ModelTemplate m;
  EMBER_ASSIGN_OR_RETURN(m.chat_template, file->Str("tokenizer.chat_template"));
  EMBER_ASSIGN_OR_RETURN(auto tokens, file->StrArray("tokenizer.ggml.tokens"));
  const auto token_text = [&](const char* key, std::string* out) -> Status {
    EMBER_ASSIGN_OR_RETURN(int64_t id, file->IntOr(key, -1));
    if (id < 0) return Status::Ok();
    if (static_cast<uint64_t>(id) >= tokens.size()) {
      return Corrupt(path + ": " + key + " " + std::to_string(id) + " is outside the vocabulary");
    }
    *out = std::string(tokens[static_cast<size_t>(id)]);
    return Status::Ok();
  };
  EMBER_RETURN_IF_ERROR(token_text("tokenizer.ggml.bos_token_id", &m.bos));
  EMBER_RETURN_IF_ERROR(token_text("tokenizer.ggml.eos_token_id", &m.eos));
  return m;
}

StatusOr<std::string> Render(const Args& a) {
  EMBER_ASSIGN_OR_RETURN(ModelTemplate m, LoadFromGguf(a.model));
  if (!a.template_file.empty()) {
    EMBER_ASSIGN_OR_RETURN(m.chat_template, ReadText(a.template_file));
  }
  EMBER_ASSIGN_OR_RETURN(ordered_json messages, ReadJson(a.messages));
  // Accept a bare message list or an OpenAI request body with "messages".
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) return InvalidArgument(a.messages + ": expected a JSON array of messages");
  ordered_json context = {{"messages", messages}};
  if (!a.tools.empty()) {
    EMBER_ASSIGN_OR_RETURN(ordered_json tools, ReadJson(a.tools));
    if (tools.is_object() && tools.contains("tools")) tools = tools["tools"];
    if (!tools.is_array()) return InvalidArgument(a.tools + ": expected a JSON array of tools");
    context["tools"] = tools;
  }
  context["add_generation_prompt"] = a.add_generation_prompt;
  context["bos_token"] = m.bos;
  context["eos_token"] = m.eos;
  if (!a.enable_thinking.empty()) context["enable_thinking"] = a.enable_thinking == "true";
  ChatTemplateOptions opts;
  opts.env = Env::Default();  // the CLI is the edge: real time is wanted
  return RenderChatTemplate(m.chat_template, context, opts);
}

void Setup(CLI::App& app, std::function<void(int)> set_exit) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("template", "Render a model's chat template for a list of messages");
  c->add_option("model", a->model, "GGUF model whose tokenizer.chat_template to use")->required();
  c->add_option("--messages", a->messages, "JSON file: [{\"role\": ..., \"content\": ...}, ...]")->required();
  c->add_option("--tools", a->tools, "JSON file: OpenAI tool definitions [{\"type\": \"function\", ...}]");
  c->add_flag("--add-generation-prompt", a->add_generation_prompt, "End with the assistant turn header");
  c->add_option("--enable-thinking", a->enable_thinking, "Pass enable_thinking to the template (Qwen3)")
      ->check(CLI::IsMember({"true", "false"}));
  c->add_option("--template-file", a->template_file, "Use this Jinja file instead of the model's template");
  c->add_flag("--json", a->as_json, "Print {\"prompt\": \"...\"}");
  c->callback([a, set_exit] {
    auto prompt = Render(*a);
    if (!prompt.ok()) {
      set_exit(Fail(prompt.status().ToString(), a->as_json));
      return;
    }
    if (a->as_json) {
      std::cout << ordered_json{{"prompt", *prompt}}.dump(-1, ' ', false, ordered_json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << *prompt;
      std::cout.flush();
    }
    set_exit(0);
  });
}

}  // namespace

EMBER_REGISTER_COMMAND("template", Setup);

}  // namespace ember::cli
