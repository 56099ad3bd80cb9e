#include "template/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "template/evaluator.h"
#include "template/js_string.h"
#include "template/json_value.h"
#include "template/methods.h"

namespace ember::jinja {
namespace {

Status Unknown(const char* type, const std::string& name) {
  return Unimplemented(std::string("Unknown ") + type + " filter: " + name);
}

Status CannotApply(const std::string& name, const Value& v) {
  return InvalidArgument("Cannot apply filter \"" + name + "\" to type: " + v.TypeName());
}

// JS parseInt(s, 10): leading whitespace, a sign, then as many digits as there are.
bool JsParseInt(const std::string& raw, int64_t* out) {
  const std::string s = JsTrimStart(raw);
  size_t i = 0;
  const bool neg = i < s.size() && s[i] == '-';
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  const size_t digits = i;
  int64_t v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v)) return false;
    ++i;
  }
  if (i == digits) return false;
  *out = neg ? -v : v;
  return true;
}

// JS parseFloat: the longest decimal-literal prefix after leading whitespace (or Infinity).
bool JsParseFloat(const std::string& raw, double* out) {
  const std::string s = JsTrimStart(raw);
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (s.compare(i, 8, "Infinity") == 0) {
    *out = s[0] == '-' ? -INFINITY : INFINITY;
    return true;
  }
  size_t mantissa_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) { ++i; ++mantissa_digits; }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) { ++i; ++mantissa_digits; }
  }
  if (mantissa_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      i = j;
    }
  }
  *out = std::strtod(s.substr(0, i).c_str(), nullptr);
  return true;
}

StatusOr<Value> Indent(const std::string& s, int64_t width, bool first, bool blank, Budget& budget) {
  // The output is at most the input plus one pad per line: check that before building a pad.
  const uint64_t lines = 1 + static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
  const uint64_t w = static_cast<uint64_t>(std::max<int64_t>(width, 0));
  const uint64_t cap = budget.limits().max_string_bytes;
  if (w > cap || lines * w > cap - std::min<uint64_t>(cap, s.size())) {
    return StringTooLong(w > cap ? w : s.size() + lines * w, budget.limits());
  }
  EMBER_RETURN_IF_ERROR(budget.ChargeBytes(s.size() + lines * w));
  std::string out, line;
  const std::string pad(static_cast<size_t>(w), ' ');
  size_t start = 0;
  for (int i = 0;; ++i) {
    const size_t nl = s.find('\n', start);
    line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (i > 0) out += '\n';
    if (!((!first && i == 0) || (!blank && line.empty()))) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return Value::String(std::move(out));
}

// "a.b.0": dict keys and list indices along a dotted path; anything missing is undefined.
Value AttributePath(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.has_attributes()) {
      const Value* next = v.as_object().Find(part);
      v = next ? *next : Value();
    } else if (v.is_array()) {
      int64_t index = 0;
      if (!JsParseInt(part, &index) || index < 0 || index >= static_cast<int64_t>(v.as_array().size())) return Value();
      v = v.as_array()[static_cast<size_t>(index)];
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

const Value* Pos(const CallArgs& a, size_t i) { return i < a.positional.size() ? &a.positional[i] : nullptr; }

// Positional i, else keyword `name`, else `fallback`.
Value ArgOr(const CallArgs& a, size_t i, const char* name, Value fallback) {
  if (const Value* v = Pos(a, i)) return *v;
  if (const Value* v = a.Keyword(name)) return *v;
  return fallback;
}

StatusOr<Value> Sort(const Array& items, const CallArgs& args, Budget& budget) {
  const Value reverse = ArgOr(args, 0, "reverse", Value::Bool(false));
  const Value case_sensitive = ArgOr(args, 1, "case_sensitive", Value::Bool(false));
  const Value attribute = ArgOr(args, 2, "attribute", Value::None());
  if (!reverse.is_bool()) return InvalidArgument("reverse must be a boolean");
  if (!case_sensitive.is_bool()) return InvalidArgument("case_sensitive must be a boolean");
  if (!attribute.is_string() && !attribute.is_int() && !attribute.is_none()) {
    return InvalidArgument("attribute must be a string, integer, or null");
  }
  const auto key = [&](const Value& v) {
    if (attribute.is_none()) return v;
    return AttributePath(v, attribute.is_int() ? std::to_string(attribute.as_int()) : attribute.as_string());
  };
  Array keys;
  keys.reserve(items.size());
  for (const Value& v : items) keys.push_back(key(v));
  EMBER_RETURN_IF_ERROR(ChargeSort(keys, budget));
  Array out = items;
  Status error;
  std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
    auto c = CompareValues(key(x), key(y), case_sensitive.as_bool());
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return reverse.as_bool() ? *c > 0 : *c < 0;
  });
  EMBER_RETURN_IF_ERROR(error);
  return Value::MakeArray(std::move(out));
}

