// The forced-call grammar against the real chat templates of the families it serves: the Llama 3.1 tool
// template (meta-llama/Llama-3.1-8B-Instruct), Qwen2.5 (Qwen2.5-7B-Instruct) and Qwen3 (Qwen3-0.6B).
// Each template's own rendering of an assistant tool call (what the model sees in its history and was
// trained to write) must be a sentence of the grammar for the syntax detected from that template, and the
// generation prompt must end where such a call begins.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "server/tool_grammar.h"
#include "support/test_support.h"
#include "template/chat_template.h"

namespace ember::server {
namespace {

using nlohmann::ordered_json;

struct Family {
  const char* file;  // under the source tree
  ToolCallSyntax syntax;
  const char* call_begins;  // where the template's rendering of a call starts
  const char* turn_end;     // what ends the assistant turn after it
  const char* prompt_end;   // the generation prompt's last bytes
};

const Family kFamilies[] = {
    {"tests/server/tool_templates/llama3_1_tools.jinja", ToolCallSyntax::kLlama3Json, "{\"name\"", "<|eot_id|>",
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"tests/server/tool_templates/qwen2_5.jinja", ToolCallSyntax::kHermes, "<tool_call>", "<|im_end|>",
     "<|im_start|>assistant\n"},
    {"tests/template/templates/qwen3.jinja", ToolCallSyntax::kHermes, "<tool_call>", "<|im_end|>",
     "<|im_start|>assistant\n"},
};

std::string Template(const Family& f) { return testing::ReadFileToString(testing::SourceDir() + "/" + f.file); }

ordered_json Tools() {
  return ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time", "parameters": {}}}])");
}

CompletionRequest Request(ToolChoice choice, bool parallel) {
  CompletionRequest req;
  for (const auto& t : Tools()) {
    req.tools.push_back({t["function"]["name"].get<std::string>(), t["function"]["description"].get<std::string>(),
                         t["function"]["parameters"].dump()});
  }
  req.tool_choice = choice;
  req.parallel_tool_calls = parallel;
  return req;
}

std::string Render(const std::string& tmpl, const ordered_json& messages, bool generation_prompt) {
  ordered_json ctx = {{"messages", messages}, {"tools", Tools()}, {"add_generation_prompt", generation_prompt},
                      {"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}};
  StatusOr<std::string> out = RenderChatTemplate(tmpl, ctx);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : "";
}

// The template's text of the assistant turn holding `calls`, from where the first call starts to the turn's
// end.
std::string RenderedCalls(const Family& f, const ordered_json& calls) {
  const ordered_json messages = {{{"role", "user"}, {"content", "What is the weather in Paris?"}},
                                 {{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}}};
  const std::string text = Render(Template(f), messages, false);
  const size_t turn = text.rfind(f.prompt_end);  // the assistant turn's header
  if (turn == std::string::npos) return "";
  // Qwen3 puts an empty <think> block before the calls of the latest turn; a forced call starts at once.
  const size_t begin = text.find(f.call_begins, turn + std::string_view(f.prompt_end).size());
  const size_t end = text.rfind(f.turn_end);
  if (begin == std::string::npos || end == std::string::npos || end < begin) return "";
  return text.substr(begin, end - begin);
}

ordered_json Call(const char* name, ordered_json args) {
  return {{"id", "c1"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", std::move(args)}}}};
}

TEST(ToolTemplates, SyntaxIsDetectedFromTheTemplate) {
  for (const Family& f : kFamilies) EXPECT_EQ(DetectToolCallSyntax(Template(f)), f.syntax) << f.file;
  // A template that shows no tools (gen-model's plain Llama 3 one) gets the bare JSON call.
  EXPECT_EQ(DetectToolCallSyntax("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallSyntax::kLlama3Json);
}

TEST(ToolTemplates, TemplatesOfferTheToolsInTheSyntaxTheGrammarHolds) {
  const ordered_json user = {{{"role", "user"}, {"content", "What is the weather in Paris?"}}};
  for (const Family& f : kFamilies) {
    const std::string prompt = Render(Template(f), user, true);
    EXPECT_NE(prompt.find("get_weather"), std::string::npos) << f.file;
    EXPECT_TRUE(prompt.ends_with(f.prompt_end)) << f.file << ": " << prompt;
    if (f.syntax == ToolCallSyntax::kLlama3Json) {
      EXPECT_NE(prompt.find("\"parameters\": dictionary of argument name"), std::string::npos) << prompt;
    } else {
      EXPECT_NE(prompt.find("<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"),
                std::string::npos) << prompt;
    }
  }
}

TEST(ToolTemplates, TheTemplatesOwnCallsAreSentences) {
  for (const Family& f : kFamilies) {
    for (bool parallel : {true, false}) {
      StatusOr<std::shared_ptr<const grammar::Grammar>> g = grammar::ParseGbnf(
          ToolCallGbnf(f.syntax, Request(ToolChoice::kRequired, parallel)).value());
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      const std::string one = RenderedCalls(f, ordered_json::array({Call("get_weather", {{"city", "Paris"}, {"days", 3}})}));
      ASSERT_FALSE(one.empty()) << f.file;
      EXPECT_TRUE(grammar::Matches(**g, one)) << f.file << ": [" << one << "]";
      const std::string none = RenderedCalls(f, ordered_json::array({Call("get_time", ordered_json::object())}));
      EXPECT_TRUE(grammar::Matches(**g, none)) << f.file << ": [" << none << "]";
      const std::string missing = RenderedCalls(f, ordered_json::array({Call("get_weather", {{"days", 3}})}));
      EXPECT_FALSE(grammar::Matches(**g, missing)) << f.file << ": [" << missing << "]";
      if (f.syntax != ToolCallSyntax::kHermes) continue;  // Llama 3.1's template refuses two calls
      const std::string two = RenderedCalls(
          f, ordered_json::array({Call("get_weather", {{"city", "Paris"}}), Call("get_time", ordered_json::object())}));
      EXPECT_EQ(grammar::Matches(**g, two), parallel) << f.file << ": [" << two << "]";
    }
  }
}

TEST(ToolTemplates, ErrorResultsReachTheTemplateMarked) {
  // ParseAnthropicRequest turns an is_error tool_result into a tool message starting "Error: "; every
  // template shows that text to the model.
  nlohmann::json body = nlohmann::json::parse(R"({"max_tokens": 8, "messages": [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "X"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                                  "content": "unknown city"}]}]})");
  ApiResult<CompletionRequest> req = ParseAnthropicRequest(body, true);
  ASSERT_TRUE(req.ok()) << req.error().message;
  ordered_json messages = ordered_json::array();
  for (const ChatMessage& m : req.value().messages) {
    ordered_json j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      j["tool_calls"] =
          ordered_json::array({Call(m.tool_calls[0].name.c_str(), ordered_json::parse(m.tool_calls[0].arguments_json))});
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(j));
  }
  for (const Family& f : kFamilies) {
    EXPECT_NE(Render(Template(f), messages, true).find("Error: unknown city"), std::string::npos) << f.file;
  }
}

}  // namespace
}  // namespace ember::server
