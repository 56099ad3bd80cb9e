#include "template/value.h"

#include <cmath>
#include <cstdlib>

#include "template/js_string.h"
#include "template/json_value.h"

namespace ember::jinja {

const Value* Object::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::Set(const std::string& key, Value v) {
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(key, std::move(v));
}

const Value* CallArgs::Keyword(std::string_view name) const {
  for (const auto& [k, v] : keywords) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::MakeArray(Array a, bool tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  v.tuple_ = tuple;
  v.arr_ = std::make_shared<const Array>(std::move(a));
  return v;
}

Value Value::MakeObject(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.obj_ = std::make_shared<Object>(std::move(o));
  return v;
}

Value Value::MakeNamespace(Object o) {
  Value v = MakeObject(std::move(o));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::MakeFunction(Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<const Function>(std::move(f));
  return v;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined: case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0 && !std::isnan(f_);
    case Kind::kString: return !s_.empty();
    case Kind::kArray: return !arr_->empty();
    case Kind::kObject: return !obj_->items.empty();
    case Kind::kNamespace: case Kind::kFunction: return true;  // JS: a Map or a function is truthy
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "UndefinedValue";
    case Kind::kNone: return "NullValue";
    case Kind::kBool: return "BooleanValue";
    case Kind::kInt: return "IntegerValue";
    case Kind::kFloat: return "FloatValue";
    case Kind::kString: return "StringValue";
    case Kind::kArray: return tuple_ ? "TupleValue" : "ArrayValue";
    case Kind::kObject: return "ObjectValue";
    case Kind::kNamespace: return "NamespaceValue";
    case Kind::kFunction: return "FunctionValue";
  }
  return "?";
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kArray: return arr_.get();
    case Kind::kObject: case Kind::kNamespace: return obj_.get();
    case Kind::kFunction: return fn_.get();
    default: return nullptr;
  }
}

namespace {

// FloatValue.toString: integral floats keep a ".0" so 2.0 prints as "2.0", not "2".
std::string FloatToString(double f) {
  if (f == 0 && std::signbit(f)) return "-0.0";
  if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 1e21) return JsNumberToString(f) + ".0";
  return JsNumberToString(f);
}

// An element's own toString() (used when JS stringifies an array of runtime values).
std::string ElementToString(const Value& v) {
  if (v.is_none()) return "null";
  if (v.is_undefined()) return "undefined";
  if (v.is_function()) return "function";
  auto s = ToOutputString(v);
  return s.ok() ? *s : "";
}

// ToNumber(string) as JS does it for loose equality.
double JsStringToNumber(const std::string& raw) {
  const std::string s = JsTrim(raw);
  if (s.empty()) return 0;
  if (s == "Infinity" || s == "+Infinity") return INFINITY;
  if (s == "-Infinity") return -INFINITY;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (!hex && s.find_first_not_of("0123456789+-.eE") != std::string::npos) return NAN;
  char* end = nullptr;
  const double d = hex ? static_cast<double>(std::strtoull(s.c_str() + 2, &end, 16)) : std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() ? d : NAN;
}

bool IsPrimitive(const Value& v) { return v.is_bool() || v.is_number() || v.is_string(); }

}  // namespace

StatusOr<std::string> ToOutputString(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: case Value::Kind::kNone: return std::string();
    case Value::Kind::kBool: return std::string(v.as_bool() ? "true" : "false");
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return FloatToString(v.as_float());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray: case Value::Kind::kObject: case Value::Kind::kNamespace: {
      JsonOptions opts;
      opts.undefined_as_null = false;
      return ToJson(v, opts);
    }
    case Value::Kind::kFunction: break;
  }
  return InvalidArgument("cannot print a function value");
}

std::string ToConcatString(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "undefined";
    case Value::Kind::kNone: return "null";
    case Value::Kind::kBool: return v.as_bool() ? "true" : "false";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return JsNumberToString(v.as_float());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray: {
      std::string out;
      for (size_t i = 0; i < v.as_array().size(); ++i) {
        if (i > 0) out += ',';
        out += ElementToString(v.as_array()[i]);
      }
      return out;
    }
    case Value::Kind::kObject: case Value::Kind::kNamespace: return "[object Map]";
    case Value::Kind::kFunction: return "function";
  }
  return "";
}

std::string ToJoinString(const Value& v) {
  if (v.is_none() || v.is_undefined()) return "";
  return ToConcatString(v);
}

bool LooseEquals(const Value& a, const Value& b) {
  const bool a_nullish = a.is_none() || a.is_undefined();
  const bool b_nullish = b.is_none() || b.is_undefined();
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  if (a.identity() != nullptr && b.identity() != nullptr) return a.identity() == b.identity();
  const auto to_number = [](const Value& v) {
    if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
    if (v.is_number()) return v.as_number();
    return JsStringToNumber(v.is_string() ? v.as_string() : ToConcatString(v));
  };
  if (IsPrimitive(a) && IsPrimitive(b)) return to_number(a) == to_number(b);
  // A container against a primitive: JS converts the container to its string form first.
  const Value& prim = IsPrimitive(a) ? a : b;
  const std::string other = ToConcatString(IsPrimitive(a) ? b : a);
  if (prim.is_string()) return prim.as_string() == other;
  return to_number(prim) == JsStringToNumber(other);
}

bool StrictEquals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined: case Value::Kind::kNone: return true;
    case Value::Kind::kBool: return a.as_bool() == b.as_bool();
    case Value::Kind::kString: return a.as_string() == b.as_string();
    default: return a.identity() == b.identity();
  }
}

}  // namespace ember::jinja
