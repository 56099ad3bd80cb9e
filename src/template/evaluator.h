// Renders a parsed template body. One Evaluator per render call: it owns that render's scopes and
// output, and only reads the (immutable) AST, so any number of renders of one template can run at once.
//
// Scoping follows @huggingface/jinja: `set` writes the current scope; a for loop and a macro call each
// open a scope (a `set` inside a loop body is visible to later iterations of that loop, not after it);
// macros resolve free names in their caller's scope. Errors carry the template line and column of the
// node that failed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/value.h"
#include "util/status.h"

namespace ember::jinja {

struct Env {
  std::shared_ptr<Env> parent;
  std::vector<std::pair<std::string, Value>> vars;

  explicit Env(std::shared_ptr<Env> p = nullptr) : parent(std::move(p)) {}
  const Value* Lookup(std::string_view name) const;  // this scope, then parents
  void Set(const std::string& name, Value v);        // this scope only
};
using EnvPtr = std::shared_ptr<Env>;

struct EvalOptions {
  // Time source for strftime_now(); null means the system clock. Servers pass their Env's clock and tests
  // a fixed one, so renders are deterministic.
  std::function<std::chrono::system_clock::time_point()> clock;
  size_t max_output_bytes = 64u << 20;  // a runaway loop fails with ResourceExhausted, not OOM
  int max_call_depth = 256;             // recursive macros fail cleanly instead of overflowing the stack
};

class Evaluator {
 public:
  explicit Evaluator(const EvalOptions& opts) : opts_(opts) {}

  // Renders a whole template: ExecBody plus "break outside a loop" checking.
  Status Run(const Body& body, const EnvPtr& env, std::string* out);
  // Renders `body` in `env`, appending to *out.
  Status ExecBody(const Body& body, const EnvPtr& env, std::string* out);
  StatusOr<Value> Eval(const Node& node, const EnvPtr& env);
  StatusOr<CallArgs> EvalArgs(const std::vector<Argument>& args, const EnvPtr& env);
  // Calls a function value with evaluated arguments; `at` locates errors.
  StatusOr<Value> CallValue(const Value& fn, CallArgs& args, const EnvPtr& callsite, const Node& at);

  const EvalOptions& options() const { return opts_; }

  // "line 3, column 7: <msg>" as InvalidArgument (or `code`).
  static Status ErrorAt(const Node& at, const std::string& msg, StatusCode code = StatusCode::kInvalidArgument);
  // Adds the node's position to an error that has none yet.
  static Status Locate(const Node& at, const Status& st);

 private:
  enum class Flow : uint8_t { kNormal, kBreak, kContinue };

  Status Exec(const Node& node, const EnvPtr& env, std::string* out);
  Status ExecIf(const If& node, const EnvPtr& env, std::string* out);
  Status ExecFor(const For& node, const EnvPtr& env, std::string* out);
  Status ExecSet(const Set& node, const EnvPtr& env);
  Status ExecMacro(const Macro& node, const EnvPtr& env);
  Status ExecCallBlock(const CallBlock& node, const EnvPtr& env, std::string* out);
  Status ExecFilterBlock(const FilterBlock& node, const EnvPtr& env, std::string* out);
  Status BindArguments(const std::string& name, const std::vector<Argument>& params, bool uses_varargs,
                       bool uses_kwargs, CallArgs& args, const EnvPtr& scope, const Node& at);

  StatusOr<Value> EvalMember(const Member& node, const EnvPtr& env);
  StatusOr<Value> EvalSlice(const Value& object, const Slice& node, const EnvPtr& env);
  StatusOr<Value> EvalCall(const Call& node, const EnvPtr& env);
  StatusOr<Value> EvalUnary(const Unary& node, const EnvPtr& env);
  StatusOr<Value> EvalBinary(const Binary& node, const EnvPtr& env);
  StatusOr<Value> EvalTest(const Test& node, const EnvPtr& env);
  StatusOr<Value> EvalLiteralList(const ListLiteral& node, const EnvPtr& env);
  StatusOr<Value> EvalObjectLiteral(const ObjectLiteral& node, const EnvPtr& env);

  const EvalOptions& opts_;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;
};

// Binary operators on two evaluated operands (everything except `and`/`or`, which short-circuit).
StatusOr<Value> ApplyBinary(const std::string& op, const Value& left, const Value& right);

}  // namespace ember::jinja
