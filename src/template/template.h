// A parsed Jinja template (the subset chat templates use), rendered byte-for-byte like
// @huggingface/jinja with the chat-template settings (trim_blocks and lstrip_blocks on).
//
// Usage:
//   EMBER_ASSIGN_OR_RETURN(jinja::Template t, jinja::Template::Parse(text));   // once per model
//   EMBER_ASSIGN_OR_RETURN(std::string prompt, t.Render(context));            // per request
//
// Thread-safety: a Template is immutable after Parse; Render is const and may run concurrently from any
// number of threads (each render has its own scopes and output). Copies share the parsed tree.
//
// Errors: Parse fails with InvalidArgument ("template syntax error at line L, column C: ...") or
// Unimplemented for syntax ember does not support; Render fails with InvalidArgument for type errors
// and raise_exception() ("template error at line L, column C: raise_exception: ..."), Unimplemented
// for unknown filters/tests, ResourceExhausted when a limit of opts.limits is hit (the message names it:
// "max_steps exceeded: ..."; see template/limits.h). Nothing throws, and no template or context can
// hang, exhaust memory or overflow the stack.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "template/ast.h"
#include "template/evaluator.h"
#include "util/status.h"

namespace ember::jinja {

class Template {
 public:
  static StatusOr<Template> Parse(const std::string& text);

  // `context` must be a JSON object; each key becomes a template variable. Keys naming a builtin
  // (true, none, range, namespace, raise_exception, strftime_now...) are rejected.
  StatusOr<std::string> Render(const nlohmann::ordered_json& context, const EvalOptions& opts = {}) const;

  const std::string& source() const { return *source_; }

 private:
  Template(std::shared_ptr<const std::string> source, std::shared_ptr<const Body> body)
      : source_(std::move(source)), body_(std::move(body)) {}

  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const Body> body_;
};

}  // namespace ember::jinja
