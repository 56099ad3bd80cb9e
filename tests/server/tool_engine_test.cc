// Forced tool calls on the real engine with real templates, on tiny generated models whose GGUF carries
// them: meta-llama/Llama-3.1-8B-Instruct's tool template on a Llama 3 model, Qwen2.5-7B-Instruct's on a
// Qwen3 one (same vocabulary). Each template renders the tools in its own format; the forced grammar, in
// the syntax told from that template, makes every reply from random weights valid calls of offered tools
// whose arguments fit their schemas; and for Llama a call goes back into the template's history (which
// refuses more than one call per turn) for a second forced turn.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>


#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "grammar/grammar.h"
#include "server/engine_backend.h"
#include "server/tool_call_parser.h"
#include "server/tool_grammar.h"
#include "support/test_support.h"
#include "tiny_model.h"

namespace ember::server {
namespace {

using nlohmann::json;

// Copies the GGUF at `from` to `to` with tokenizer.chat_template replaced (the metadata types gen-model
// writes; anything else fails the test).
void WithTemplate(const std::string& from, const std::string& to, const std::string& tmpl) {
  auto src = GgufFile::Open(from);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  GgufWriter w;
  w.SetAlignment(static_cast<uint32_t>((*src)->alignment()));
  for (const auto& [key, v] : (*src)->metadata()) {
    switch (v.type) {
      case GgufType::kU8: w.SetU8(key, static_cast<uint8_t>(v.u)); break;
      case GgufType::kU32: w.SetU32(key, static_cast<uint32_t>(v.u)); break;
      case GgufType::kI32: w.SetI32(key, static_cast<int32_t>(v.i)); break;
      case GgufType::kU64: w.SetU64(key, v.u); break;
      case GgufType::kF32: w.SetF32(key, static_cast<float>(v.f)); break;
      case GgufType::kBool: w.SetBool(key, v.u != 0); break;
      case GgufType::kString: w.SetStr(key, key == "tokenizer.chat_template" ? tmpl : std::string(v.str)); break;
      case GgufType::kArray:
        if (v.elem_type == GgufType::kString) {
          w.SetStrArray(key, std::vector<std::string>(v.strings.begin(), v.strings.end()));
        } else if (v.elem_type == GgufType::kI32) {
          auto a = (*src)->IntArray(key);
          ASSERT_TRUE(a.ok());
          w.SetI32Array(key, std::vector<int32_t>(a->begin(), a->end()));
        } else if (v.elem_type == GgufType::kF32) {
          w.SetF32Array(key, *(*src)->F32Array(key));
        } else {
          FAIL() << key << ": array of " << GgufTypeName(v.elem_type);
        }
        break;
      default: FAIL() << key << ": " << GgufTypeName(v.type);
    }
  }
  for (const GgufTensorInfo& t : (*src)->tensors()) {
    ASSERT_TRUE(w.AddTensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                            std::vector<uint8_t>(t.data, t.data + t.n_bytes)).ok());
  }
  ASSERT_TRUE(w.WriteFile(to).ok());
}

const char* kWeatherSchema =
    R"({"type":"object","properties":{"city":{"type":"string","maxLength":24},"days":{"type":"integer",)"
    R"("minimum":1,"maximum":14}},"required":["city"],"additionalProperties":false})";

class ToolEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    GenTinyServerModel(dir_->file("plain.gguf"));
    WithTemplate(dir_->file("plain.gguf"), dir_->file("llama31.gguf"),
                 testing::ReadFileToString(testing::SourceDir() + "/tests/server/tool_templates/llama3_1_tools.jinja"));
    // Qwen2.5 shares Qwen3's vocabulary (<tool_call> included): a Qwen3 model with the Qwen2.5 template.
    const std::string cmd = testing::EmberBinary() + " gen-model --out " + dir_->file("qwen3.gguf") +
                            " --arch qwen3 --tokenizer qwen3 --n-layer 1 --n-embd 64 --n-head 2 --n-head-kv 2"
                            " --n-ff 128 --type f32 --seed 7 > /dev/null";
    ASSERT_EQ(testing::RunCommand(cmd).exit_code, 0);
    WithTemplate(dir_->file("qwen3.gguf"), dir_->file("qwen25.gguf"),
                 testing::ReadFileToString(testing::SourceDir() + "/tests/server/tool_templates/qwen2_5.jinja"));
  }
  static void TearDownTestSuite() { delete dir_; }
  static testing::TempDir* dir_;
};
testing::TempDir* ToolEngine::dir_ = nullptr;

