#include "template/evaluator.h"

#include <algorithm>
#include <unordered_set>

#include "template/filters.h"
#include "template/methods.h"

namespace ember::jinja {

const Value* Env::Lookup(std::string_view name) const {
  for (const Env* e = this; e != nullptr; e = e->parent.get()) {
    if (const Value* v = e->vars.Find(name)) return v;
  }
  return nullptr;
}

void Env::Set(const std::string& name, Value v) { vars.Set(name, std::move(v)); }

Evaluator::~Evaluator() {
  for (const auto& ns : namespaces_) ns->Clear();
}

Value Evaluator::NewNamespace(Object entries) {
  Value v = Value::MakeNamespace(std::move(entries));
  namespaces_.push_back(v.namespace_storage());
  return v;
}

Status Evaluator::ErrorAt(const Node& at, const std::string& msg, StatusCode code) {
  return Status(code, "template error at line " + std::to_string(at.line) + ", column " +
                          std::to_string(at.column) + ": " + msg);
}

Status Evaluator::Locate(const Node& at, const Status& st) {
  if (st.ok() || st.message().rfind("template ", 0) == 0) return st;
  return ErrorAt(at, st.message(), st.code());
}

Status Evaluator::TooDeeplyNested(const Node& at) const {
  return ErrorAt(at, "max_nesting exceeded: evaluation nested deeper than " + std::to_string(limits().max_nesting) +
                         " levels (deep expressions inside recursive macros?)",
                 StatusCode::kResourceExhausted);
}

Status Evaluator::Append(const Node& at, std::string* out, const std::string& text) {
  const bool output = out == output_;
  const size_t cap = output ? limits().max_output_bytes : limits().max_string_bytes;
  if (text.size() > cap - std::min(cap, out->size())) {
    if (!output) return Locate(at, StringTooLong(out->size() + text.size(), limits()));
    return ErrorAt(at, "max_output_bytes exceeded: the rendered output is longer than " + std::to_string(cap) + " bytes",
                   StatusCode::kResourceExhausted);
  }
  Status st = budget_.ChargeBytes(text.size());
  if (!st.ok()) return Locate(at, st);
  out->append(text);
  return Status::Ok();
}

Status Evaluator::RefuseNode(const Node& at) {
  if (nesting_ >= limits().max_nesting) return TooDeeplyNested(at);
  return Locate(at, budget_.Charge(1));
}

bool Evaluator::WithinLimits(const Value& v) const {
  const Limits& l = limits();
  if (v.depth() > l.max_depth) return false;
  if (v.is_string()) return v.as_string().size() <= l.max_string_bytes;
  if (v.is_array()) return v.as_array().size() <= l.max_items;
  if (v.is_object()) return v.as_object().size() <= l.max_items;
  return true;
}

Status Evaluator::CheckValue(const Node& at, const Value& v) const {
  Status st;
  if (v.is_string()) {
    st = budget_.CheckString(v.as_string().size());
  } else if (v.is_array()) {
    st = budget_.CheckItems(v.as_array().size());
  } else if (v.is_object()) {
    st = budget_.CheckItems(v.as_object().size());
  }
  if (st.ok()) st = budget_.CheckDepth(v.depth());
  return st.ok() ? st : Locate(at, st);
}

// --- statements ---

Status Evaluator::Run(const Body& body, const EnvPtr& env, std::string* out) {
  output_ = out;
  const Status st = ExecBody(body, env, out);
  if (opts_.stats != nullptr) opts_.stats->steps = budget_.used();
  EMBER_RETURN_IF_ERROR(st);
  if (flow_ != Flow::kNormal) return InvalidArgument("template error: 'break'/'continue' outside a loop");
  return Status::Ok();
}

Status Evaluator::ExecBody(const Body& body, const EnvPtr& env, std::string* out) {
  for (const NodePtr& node : body) {
    EMBER_RETURN_IF_ERROR(Exec(*node, env, out));
    if (flow_ != Flow::kNormal) return Status::Ok();  // break/continue unwinds to the loop
  }
  return Status::Ok();
}

Status Evaluator::Exec(const Node& node, const EnvPtr& env, std::string* out) {
  if (nesting_ >= limits().max_nesting || !budget_.TryCharge(1)) return RefuseNode(node);
  Nesting nesting(this);
  switch (node.kind) {
    case NodeKind::kIf: return ExecIf(static_cast<const If&>(node), env, out);
    case NodeKind::kFor: return ExecFor(static_cast<const For&>(node), env, out);
    case NodeKind::kSet: return ExecSet(static_cast<const Set&>(node), env);
    case NodeKind::kMacro: return ExecMacro(static_cast<const Macro&>(node), env);
    case NodeKind::kCallBlock: return ExecCallBlock(static_cast<const CallBlock&>(node), env, out);
    case NodeKind::kFilterBlock: return ExecFilterBlock(static_cast<const FilterBlock&>(node), env, out);
    case NodeKind::kBreak: flow_ = Flow::kBreak; return Status::Ok();
    case NodeKind::kContinue: flow_ = Flow::kContinue; return Status::Ok();
    default: break;
  }
  // An expression (template text included): print it unless none/undefined.
  EMBER_ASSIGN_OR_RETURN(Value v, Eval(node, env));
  if (v.is_none() || v.is_undefined()) return Status::Ok();
  auto s = ToOutputString(v, limits());
  if (!s.ok()) return Locate(node, s.status());
  return Append(node, out, *s);
}

Status Evaluator::ExecIf(const If& node, const EnvPtr& env, std::string* out) {
  for (const If::Branch& branch : node.branches) {
    EMBER_ASSIGN_OR_RETURN(Value cond, Eval(*branch.condition, env));
    if (cond.Truthy()) return ExecBody(branch.body, env, out);
  }
  return ExecBody(node.orelse, env, out);
}

namespace {

Status BindLoopTargets(const For& node, const Value& item, Env* scope) {
  if (!node.unpack) {
    scope->Set(node.targets[0], item);
    return Status::Ok();
  }
  if (!item.is_array() || item.is_tuple()) {
    return Evaluator::ErrorAt(node, std::string("Cannot unpack non-iterable type: ") + item.TypeName());
  }
  if (item.as_array().size() != node.targets.size()) {
    return Evaluator::ErrorAt(node, node.targets.size() > item.as_array().size() ? "Too few items to unpack"
                                                                                   : "Too many items to unpack");
  }
  for (size_t i = 0; i < node.targets.size(); ++i) scope->Set(node.targets[i], item.as_array()[i]);
  return Status::Ok();
}

Value LoopObject(const Array& items, size_t i) {
  const int64_t n = static_cast<int64_t>(items.size()), k = static_cast<int64_t>(i);
  Object loop;
  loop.Set("index", Value::Int(k + 1));
  loop.Set("index0", Value::Int(k));
  loop.Set("revindex", Value::Int(n - k));
  loop.Set("revindex0", Value::Int(n - k - 1));
  loop.Set("first", Value::Bool(k == 0));
  loop.Set("last", Value::Bool(k == n - 1));
  loop.Set("length", Value::Int(n));
  loop.Set("previtem", k > 0 ? items[i - 1] : Value());
  loop.Set("nextitem", k < n - 1 ? items[i + 1] : Value());
  return Value::MakeObject(std::move(loop));
}

}  // namespace

Status Evaluator::ExecFor(const For& node, const EnvPtr& env, std::string* out) {
  auto scope = std::make_shared<Env>(env);
  EMBER_ASSIGN_OR_RETURN(Value iterable, Eval(*node.iterable, scope));
  if (iterable.is_object()) {
    Array keys;
    keys.reserve(iterable.as_object().size());
    for (const auto& [k, v] : iterable.as_object().items()) keys.push_back(Value::String(k));
    iterable = Value::MakeArray(std::move(keys));
  }
  if (!iterable.is_array()) {
    return ErrorAt(node, std::string("Expected iterable or object type in for loop: got ") + iterable.TypeName());
  }
  // The `if` filter runs first over every item, so loop.length/last count only the kept items.
  Array items;
  items.reserve(iterable.as_array().size());
  for (const Value& item : iterable.as_array()) {
    if (Status st = budget_.Charge(1); !st.ok()) return Locate(node, st);
    if (node.condition) {
      auto probe = std::make_shared<Env>(scope);
      EMBER_RETURN_IF_ERROR(BindLoopTargets(node, item, probe.get()));
      EMBER_ASSIGN_OR_RETURN(Value keep, Eval(*node.condition, probe));
      if (!keep.Truthy()) continue;
    } else if (node.unpack) {
      EMBER_RETURN_IF_ERROR(BindLoopTargets(node, item, scope.get()));  // validate shapes up front
    }
    items.push_back(item);
  }
  bool iterated = false;
  for (size_t i = 0; i < items.size(); ++i) {
    if (Status st = budget_.Charge(1); !st.ok()) return Locate(node, st);
    scope->Set("loop", LoopObject(items, i));
    EMBER_RETURN_IF_ERROR(BindLoopTargets(node, items[i], scope.get()));
    const size_t mark = out->size();
    EMBER_RETURN_IF_ERROR(ExecBody(node.body, scope, out));
    if (flow_ != Flow::kNormal) {
      // The reference drops what an iteration printed before its break/continue.
      out->resize(mark);
      const bool stop = flow_ == Flow::kBreak;
      flow_ = Flow::kNormal;
      if (stop) break;
      continue;
    }
    iterated = true;
  }
  if (!iterated) return ExecBody(node.orelse, scope, out);
  return Status::Ok();
}

Status Evaluator::ExecSet(const Set& node, const EnvPtr& env) {
  Value value;
  if (node.value) {
    EMBER_ASSIGN_OR_RETURN(value, Eval(*node.value, env));
  } else {
    std::string captured;
    EMBER_RETURN_IF_ERROR(ExecBody(node.body, env, &captured));
    if (flow_ != Flow::kNormal) return Status::Ok();
    value = Value::String(std::move(captured));
  }
  const Node& target = *node.target;
  if (target.kind == NodeKind::kIdentifier) {
    env->Set(static_cast<const Identifier&>(target).name, std::move(value));
    return Status::Ok();
  }
  if (target.kind == NodeKind::kTupleLiteral) {
    const auto& names = static_cast<const ListLiteral&>(target).items;
    if (!value.is_array()) return ErrorAt(node, std::string("Cannot unpack non-iterable type in set: ") + value.TypeName());
    if (value.as_array().size() != names.size()) {
      return ErrorAt(node, names.size() > value.as_array().size() ? "Too few items to unpack in set"
                                                                  : "Too many items to unpack in set");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i]->kind != NodeKind::kIdentifier) return ErrorAt(node, "Cannot unpack to non-identifier in set");
      env->Set(static_cast<const Identifier&>(*names[i]).name, value.as_array()[i]);
    }
    return Status::Ok();
  }
  if (target.kind == NodeKind::kMember) {
    const auto& member = static_cast<const Member&>(target);
    EMBER_ASSIGN_OR_RETURN(Value object, Eval(*member.object, env));
    if (!object.is_namespace()) return ErrorAt(node, "cannot assign attribute on non-namespace object");
    if (member.computed || member.property->kind != NodeKind::kIdentifier) {
      return ErrorAt(node, "Cannot assign to member with non-identifier property");
    }
    object.mutable_namespace().Set(static_cast<const Identifier&>(*member.property).name, std::move(value));
    return Status::Ok();
  }
  return ErrorAt(node, "invalid target for set");
}