// Joins string forms with `sep`, checking the size as it grows (1M items x a long separator would be
// terabytes).
StatusOr<Value> JoinValues(const Array& items, const std::string& sep, Budget& budget) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(std::string part, ToJoinString(items[i], budget.limits()));
    const size_t add = part.size() + (i > 0 ? sep.size() : 0);
    EMBER_RETURN_IF_ERROR(budget.CheckString(out.size() + add));
    EMBER_RETURN_IF_ERROR(budget.ChargeBytes(add));
    if (i > 0) out += sep;
    out += part;
  }
  return Value::String(std::move(out));
}

// `'abc' | join(sep)`: the code points joined.
StatusOr<Value> JoinCodePoints(const std::string& s, const std::string& sep, Budget& budget) {
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    NextCodePoint(s, &pos);
    const size_t add = pos - start + (start > 0 ? sep.size() : 0);
    EMBER_RETURN_IF_ERROR(budget.CheckString(out.size() + add));
    EMBER_RETURN_IF_ERROR(budget.ChargeBytes(add));
    if (start > 0) out += sep;
    out.append(s, start, pos - start);
  }
  return Value::String(std::move(out));
}

// A JSON text as a string value; its length was bounded while writing, its bytes are charged here.
StatusOr<Value> JsonString(const Value& v, const JsonOptions& opts, Budget& budget) {
  EMBER_ASSIGN_OR_RETURN(std::string s, ToJson(v, opts, budget.limits()));
  EMBER_RETURN_IF_ERROR(budget.ChargeBytes(s.size()));
  return Value::String(std::move(s));
}

StatusOr<Value> PlainArrayFilter(const std::string& name, const Value& v, Budget& budget) {
  const Array& a = v.as_array();
  if (name == "list") return v;
  if (name == "first") return a.empty() ? Value() : a.front();
  if (name == "last") return a.empty() ? Value() : a.back();
  if (name == "length") return Value::Int(static_cast<int64_t>(a.size()));
  if (name == "reverse") return Value::MakeArray(Array(a.rbegin(), a.rend()));
  if (name == "sort") return Sort(a, CallArgs{}, budget);
  if (name == "join") return JoinValues(a, "", budget);
  if (name == "string") {
    JsonOptions opts;
    opts.undefined_as_null = false;
    return JsonString(v, opts, budget);
  }
  if (name == "unique") {
    // Strict equality has no hash order over mixed values: n^2 / 2 comparisons, charged as they happen.
    Array out;
    for (const Value& x : a) {
      const uint64_t per = 1 + (x.is_string() ? x.as_string().size() / kBytesPerStep : 0);
      EMBER_RETURN_IF_ERROR(budget.Charge(out.size() * per));
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return StrictEquals(x, y); })) out.push_back(x);
    }
    return Value::MakeArray(std::move(out));
  }
  if (name == "select" || name == "reject") {  // extension: truthiness without a test name
    Array out;
    for (const Value& x : a) if (x.Truthy() == (name == "select")) out.push_back(x);
    return Value::MakeArray(std::move(out));
  }
  return Unknown("ArrayValue", name);
}

StatusOr<Value> PlainStringFilter(const std::string& name, const std::string& s, Budget& budget) {
  if (name == "length") return Value::Int(Utf16Length(s));
  if (name == "upper") return Value::String(AsciiUpper(s));
  if (name == "lower") return Value::String(AsciiLower(s));
  if (name == "title") return Value::String(JsTitle(s));
  if (name == "capitalize") return Value::String(AsciiUpper(s.substr(0, 1)) + s.substr(std::min<size_t>(1, s.size())));
  if (name == "trim") return Value::String(JsTrim(s));
  if (name == "indent") return Indent(s, 4, false, false, budget);
  if (name == "join" || name == "string") return Value::String(s);
  if (name == "int") {
    int64_t i = 0;
    return Value::Int(JsParseInt(s, &i) ? i : 0);
  }
  if (name == "float") {
    double d = 0;
    return Value::Float(JsParseFloat(s, &d) ? d : 0.0);
  }
  return Unknown("StringValue", name);
}