TEST_F(ToolEngine, ForcedCallsHoldOverTwoTurns) {
  ServeOptions o;
  o.model_path = dir_->file("llama31.gguf");
  o.prompt_cache_bytes = "64M";
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  InferenceBackend& b = **backend;
  EXPECT_EQ(b.tool_call_syntax(), ToolCallSyntax::kLlama3Json);

  CompletionRequest req;
  req.tools = {{"get_weather", "Weather in a city", kWeatherSchema},
               {"get_time", "The time", R"({"type":"object","properties":{},"additionalProperties":false})"}};
  req.tool_choice = ToolChoice::kRequired;
  req.messages = {{"user", "What is the weather in Paris?", {}, "", ""}};
  ApiResult<std::string> gbnf = ToolCallGbnf(b.tool_call_syntax(), req);
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  auto g = grammar::ParseGbnf(gbnf.value());
  ASSERT_TRUE(g.ok()) << g.status().ToString();

  for (int turn = 0; turn < 2; ++turn) {
    ChatTemplateInput in{req.messages, req.tools, true, {}};
    auto text = b.ApplyChatTemplate(in);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    // The real 3.1 template: tools in the first user message, the JSON format asked for.
    EXPECT_NE(text->find("Given the following functions"), std::string::npos);
    EXPECT_NE(text->find("\"parameters\": dictionary of argument name"), std::string::npos);
    if (turn > 0) {  // the earlier call in the template's own rendering, and its error result
      EXPECT_NE(text->find("{\"name\": \"" + req.messages[1].tool_calls[0].name + "\", \"parameters\": "),
                std::string::npos) << *text;
      // (the template prints a string result with tojson: strings are iterable in Jinja)
      EXPECT_NE(text->find("ipython<|end_header_id|>\n\n\"Error: unknown city\""), std::string::npos) << *text;
    }
    auto prompt = b.TokenizeChat(in);
    ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();

    ToolCall last;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      GenerationRequest gen;
      gen.prompt = *prompt;
      gen.max_tokens = 300;
      gen.sampling.seed = seed;
      gen.grammar = *g;
      std::string reply;
      GenerationResult r;
      ASSERT_TRUE(b.Generate(gen, [&](const TokenEvent& ev) { reply += ev.piece; return true; }, &r).ok());
      EXPECT_EQ(r.finish_reason, FinishReason::kStop) << reply;
      EXPECT_TRUE(grammar::Matches(**g, reply)) << reply;
      ParsedReply parsed = ParseToolCalls(reply);
      ASSERT_EQ(parsed.tool_calls.size(), 1u) << reply;
      EXPECT_EQ(parsed.content, "");
      const ToolCall& c = parsed.tool_calls[0];
      const json args = json::parse(c.arguments_json);
      ASSERT_TRUE(args.is_object());
      if (c.name == "get_weather") {
        ASSERT_TRUE(args.contains("city")) << reply;
        EXPECT_TRUE(args["city"].is_string());
        if (args.contains("days")) {
          EXPECT_TRUE(args["days"].get<int>() >= 1 && args["days"].get<int>() <= 14) << reply;
        }
      } else {
        EXPECT_EQ(c.name, "get_time");
        EXPECT_TRUE(args.empty()) << reply;
      }
      last = c;
    }
    // The call and its (failed) result become history for the next forced turn.
    last.id = "call_" + std::to_string(turn);
    req.messages.push_back({"assistant", "", {last}, "", ""});
    req.messages.push_back({"tool", "Error: unknown city", {}, last.id, ""});
  }
}

// The same on the Qwen2.5 template: <tool_call> blocks, several per reply with parallel calls, one without.
TEST_F(ToolEngine, Qwen25TemplateBlocksHold) {
  ServeOptions o;
  o.model_path = dir_->file("qwen25.gguf");
  o.prompt_cache_bytes = "64M";
  auto backend = CreateEngineBackend(o);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  InferenceBackend& b = **backend;
  EXPECT_EQ(b.tool_call_syntax(), ToolCallSyntax::kHermes);
  CompletionRequest req;
  req.tools = {{"get_weather", "Weather in a city", kWeatherSchema},
               {"get_time", "The time", R"({"type":"object","properties":{},"additionalProperties":false})"}};
  req.tool_choice = ToolChoice::kRequired;
  req.messages = {{"user", "What is the weather in Paris?", {}, "", ""}};
  ChatTemplateInput in{req.messages, req.tools, true, {}};
  auto text = b.ApplyChatTemplate(in);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("You are Qwen, created by Alibaba Cloud."), std::string::npos);  // the Qwen2.5 template
  EXPECT_TRUE(text->ends_with("<|im_start|>assistant\n"));
  auto prompt = b.TokenizeChat(in);
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  for (bool parallel : {true, false}) {
    req.parallel_tool_calls = parallel;
    auto g = grammar::ParseGbnf(ToolCallGbnf(b.tool_call_syntax(), req).value());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      GenerationRequest gen;
      gen.prompt = *prompt;
      gen.max_tokens = 1500;
      gen.sampling.seed = seed;
      gen.grammar = *g;
      std::string reply;
      GenerationResult r;
      ASSERT_TRUE(b.Generate(gen, [&](const TokenEvent& ev) { reply += ev.piece; return true; }, &r).ok());
      EXPECT_EQ(r.finish_reason, FinishReason::kStop) << reply;
      EXPECT_TRUE(reply.starts_with("<tool_call>\n{\"name\": \"")) << reply;
      ParsedReply parsed = ParseToolCalls(reply);
      ASSERT_GE(parsed.tool_calls.size(), 1u) << reply;
      if (!parallel) {
        EXPECT_EQ(parsed.tool_calls.size(), 1u) << reply;
      }
      EXPECT_EQ(parsed.content, "") << reply;
      for (const ToolCall& c : parsed.tool_calls) {
        const json args = json::parse(c.arguments_json);
        if (c.name == "get_weather") {
          EXPECT_TRUE(args.contains("city") && args["city"].is_string()) << reply;
        } else {
          EXPECT_EQ(c.name, "get_time");
          EXPECT_TRUE(args.empty()) << reply;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::server