// Binds call arguments to parameters: positionals by position, then keywords by name, then defaults
// (evaluated in the new scope, after every name is bound); extra arguments need varargs/kwargs.
Status Evaluator::BindArguments(const std::string& name, const std::vector<Argument>& params, bool uses_varargs,
                                bool uses_kwargs, CallArgs& args, const EnvPtr& scope, const Node& at) {
  std::vector<std::pair<std::string, Value>> keywords = args.keywords;
  std::vector<const Argument*> pending_defaults;
  for (size_t i = 0; i < params.size(); ++i) {
    const Argument& p = params[i];
    Value v;
    bool given = i < args.positional.size();
    if (given) v = args.positional[i];
    for (auto it = keywords.begin(); !given && it != keywords.end(); ++it) {
      if (it->first == p.name) {
        v = it->second;
        keywords.erase(it);
        given = true;
      }
    }
    if (!given && p.value) pending_defaults.push_back(&p);
    scope->Set(p.name, v);
  }
  if (uses_kwargs) {
    Object kw;
    for (auto& [k, v] : keywords) kw.Set(k, v);  // keywords are unique (EvalArgs checks)
    scope->Set("kwargs", Value::MakeObject(std::move(kw)));
  } else if (!keywords.empty()) {
    return ErrorAt(at, "macro " + name + " takes no keyword argument '" + keywords[0].first + "'");
  }
  if (uses_varargs) {
    Array rest;
    for (size_t i = params.size(); i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    scope->Set("varargs", Value::MakeArray(std::move(rest)));
  } else if (args.positional.size() > params.size()) {
    return ErrorAt(at, "macro " + name + " takes not more than " + std::to_string(params.size()) + " argument(s)");
  }
  for (const Argument* p : pending_defaults) {
    EMBER_ASSIGN_OR_RETURN(Value v, Eval(*p->value, scope));
    scope->Set(p->name, std::move(v));
  }
  return Status::Ok();
}

Status Evaluator::ExecMacro(const Macro& node, const EnvPtr& env) {
  Function fn;
  fn.name = node.name;
  const Macro* m = &node;  // the AST outlives every render of it
  fn.call = [m](Evaluator& ev, CallArgs& args, const EnvPtr& callsite) -> StatusOr<Value> {
    auto scope = std::make_shared<Env>(callsite);
    EMBER_RETURN_IF_ERROR(ev.BindArguments("'" + m->name + "'", m->params, m->uses_varargs, m->uses_kwargs, args,
                                           scope, *m));
    std::string out;
    EMBER_RETURN_IF_ERROR(ev.ExecBody(m->body, scope, &out));
    if (ev.flow_ != Flow::kNormal) return ErrorAt(*m, "'break'/'continue' outside a loop in macro body");
    return Value::String(std::move(out));
  };
  env->Set(node.name, Value::MakeFunction(std::move(fn)));
  return Status::Ok();
}

Status Evaluator::ExecCallBlock(const CallBlock& node, const EnvPtr& env, std::string* out) {
  Function caller;
  caller.name = "caller";
  const CallBlock* cb = &node;
  caller.call = [cb, env](Evaluator& ev, CallArgs& args, const EnvPtr&) -> StatusOr<Value> {
    auto scope = std::make_shared<Env>(env);
    EMBER_RETURN_IF_ERROR(ev.BindArguments("None", cb->caller_params, cb->uses_varargs, cb->uses_kwargs, args,
                                           scope, *cb));
    std::string text;
    EMBER_RETURN_IF_ERROR(ev.ExecBody(cb->body, scope, &text));
    if (ev.flow_ != Flow::kNormal) return ErrorAt(*cb, "'break'/'continue' outside a loop in call block");
    return Value::String(std::move(text));
  };
  EMBER_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(node.call->args, env));
  EMBER_ASSIGN_OR_RETURN(Value fn, Eval(*node.call->callee, env));
  auto call_env = std::make_shared<Env>(env);
  call_env->Set("caller", Value::MakeFunction(std::move(caller)));
  EMBER_ASSIGN_OR_RETURN(Value result, CallValue(fn, args, call_env, node));
  if (result.is_none() || result.is_undefined()) return Status::Ok();
  auto s = ToOutputString(result, limits());
  if (!s.ok()) return Locate(node, s.status());
  return Append(node, out, *s);
}

