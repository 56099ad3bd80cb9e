#include "template/template.h"

#include "template/builtins.h"
#include "template/json_value.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace ember::jinja {

StatusOr<Template> Template::Parse(const std::string& text) {
  EMBER_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(text));
  EMBER_ASSIGN_OR_RETURN(Body body, jinja::Parse(tokens));
  return Template(std::make_shared<const std::string>(text), std::make_shared<const Body>(std::move(body)));
}

StatusOr<std::string> Template::Render(const nlohmann::ordered_json& context, const EvalOptions& opts) const {
  if (!context.is_object()) return InvalidArgument("template context must be a JSON object");
  const Limits& limits = opts.limits;
  if (context.size() > limits.max_items) return TooManyItems(context.size(), limits).WithContext("template context");
  auto env = std::make_shared<Env>();
  AddGlobals(env.get());
  for (auto it = context.begin(); it != context.end(); ++it) {
    if (IsGlobalName(it.key())) return InvalidArgument("template context may not redefine '" + it.key() + "'");
    StatusOr<Value> v = FromJson(it.value(), limits);
    if (!v.ok()) return v.status().WithContext("template context '" + it.key() + "'");
    env->Set(it.key(), std::move(v).value());
  }
  // Declared after env so it is destroyed first: it empties the render's namespaces before the scopes go.
  Evaluator ev(opts);
  std::string out;
  EMBER_RETURN_IF_ERROR(ev.Run(*body_, env, &out));
  return out;
}

}  // namespace ember::jinja
