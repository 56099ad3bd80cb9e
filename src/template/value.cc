#include "template/value.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "template/js_string.h"
#include "template/json_value.h"

namespace ember::jinja {

const Value* Object::Find(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  for (const auto& [k, v] : items_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::Set(const std::string& key, Value v) {
  if (!index_.empty()) {
    auto it = index_.find(std::string_view(key));
    if (it != index_.end()) {
      items_[it->second].second = std::move(v);
      return;
    }
  } else {
    for (auto& [k, old] : items_) {
      if (k == key) {
        old = std::move(v);
        return;
      }
    }
  }
  items_.emplace_back(key, std::move(v));
  if (!index_.empty()) {
    index_.emplace(key, items_.size() - 1);
  } else if (items_.size() >= kIndexFrom) {
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  }
}

void Object::Clear() {
  items_.clear();
  index_.clear();
}

const Value* CallArgs::Keyword(std::string_view name) const {
  for (const auto& [k, v] : keywords) {
    if (k == name) return &v;
  }
  return nullptr;
}

namespace {

uint16_t ContainerDepth(int deepest_child) {
  return static_cast<uint16_t>(std::min(deepest_child + 1, 0xffff));
}

}  // namespace

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

const std::string& Value::as_string() const {
  static const std::string kEmpty;
  return kind_ == Kind::kString ? *static_cast<const std::string*>(ptr_.get()) : kEmpty;
}

Value Value::MakeArray(Array a, bool tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  v.tuple_ = tuple;
  int deepest = 0;
  for (const Value& item : a) deepest = std::max<int>(deepest, item.depth_);
  v.depth_ = ContainerDepth(deepest);
  v.ptr_ = std::make_shared<const Array>(std::move(a));
  return v;
}

Value Value::MakeObject(Object o) {
  Value v;
  v.kind_ = Kind::kObject;
  int deepest = 0;
  for (const auto& [k, item] : o.items()) deepest = std::max<int>(deepest, item.depth_);
  v.depth_ = ContainerDepth(deepest);
  v.ptr_ = std::make_shared<Object>(std::move(o));
  return v;
}

Value Value::MakeNamespace(Object o) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.depth_ = 1;
  v.ptr_ = std::make_shared<Object>(std::move(o));
  return v;
}

Value Value::MakeFunction(Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.ptr_ = std::make_shared<const Function>(std::move(f));
  return v;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined: case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0 && !std::isnan(f_);
    case Kind::kString: return !as_string().empty();
    case Kind::kArray: return !as_array().empty();
    case Kind::kObject: return !as_object().empty();
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
    case Kind::kArray: case Kind::kObject: case Kind::kNamespace: case Kind::kFunction: return ptr_.get();
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
StatusOr<std::string> ElementToString(const Value& v, const Limits& limits) {
  if (v.is_none()) return std::string("null");
  if (v.is_undefined()) return std::string("undefined");
  if (v.is_function()) return std::string("function");
  return ToOutputString(v, limits);
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

StatusOr<std::string> ToOutputString(const Value& v, const Limits& limits) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: case Value::Kind::kNone: return std::string();
    case Value::Kind::kBool: return std::string(v.as_bool() ? "true" : "false");
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return FloatToString(v.as_float());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray: case Value::Kind::kObject: case Value::Kind::kNamespace: {
      JsonOptions opts;
      opts.undefined_as_null = false;
      return ToJson(v, opts, limits);
    }
    case Value::Kind::kFunction: break;
  }
  return InvalidArgument("cannot print a function value");
}

StatusOr<std::string> ToConcatString(const Value& v, const Limits& limits) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return std::string("undefined");
    case Value::Kind::kNone: return std::string("null");
    case Value::Kind::kBool: return std::string(v.as_bool() ? "true" : "false");
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return JsNumberToString(v.as_float());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray: {
      std::string out;
      for (size_t i = 0; i < v.as_array().size(); ++i) {
        if (i > 0) out += ',';
        EMBER_ASSIGN_OR_RETURN(std::string item, ElementToString(v.as_array()[i], limits));
        if (out.size() + item.size() > limits.max_string_bytes) return StringTooLong(out.size() + item.size(), limits);
        out += item;
      }
      return out;
    }
    case Value::Kind::kObject: case Value::Kind::kNamespace: return std::string("[object Map]");
    case Value::Kind::kFunction: return std::string("function");
  }
  return std::string();
}

StatusOr<std::string> ToJoinString(const Value& v, const Limits& limits) {
  if (v.is_none() || v.is_undefined()) return std::string();
  return ToConcatString(v, limits);
}

StatusOr<bool> LooseEquals(const Value& a, const Value& b, const Limits& limits) {
  const bool a_nullish = a.is_none() || a.is_undefined();
  const bool b_nullish = b.is_none() || b.is_undefined();
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  if (a.identity() != nullptr && b.identity() != nullptr) return a.identity() == b.identity();
  const auto to_number = [&](const Value& v) -> StatusOr<double> {
    if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
    if (v.is_number()) return v.as_number();
    if (v.is_string()) return JsStringToNumber(v.as_string());
    EMBER_ASSIGN_OR_RETURN(std::string s, ToConcatString(v, limits));
    return JsStringToNumber(s);
  };
  if (IsPrimitive(a) && IsPrimitive(b)) {
    EMBER_ASSIGN_OR_RETURN(double x, to_number(a));
    EMBER_ASSIGN_OR_RETURN(double y, to_number(b));
    return x == y;
  }
  // A container against a primitive: JS converts the container to its string form first.
  const Value& prim = IsPrimitive(a) ? a : b;
  EMBER_ASSIGN_OR_RETURN(std::string other, ToConcatString(IsPrimitive(a) ? b : a, limits));
  if (prim.is_string()) return prim.as_string() == other;
  EMBER_ASSIGN_OR_RETURN(double x, to_number(prim));
  return x == JsStringToNumber(other);
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
