// libFuzzer target for the Jinja parser and renderer: the input is a template, parsed with
// jinja::Template::Parse and, when it parses, rendered against two fixed chat contexts shaped like the
// server's: one with tools, a tool call and its answer, one of plain alternating turns. Both carry
// bos/eos, add_generation_prompt, a kwarg and the variables of tests/template/cases/snippets.json
// (s, n, xs, d, ...), so the snippet seeds render as they do in the tests. Any template must parse or
// fail, and render or fail, with a Status: no crash, no exception, no unbounded time or memory (the
// render limits are FuzzOptions below).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "template/template.h"
#include "util/env_wrapper.h"

namespace {

// strftime_now() renders one fixed instant, so a finding reproduces whenever it is replayed.
class FixedWallEnv final : public ember::EnvWrapper {
 public:
  FixedWallEnv() : EnvWrapper(ember::Env::Default()) {}
  int64_t WallMicros() override { return int64_t{1721989800} * 1'000'000; }
};

// Real chat templates are under 5 KB (tests/template/templates/); much larger inputs only make each run
// slower (parse time grows with size) without reaching new code.
constexpr size_t kMaxTemplateBytes = 8 << 10;

// The limits a render runs under. Tighter than the server's defaults so a run is not dominated by
// templates that are legitimately slow; a new limit (e.g. a step budget) is set here.
ember::jinja::EvalOptions FuzzOptions() {
  ember::jinja::EvalOptions opts;
  static FixedWallEnv fixed_time;
  opts.env = &fixed_time;
  // Small limits keep every run fast: the limits themselves are what is being fuzzed, not their size.
  opts.limits.max_output_bytes = 1 << 20;
  opts.limits.max_string_bytes = 1 << 20;
  opts.limits.max_items = 100'000;
  opts.limits.max_steps = 100'000;  // ~0.7 s of ASan-instrumented loop iterations at most
  return opts;
}

const nlohmann::ordered_json& ToolContext() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Paris? <|eot_id|>"},
      {"role": "assistant", "content": "",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"},
      {"role": "assistant", "content": "<think>\nwarm\n</think>\n\n21 °C and sunny."},
      {"role": "user", "content": "Thanks"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Forecast",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}}],
    "add_generation_prompt": true,
    "bos_token": "<|begin_of_text|>",
    "eos_token": "<|eot_id|>",
    "enable_thinking": false,
    "s": "Hello, World", "n": 7, "f": 2.5, "fi": 2.0, "t": true, "z": null, "e": "", "neg": -3,
    "xs": [3, 1, 2], "words": ["b", "A", "c"], "empty": [], "d": {"b": 1, "a": [1, 2], "c": {"x": null}},
    "uni": "Grüße 🎉 日本", "ws": " \t\n x y \n", "nested": [[1, [2, 3]], {"k": [true, null]}],
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "  hi  "},
             {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
             {"role": "user", "content": "<tool_response>r</tool_response>"}]
  })");
  return ctx;
}

// Strictly alternating turns without tools: templates such as Gemma 3's and Mistral's reject the tool
// conversation above (raise_exception) before reaching most of their code.
const nlohmann::ordered_json& PlainContext() {
  static const nlohmann::ordered_json ctx = [] {
    nlohmann::ordered_json c = ToolContext();
    c.erase("tools");
    c["messages"] = nlohmann::ordered_json::parse(R"([
      {"role": "system", "content": "Answer in French."},
      {"role": "user", "content": "  Hello  "},
      {"role": "assistant", "content": "Bonjour"},
      {"role": "user", "content": "Thanks"}])");
    return c;
  }();
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxTemplateBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto tmpl = ember::jinja::Template::Parse(text);
  if (!tmpl.ok()) return 0;
  for (const nlohmann::ordered_json* ctx : {&ToolContext(), &PlainContext()}) {
    auto out = tmpl->Render(*ctx, FuzzOptions());
    volatile size_t sink = out.ok() ? out->size() : out.status().message().size();
    (void)sink;
  }
  return 0;
}