Status Evaluator::ExecFilterBlock(const FilterBlock& node, const EnvPtr& env, std::string* out) {
  std::string body;
  EMBER_RETURN_IF_ERROR(ExecBody(node.body, env, &body));
  if (flow_ != Flow::kNormal) return Status::Ok();
  auto result = ApplyFilter(*this, *node.filter, Value::String(std::move(body)), env);
  if (!result.ok()) return Locate(*node.filter, result.status());
  if (result->is_none() || result->is_undefined()) return Status::Ok();
  auto s = ToOutputString(*result, limits());
  if (!s.ok()) return Locate(node, s.status());
  return Append(node, out, *s);
}

// --- expressions ---

// Every expression passes here, once per nesting level, so it keeps a small frame: the result is
// returned in place and the error paths are out of line.
StatusOr<Value> Evaluator::Eval(const Node& node, const EnvPtr& env) {
  if (nesting_ >= limits().max_nesting || !budget_.TryCharge(1)) return RefuseNode(node);
  ++nesting_;
  StatusOr<Value> r = EvalNode(node, env);
  --nesting_;
  if (r.ok() && !WithinLimits(*r)) return CheckValue(node, *r);
  return r;
}

StatusOr<Value> Evaluator::EvalNode(const Node& node, const EnvPtr& env) {
  switch (node.kind) {
    case NodeKind::kLiteral: return static_cast<const Literal&>(node).value;
    case NodeKind::kIdentifier: {
      const Value* v = env->Lookup(static_cast<const Identifier&>(node).name);
      return v ? *v : Value();
    }
    case NodeKind::kArrayLiteral: case NodeKind::kTupleLiteral:
      return EvalLiteralList(static_cast<const ListLiteral&>(node), env);
    case NodeKind::kObjectLiteral: return EvalObjectLiteral(static_cast<const ObjectLiteral&>(node), env);
    case NodeKind::kMember: return EvalMember(static_cast<const Member&>(node), env);
    case NodeKind::kCall: return EvalCall(static_cast<const Call&>(node), env);
    case NodeKind::kUnary: return EvalUnary(static_cast<const Unary&>(node), env);
    case NodeKind::kBinary: return EvalBinary(static_cast<const Binary&>(node), env);
    case NodeKind::kTest: return EvalTest(static_cast<const Test&>(node), env);
    case NodeKind::kFilter: {
      const auto& f = static_cast<const Filter&>(node);
      EMBER_ASSIGN_OR_RETURN(Value operand, Eval(*f.operand, env));
      auto r = ApplyFilter(*this, f, operand, env);
      if (!r.ok()) return Locate(node, r.status());
      return r;
    }
    case NodeKind::kSelect: {
      const auto& s = static_cast<const Select&>(node);
      EMBER_ASSIGN_OR_RETURN(Value cond, Eval(*s.condition, env));
      if (!cond.Truthy()) return Value();
      return Eval(*s.value, env);
    }
    case NodeKind::kTernary: {
      const auto& t = static_cast<const Ternary&>(node);
      EMBER_ASSIGN_OR_RETURN(Value cond, Eval(*t.condition, env));
      return Eval(cond.Truthy() ? *t.if_true : *t.if_false, env);
    }
    case NodeKind::kSlice: return ErrorAt(node, "a slice is only valid inside '[]'");
    default: return ErrorAt(node, "a statement cannot be used as a value");
  }
}

