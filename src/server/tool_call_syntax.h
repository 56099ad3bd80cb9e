// The tool-call syntax a model family was trained on, as its chat template shows it. The server needs it
// to force a call (tool_grammar.h); reading calls back (tool_call_parser.h) recognises both anyway.
//   kLlama3Json: the whole reply is one JSON object {"name": "f", "parameters": {...}} (the Llama 3.1 /
//                3.2 / 3.3 tool templates); one call per reply: those templates refuse several.
//   kHermes:     <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> blocks, one or more,
//                separated by "\n" (Qwen2.5, Qwen3, Hermes 2 Pro / 3).
#pragma once

#include <string_view>

namespace ember::server {

enum class ToolCallSyntax { kLlama3Json, kHermes };

// A template that mentions <tool_call> asks for Hermes blocks; any other (Llama 3.x, or a template that
// shows no tools at all) gets the bare JSON object, the plainest form a model can be held to.
inline ToolCallSyntax DetectToolCallSyntax(std::string_view chat_template) {
  return chat_template.find("<tool_call>") != std::string_view::npos ? ToolCallSyntax::kHermes
                                                                      : ToolCallSyntax::kLlama3Json;
}

}  // namespace ember::server
