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
#include "template/limits.h"
#include "template/value.h"
#include "util/env.h"
#include "util/status.h"

namespace ember::jinja {

struct Env {
  std::shared_ptr<Env> parent;
  Object vars;  // hashed once large: a context with 100,000 keys costs no more per lookup than one with 5

  explicit Env(std::shared_ptr<Env> p = nullptr) : parent(std::move(p)) {}
  const Value* Lookup(std::string_view name) const;  // this scope, then parents
  void Set(const std::string& name, Value v);        // this scope only
};
using EnvPtr = std::shared_ptr<Env>;

struct EvalOptions {
  // Time source for strftime_now() (its WallMicros); null: ::ember::Env::Default(). Tests pass a
  // simulated clock (tests/support/sim_env.h) so renders are deterministic. (Spelled ::ember::Env: in
  // this namespace Env is the template's variable scope.)
  ::ember::Env* env = nullptr;
  Limits limits;                  // steps, sizes, depths (template/limits.h)
  RenderStats* stats = nullptr;   // if set, receives the steps the render used (also when it fails)
};

class Evaluator {
 public:
  explicit Evaluator(const EvalOptions& opts) : opts_(opts), budget_(opts.limits) {}
  // Empties every namespace the render made: a namespace holding itself (or holding a chain of other
  // namespaces) would otherwise leak, or be freed by a deep recursion.
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Renders a whole template: ExecBody plus "break outside a loop" checking.
  Status Run(const Body& body, const EnvPtr& env, std::string* out);
  // Renders `body` in `env`, appending to *out.
  Status ExecBody(const Body& body, const EnvPtr& env, std::string* out);
  // Evaluates an expression; one step, and the result is checked against the size and depth limits.
  StatusOr<Value> Eval(const Node& node, const EnvPtr& env);
  StatusOr<CallArgs> EvalArgs(const std::vector<Argument>& args, const EnvPtr& env);
  // Calls a function value with evaluated arguments; `at` locates errors.
  StatusOr<Value> CallValue(const Value& fn, CallArgs& args, const EnvPtr& callsite, const Node& at);

  const EvalOptions& options() const { return opts_; }
  const Limits& limits() const { return opts_.limits; }
  Budget& budget() { return budget_; }
  // A new namespace, registered so the render can empty it at the end (see ~Evaluator).
  Value NewNamespace(Object entries);

  // "line 3, column 7: <msg>" as InvalidArgument (or `code`).
  static Status ErrorAt(const Node& at, const std::string& msg, StatusCode code = StatusCode::kInvalidArgument);
  // Adds the node's position to an error that has none yet.
  static Status Locate(const Node& at, const Status& st);

 private:
  enum class Flow : uint8_t { kNormal, kBreak, kContinue };

  // Counts evaluator recursion (Exec and Eval frames) against limits.max_nesting.
  struct Nesting {
    explicit Nesting(Evaluator* ev) : ev(ev) { ++ev->nesting_; }
    ~Nesting() { --ev->nesting_; }
    Evaluator* ev;
  };
  [[gnu::cold, gnu::noinline]] Status TooDeeplyNested(const Node& at) const;
  // The error for a node refused before it ran: too deeply nested, or out of steps.
  [[gnu::cold, gnu::noinline]] Status RefuseNode(const Node& at);

  Status Exec(const Node& node, const EnvPtr& env, std::string* out);
  // Appends printed text to `out`: the render's output (max_output_bytes) or a captured block or macro
  // body (max_string_bytes); checked before growing, and charged.
  Status Append(const Node& at, std::string* out, const std::string& text);
  StatusOr<Value> EvalNode(const Node& node, const EnvPtr& env);
  bool WithinLimits(const Value& v) const;
  [[gnu::cold, gnu::noinline]] Status CheckValue(const Node& at, const Value& v) const;
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
  Budget budget_;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;    // calls in progress (max_call_depth)
  int nesting_ = 0;  // Exec/Eval frames in progress (max_nesting)
  const std::string* output_ = nullptr;  // the render's output buffer (the others are captures)
  std::vector<std::shared_ptr<Object>> namespaces_;
};

// Binary operators on two evaluated operands (everything except `and`/`or`, which short-circuit),
// charging their work to `budget`.
StatusOr<Value> ApplyBinary(const std::string& op, const Value& left, const Value& right, Budget& budget);

}  // namespace ember::jinja