StatusOr<Value> Evaluator::EvalLiteralList(const ListLiteral& node, const EnvPtr& env) {
  Array items;
  items.reserve(node.items.size());
  for (const NodePtr& item : node.items) {
    EMBER_ASSIGN_OR_RETURN(Value v, Eval(*item, env));
    items.push_back(std::move(v));
  }
  return Value::MakeArray(std::move(items), node.kind == NodeKind::kTupleLiteral);
}

StatusOr<Value> Evaluator::EvalObjectLiteral(const ObjectLiteral& node, const EnvPtr& env) {
  Object obj;
  for (const auto& [key_node, value_node] : node.entries) {
    EMBER_ASSIGN_OR_RETURN(Value key, Eval(*key_node, env));
    if (!key.is_string()) return ErrorAt(*key_node, std::string("Object keys must be strings: got ") + key.TypeName());
    EMBER_ASSIGN_OR_RETURN(Value v, Eval(*value_node, env));
    obj.Set(key.as_string(), std::move(v));
  }
  return Value::MakeObject(std::move(obj));
}

StatusOr<Value> Evaluator::EvalMember(const Member& node, const EnvPtr& env) {
  EMBER_ASSIGN_OR_RETURN(Value object, Eval(*node.object, env));
  // Indexing, slicing or measuring a string walks its code points.
  if (object.is_string()) {
    if (Status st = budget_.ChargeBytes(object.as_string().size()); !st.ok()) return Locate(node, st);
  }
  Value property;
  if (node.computed && node.property->kind == NodeKind::kSlice) {
    return EvalSlice(object, static_cast<const Slice&>(*node.property), env);
  }
  if (node.computed) {
    EMBER_ASSIGN_OR_RETURN(property, Eval(*node.property, env));
  } else if (node.property->kind == NodeKind::kLiteral) {
    property = static_cast<const Literal&>(*node.property).value;
  } else {
    property = Value::String(static_cast<const Identifier&>(*node.property).name);
  }
  auto r = GetAttribute(object, property);
  if (!r.ok()) return Locate(node, r.status());
  return r;
}