// Every filter reads its whole operand except these (O(1) on any operand).
bool ConstantTime(const std::string& name, const Value& v) {
  if (name == "length") return !v.is_string();
  return name == "first" || name == "last" || name == "list" || name == "safe" || name == "default" ||
         name == "abs" || name == "bool";
}

// The generic cost of a filter: one step per item, or per kBytesPerStep bytes of a string.
Status ChargeOperand(const std::string& name, const Value& v, Budget& budget) {
  if (ConstantTime(name, v)) return Status::Ok();
  if (v.is_array()) return budget.Charge(v.as_array().size());
  if (v.is_object()) return budget.Charge(v.as_object().size());
  if (v.is_string()) return budget.ChargeBytes(v.as_string().size());
  return Status::Ok();
}

StatusOr<Value> PlainFilter(const std::string& name, const Value& v, Budget& budget) {
  EMBER_RETURN_IF_ERROR(ChargeOperand(name, v, budget));
  if (name == "safe") return v;
  if (name == "tojson") return JsonString(v, JsonOptions{}, budget);
  if (v.is_array()) return PlainArrayFilter(name, v, budget);
  if (v.is_string()) return PlainStringFilter(name, v.as_string(), budget);
  if (v.is_number()) {
    if (name == "abs") return v.is_int() ? Value::Int(std::llabs(v.as_int())) : Value::Float(std::fabs(v.as_float()));
    if (name == "int") return v.is_int() ? v : Value::Int(static_cast<int64_t>(std::floor(v.as_float())));
    if (name == "float") return Value::Float(v.as_number());
    if (name == "string") {
      EMBER_ASSIGN_OR_RETURN(std::string s, ToOutputString(v, budget.limits()));
      return Value::String(std::move(s));
    }
    return Unknown("NumericValue", name);
  }
  if (v.is_object()) {
    if (name == "items") return DictItems(v);
    if (name == "length") return Value::Int(static_cast<int64_t>(v.as_object().size()));
    if (name == "keys" || name == "values" || name == "dictsort") {
      if (name == "dictsort") return DictSort(v, CallArgs{}, budget);
      Array out;
      out.reserve(v.as_object().size());
      for (const auto& [k, x] : v.as_object().items()) out.push_back(name == "keys" ? Value::String(k) : x);
      return Value::MakeArray(std::move(out));
    }
    return Unknown("ObjectValue", name);
  }
  if (v.is_bool()) {
    if (name == "bool") return v;
    if (name == "int") return Value::Int(v.as_bool() ? 1 : 0);
    if (name == "float") return Value::Float(v.as_bool() ? 1.0 : 0.0);
    if (name == "string") return Value::String(v.as_bool() ? "true" : "false");
    return Unknown("BooleanValue", name);
  }
  return CannotApply(name, v);
}

StatusOr<Value> ToJsonFilter(const Value& v, const CallArgs& args, Budget& budget) {
  JsonOptions opts;
  const Value* indent = args.Keyword("indent");
  if (indent && !indent->is_int() && !indent->is_none()) return InvalidArgument("If set, indent must be a number");
  if (indent && indent->is_int()) {
    if (indent->as_int() < 0 || indent->as_int() > 64) return InvalidArgument("indent must be between 0 and 64");
    opts.indent = static_cast<int>(indent->as_int());
  }
  const Value* ascii = args.Keyword("ensure_ascii");
  if (ascii && !ascii->is_bool()) return InvalidArgument("If set, ensure_ascii must be a boolean");
  opts.ensure_ascii = ascii && ascii->as_bool();
  const Value* sort = args.Keyword("sort_keys");
  if (sort && !sort->is_bool()) return InvalidArgument("If set, sort_keys must be a boolean");
  opts.sort_keys = sort && sort->as_bool();
  if (const Value* seps = args.Keyword("separators"); seps && !seps->is_none()) {
    if (!seps->is_array() || seps->as_array().size() != 2 || !seps->as_array()[0].is_string() ||
        !seps->as_array()[1].is_string()) {
      return InvalidArgument("separators must be a tuple of two strings");
    }
    opts.separators = std::make_pair(seps->as_array()[0].as_string(), seps->as_array()[1].as_string());
  }
  return JsonString(v, opts, budget);
}

