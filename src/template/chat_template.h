// Chat prompts from a model's chat template (GGUF `tokenizer.chat_template`, HF tokenizer_config.json).
//
// The context is what transformers passes to apply_chat_template, as JSON:
//   messages               [{role, content, tool_calls?, tool_call_id?, reasoning_content?...}]
//   tools                  optional, OpenAI shape [{type: "function", function: {name, description, parameters}}]
//   add_generation_prompt  bool
//   bos_token, eos_token   the special tokens' texts
//   enable_thinking        optional (Qwen3), and any other template kwargs
// Keys are passed through unchanged: a key the caller omits is undefined in the template, as with HF.
//
// Thread-safety: RenderChatTemplate is reentrant. To avoid re-parsing per request, parse once with
// jinja::Template::Parse and call Render (const, safe from many threads).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "template/template.h"
#include "util/status.h"

namespace ember {

using ChatTemplateOptions = jinja::EvalOptions;  // clock (env) for strftime_now, output/recursion limits

StatusOr<std::string> RenderChatTemplate(const std::string& tmpl, const nlohmann::ordered_json& context,
                                         const ChatTemplateOptions& opts = {});

}  // namespace ember