StatusOr<Value> Evaluator::EvalSlice(const Value& object, const Slice& node, const EnvPtr& env) {
  Value parts[3];
  const Node* nodes[3] = {node.start.get(), node.stop.get(), node.step.get()};
  for (int i = 0; i < 3; ++i) {
    if (nodes[i]) {
      EMBER_ASSIGN_OR_RETURN(parts[i], Eval(*nodes[i], env));
    }
  }
  if (object.is_array()) {
    if (Status st = budget_.Charge(object.as_array().size()); !st.ok()) return Locate(node, st);
  }
  auto r = SliceValue(object, parts[0], parts[1], parts[2]);
  if (!r.ok()) return Locate(node, r.status());
  return r;
}

StatusOr<CallArgs> Evaluator::EvalArgs(const std::vector<Argument>& args, const EnvPtr& env) {
  CallArgs out;
  // Positional arguments (and `*` unpacking) are evaluated before any keyword value, as in Python.
  for (const Argument& a : args) {
    if (a.kind != Argument::Kind::kPositional && a.kind != Argument::Kind::kSpread) continue;
    EMBER_ASSIGN_OR_RETURN(Value v, Eval(*a.value, env));
    if (a.kind == Argument::Kind::kPositional) {
      out.positional.push_back(std::move(v));
      continue;
    }
    if (!v.is_array()) return ErrorAt(*a.value, std::string("Cannot unpack non-iterable type: ") + v.TypeName());
    if (Status st = budget_.Charge(v.as_array().size()); !st.ok()) return Locate(*a.value, st);
    for (const Value& item : v.as_array()) out.positional.push_back(item);
  }
  std::unordered_set<std::string> seen;  // `**` can pass a client-sized dict: no quadratic duplicate scan
  const auto add_keyword = [&](const std::string& k, Value v, const Node& at) -> Status {
    if (!seen.insert(k).second) return ErrorAt(at, "Got multiple values for keyword argument '" + k + "'");
    out.keywords.emplace_back(k, std::move(v));
    return Status::Ok();
  };
  for (const Argument& a : args) {
    if (a.kind != Argument::Kind::kKeyword && a.kind != Argument::Kind::kKeywordSpread) continue;
    EMBER_ASSIGN_OR_RETURN(Value v, Eval(*a.value, env));
    if (a.kind == Argument::Kind::kKeyword) {
      EMBER_RETURN_IF_ERROR(add_keyword(a.name, std::move(v), *a.value));
      continue;
    }
    if (!v.is_object()) return ErrorAt(*a.value, std::string("Argument after ** must be a mapping, not ") + v.TypeName());
    if (Status st = budget_.Charge(v.as_object().size()); !st.ok()) return Locate(*a.value, st);
    for (const auto& [k, item] : v.as_object().items()) EMBER_RETURN_IF_ERROR(add_keyword(k, item, *a.value));
  }
  return out;
}