StatusOr<Value> JoinFilter(const Value& v, const CallArgs& args, Budget& budget) {
  if (!v.is_string() && !v.is_array()) return CannotApply("join", v);
  const Value sep = ArgOr(args, 0, "separator", Value::String(""));
  if (!sep.is_string()) return InvalidArgument("separator must be a string");
  if (v.is_string()) return JoinCodePoints(v.as_string(), sep.as_string(), budget);
  return JoinValues(v.as_array(), sep.as_string(), budget);
}

StatusOr<Value> NumberFilter(const std::string& name, const Value& v, const CallArgs& args) {
  const bool is_int = name == "int";
  const Value fallback = ArgOr(args, 0, "default", is_int ? Value::Int(0) : Value::Float(0.0));
  if (v.is_string()) {
    if (is_int) {
      int64_t i = 0;
      return JsParseInt(v.as_string(), &i) ? Value::Int(i) : fallback;
    }
    double d = 0;
    return JsParseFloat(v.as_string(), &d) ? Value::Float(d) : fallback;
  }
  if (v.is_number()) return v;  // the reference returns numbers unchanged in the call form
  if (v.is_bool()) return is_int ? Value::Int(v.as_bool() ? 1 : 0) : Value::Float(v.as_bool() ? 1.0 : 0.0);
  return CannotApply(name, v);
}

// selectattr / rejectattr: keep items whose attribute passes the test (truthiness by default).
StatusOr<Value> SelectAttr(const Filter& f, const Value& v, const CallArgs& args, Budget& budget) {
  const bool select = f.name == "selectattr";
  for (const Value& item : v.as_array()) {
    if (!item.has_attributes()) return InvalidArgument("`" + f.name + "` can only be applied to array of objects");
  }
  for (const Argument& a : f.args) {
    const bool literal = a.kind == Argument::Kind::kPositional && a.value->kind == NodeKind::kLiteral &&
                         static_cast<const Literal&>(*a.value).value.is_string();
    if (!literal) return InvalidArgument("arguments of `" + f.name + "` must be strings");
  }
  if (args.positional.empty()) return InvalidArgument("`" + f.name + "` needs an attribute name");
  const std::string& attr = args.positional[0].as_string();
  const Value* test = Pos(args, 1);
  const Value* test_arg = Pos(args, 2);
  Array out;
  for (const Value& item : v.as_array()) {
    const Value* a = item.as_object().Find(attr);
    bool pass = false;
    if (a && test && a->is_string()) EMBER_RETURN_IF_ERROR(budget.ChargeBytes(a->as_string().size()));
    if (a && test) {
      EMBER_ASSIGN_OR_RETURN(pass, ApplyTest(test->as_string(), *a, test_arg));
    } else if (a) {
      pass = a->Truthy();
    }
    if (pass == select) out.push_back(item);
  }
  return Value::MakeArray(std::move(out));
}

// map(attribute="x", default=...) as in the reference; map("filter") as in Python Jinja.
StatusOr<Value> MapFilter(const Value& v, const CallArgs& args, Budget& budget) {
  Array out;
  if (const Value* attr = args.Keyword("attribute")) {
    if (!attr->is_string()) return InvalidArgument("attribute must be a string");
    const Value* fallback = args.Keyword("default");
    for (const Value& item : v.as_array()) {
      if (!item.has_attributes()) return InvalidArgument("items in map must be an object");
      Value x = AttributePath(item, attr->as_string());
      out.push_back(x.is_undefined() && fallback ? *fallback : x);
    }
    return Value::MakeArray(std::move(out));
  }
  const Value* name = Pos(args, 0);
  if (!name || !name->is_string()) return InvalidArgument("map needs attribute= or a filter name");
  for (const Value& item : v.as_array()) {
    EMBER_ASSIGN_OR_RETURN(Value x, PlainFilter(name->as_string(), item, budget));
    out.push_back(std::move(x));
  }
  return Value::MakeArray(std::move(out));
}