StatusOr<Value> Evaluator::CallValue(const Value& fn, CallArgs& args, const EnvPtr& callsite, const Node& at) {
  if (!fn.is_function()) {
    return ErrorAt(at, std::string("Cannot call something that is not a function: got ") + fn.TypeName());
  }
  if (depth_ >= limits().max_call_depth) {
    return ErrorAt(at, "max_call_depth exceeded: calls nested deeper than " + std::to_string(limits().max_call_depth),
                   StatusCode::kResourceExhausted);
  }
  ++depth_;
  auto r = fn.as_function().call(*this, args, callsite);
  --depth_;
  if (!r.ok()) return Locate(at, r.status());
  return r;
}

StatusOr<Value> Evaluator::EvalCall(const Call& node, const EnvPtr& env) {
  EMBER_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(node.args, env));
  EMBER_ASSIGN_OR_RETURN(Value fn, Eval(*node.callee, env));
  if (!fn.is_function()) {
    // Name what was called: "x.startswith" on a list is a common template/input mismatch.
    std::string name;
    if (node.callee->kind == NodeKind::kIdentifier) name = static_cast<const Identifier&>(*node.callee).name;
    if (node.callee->kind == NodeKind::kMember) {
      const auto& m = static_cast<const Member&>(*node.callee);
      if (!m.computed && m.property->kind == NodeKind::kIdentifier) name = static_cast<const Identifier&>(*m.property).name;
    }
    return ErrorAt(node, std::string("Cannot call something that is not a function: got ") + fn.TypeName() +
                             (name.empty() ? "" : " ('" + name + "')"));
  }
  return CallValue(fn, args, env, node);
}

StatusOr<Value> Evaluator::EvalUnary(const Unary& node, const EnvPtr& env) {
  EMBER_ASSIGN_OR_RETURN(Value v, Eval(*node.operand, env));
  if (node.op == "not") return Value::Bool(!v.Truthy());
  const bool neg = node.op == "-";
  if (v.is_float()) return Value::Float(neg ? -v.as_float() : v.as_float());
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
    return Value::Int(neg ? -i : i);
  }
  return ErrorAt(node, "Unknown operator \"" + node.op + "\" for " + v.TypeName());
}

StatusOr<Value> Evaluator::EvalBinary(const Binary& node, const EnvPtr& env) {
  EMBER_ASSIGN_OR_RETURN(Value left, Eval(*node.left, env));
  if (node.op == "and") return left.Truthy() ? Eval(*node.right, env) : StatusOr<Value>(left);
  if (node.op == "or") return left.Truthy() ? StatusOr<Value>(left) : Eval(*node.right, env);
  EMBER_ASSIGN_OR_RETURN(Value right, Eval(*node.right, env));
  auto r = ApplyBinary(node.op, left, right, budget_);
  if (!r.ok()) return Locate(node, r.status());
  return r;
}

StatusOr<Value> Evaluator::EvalTest(const Test& node, const EnvPtr& env) {
  EMBER_ASSIGN_OR_RETURN(Value operand, Eval(*node.operand, env));
  if (operand.is_string()) {
    if (Status st = budget_.ChargeBytes(operand.as_string().size()); !st.ok()) return Locate(node, st);
  }
  auto r = ApplyTest(node.name, operand, nullptr);
  if (!r.ok()) return Locate(node, r.status());
  return Value::Bool(node.negate ? !*r : *r);
}

}  // namespace ember::jinja