// select("test") / reject("test"), as in Python Jinja (the reference has no select/reject).
StatusOr<Value> SelectFilter(const std::string& name, const Value& v, const CallArgs& args, Budget& budget) {
  const Value* test = Pos(args, 0);
  if (test && !test->is_string()) return InvalidArgument(name + " expects a test name");
  Array out;
  for (const Value& item : v.as_array()) {
    bool pass = item.Truthy();
    if (test && item.is_string()) EMBER_RETURN_IF_ERROR(budget.ChargeBytes(item.as_string().size()));
    if (test) {
      EMBER_ASSIGN_OR_RETURN(pass, ApplyTest(test->as_string(), item, Pos(args, 1)));
    }
    if (pass == (name == "select")) out.push_back(item);
  }
  return Value::MakeArray(std::move(out));
}

StatusOr<Value> CallFilter(Evaluator& ev, const Filter& f, const Value& v, CallArgs& args,
                           const std::shared_ptr<Env>& env) {
  const std::string& name = f.name;
  Budget& budget = ev.budget();
  EMBER_RETURN_IF_ERROR(ChargeOperand(name, v, budget));
  if (name == "tojson") return ToJsonFilter(v, args, budget);
  if (name == "join") return JoinFilter(v, args, budget);
  if (name == "int" || name == "float") return NumberFilter(name, v, args);
  if (name == "default") {
    const Value fallback = args.positional.empty() ? Value::String("") : args.positional[0];
    const Value boolean = ArgOr(args, 1, "boolean", Value::Bool(false));
    if (!boolean.is_bool()) return InvalidArgument("`default` filter flag must be a boolean");
    return v.is_undefined() || (boolean.as_bool() && !v.Truthy()) ? fallback : v;
  }
  if (v.is_array()) {
    if (name == "sort") return Sort(v.as_array(), args, budget);
    if (name == "selectattr" || name == "rejectattr") return SelectAttr(f, v, args, budget);
    if (name == "map") return MapFilter(v, args, budget);
    if (name == "select" || name == "reject") return SelectFilter(name, v, args, budget);
    return Unknown("ArrayValue", name);
  }
  if (v.is_string()) {
    if (name == "indent") {
      const Value width = ArgOr(args, 0, "width", Value::Int(4));
      if (!width.is_int()) return InvalidArgument("width must be a number");
      const bool first = ArgOr(args, 1, "first", Value::Bool(false)).Truthy();
      const bool blank = ArgOr(args, 2, "blank", Value::Bool(false)).Truthy();
      return Indent(v.as_string(), width.as_int(), first, blank, budget);
    }
    if (name == "replace") return StringReplace(v.as_string(), args, budget);
    return Unknown("StringValue", name);
  }
  if (v.is_object()) {
    const Value method = DictMethod(v, name);
    if (!method.is_function()) return Unknown("ObjectValue", name);
    return method.as_function().call(ev, args, env);
  }
  return CannotApply(name, v);
}

}  // namespace

StatusOr<Value> ApplyFilter(Evaluator& ev, const Filter& filter, const Value& operand, const std::shared_ptr<Env>& env) {
  if (!filter.has_call) return PlainFilter(filter.name, operand, ev.budget());
  EMBER_ASSIGN_OR_RETURN(CallArgs args, ev.EvalArgs(filter.args, env));
  return CallFilter(ev, filter, operand, args, env);
}

StatusOr<bool> ApplyTest(const std::string& name, const Value& v, const Value* arg) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "iterable") return (v.is_array() && !v.is_tuple()) || v.is_string();  // not dicts, as in the reference
  if (name == "mapping") return v.is_object();
  if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
  if (name == "callable") return v.is_function();
  if (name == "lower") return v.is_string() && v.as_string() == AsciiLower(v.as_string());
  if (name == "upper") return v.is_string() && v.as_string() == AsciiUpper(v.as_string());
  if (name == "odd" || name == "even") {
    if (!v.is_int()) return InvalidArgument("cannot " + name + " on " + v.TypeName());
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "equalto" || name == "eq") {
    if (!arg) return InvalidArgument("test '" + name + "' needs a value to compare with");
    return StrictEquals(v, *arg);
  }
  return Unimplemented("Unknown test: " + name);
}

}  // namespace ember::jinja
