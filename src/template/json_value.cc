#include "template/json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "template/js_string.h"

namespace ember::jinja {
namespace {

// A key JS treats as an array index: "0" or a decimal without leading zeros below 2^32 - 1.
bool IsArrayIndexKey(const std::string& k, uint64_t* index) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return false;
  uint64_t n = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *index = n;
  return n < 4294967295ull;
}

Value NumberFromDouble(double d) {
  // JS has one number type; the reference makes every integral number an integer.
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return Value::Int(static_cast<int64_t>(d));
  return Value::Float(d);
}

StatusOr<Value> FromJsonAt(const nlohmann::ordered_json& j, int depth, const Limits& limits);

StatusOr<Value> ObjectFromJson(const nlohmann::ordered_json& j, int depth, const Limits& limits) {
  std::vector<std::pair<uint64_t, nlohmann::ordered_json::const_iterator>> indexed;
  Object obj;
  for (auto it = j.begin(); it != j.end(); ++it) {
    uint64_t idx = 0;
    if (IsArrayIndexKey(it.key(), &idx)) {
      indexed.emplace_back(idx, it);
    }
  }
  std::stable_sort(indexed.begin(), indexed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [idx, it] : indexed) {
    EMBER_ASSIGN_OR_RETURN(Value v, FromJsonAt(it.value(), depth + 1, limits));
    obj.Set(it.key(), std::move(v));
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    uint64_t idx = 0;
    if (IsArrayIndexKey(it.key(), &idx)) continue;
    EMBER_ASSIGN_OR_RETURN(Value v, FromJsonAt(it.value(), depth + 1, limits));
    obj.Set(it.key(), std::move(v));
  }
  return Value::MakeObject(std::move(obj));
}

// `depth`: containers around j. Recursion stops at max_depth, so a 100,000-deep document is an error,
// not a stack overflow.
StatusOr<Value> FromJsonAt(const nlohmann::ordered_json& j, int depth, const Limits& limits) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::None();
    case nlohmann::ordered_json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return NumberFromDouble(j.get<double>());
    case nlohmann::ordered_json::value_t::string: {
      const auto& s = j.get_ref<const std::string&>();
      if (s.size() > limits.max_string_bytes) return StringTooLong(s.size(), limits);
      return Value::String(s);
    }
    case nlohmann::ordered_json::value_t::array: {
      if (depth + 1 > limits.max_depth) return TooDeep(limits);
      if (j.size() > limits.max_items) return TooManyItems(j.size(), limits);
      Array arr;
      arr.reserve(j.size());
      for (const auto& e : j) {
        EMBER_ASSIGN_OR_RETURN(Value v, FromJsonAt(e, depth + 1, limits));
        arr.push_back(std::move(v));
      }
      return Value::MakeArray(std::move(arr));
    }
    case nlohmann::ordered_json::value_t::object:
      if (depth + 1 > limits.max_depth) return TooDeep(limits);
      if (j.size() > limits.max_items) return TooManyItems(j.size(), limits);
      return ObjectFromJson(j, depth, limits);
    default: return Value();  // binary / discarded: nothing JSON.parse could produce
  }
}

// localeCompare approximation for sort_keys: case-insensitive first, then lower case before upper.
bool LocaleLess(const std::string& a, const std::string& b) {
  const std::string la = AsciiLower(a), lb = AsciiLower(b);
  if (la != lb) return la < lb;
  return a > b;
}

struct JsonWriter {
  const JsonOptions& opts;
  const Limits& limits;
  std::string item_sep, key_sep;
  std::vector<const void*> open;  // containers being written, outermost first: depth and cycle checks

  Status Write(const Value& v, std::string* out) {
    if (out->size() > limits.max_string_bytes) return StringTooLong(out->size(), limits);
    switch (v.kind()) {
      case Value::Kind::kUndefined: *out += opts.undefined_as_null ? "null" : "undefined"; return Status::Ok();
      case Value::Kind::kNone: *out += "null"; return Status::Ok();
      case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return Status::Ok();
      case Value::Kind::kInt: *out += std::to_string(v.as_int()); return Status::Ok();
      case Value::Kind::kFloat:
        *out += std::isfinite(v.as_float()) ? JsNumberToString(v.as_float()) : "null";
        return Status::Ok();
      case Value::Kind::kString:
        // Checked unquoted before quoting (which can grow it six-fold); the total is checked at the end.
        if (out->size() + v.as_string().size() > limits.max_string_bytes) {
          return StringTooLong(out->size() + v.as_string().size(), limits);
        }
        *out += JsonQuote(v.as_string(), opts.ensure_ascii);
        return Status::Ok();
      case Value::Kind::kArray:
        if (v.is_tuple()) break;
        return Enter(v, out);
      case Value::Kind::kObject: case Value::Kind::kNamespace:
        return Enter(v, out);
      case Value::Kind::kFunction: break;
    }
    return InvalidArgument(std::string("Cannot convert to JSON: ") + v.TypeName());
  }

  Status Enter(const Value& v, std::string* out) {
    if (std::find(open.begin(), open.end(), v.identity()) != open.end()) {
      return InvalidArgument("cannot print a value that contains itself (a namespace holding itself)");
    }
    if (static_cast<int>(open.size()) + 1 > limits.max_depth) return TooDeep(limits);
    open.push_back(v.identity());
    Status st = v.is_array() ? WriteArray(v.as_array(), out) : WriteObject(v.as_object(), out);
    open.pop_back();
    return st;
  }

  std::string Padding(size_t depth) const {
    std::string pad(1, '\n');
    pad.append(static_cast<size_t>(opts.indent) * depth, ' ');
    return pad;
  }

  Status WriteArray(const Array& a, std::string* out) {
    const size_t depth = open.size() - 1;
    const bool pretty = opts.indent > 0 && !a.empty();
    *out += '[';
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) *out += item_sep;
      if (pretty) *out += Padding(depth + 1);
      EMBER_RETURN_IF_ERROR(Write(a[i], out));
    }
    if (pretty) *out += Padding(depth);
    *out += ']';
    return Status::Ok();
  }

  Status WriteObject(const Object& o, std::string* out) {
    const size_t depth = open.size() - 1;
    std::vector<const Object::Item*> entries;
    entries.reserve(o.size());
    for (const auto& kv : o.items()) entries.push_back(&kv);
    if (opts.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return LocaleLess(a->first, b->first); });
    }
    const bool pretty = opts.indent > 0 && !entries.empty();
    *out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) *out += item_sep;
      if (pretty) *out += Padding(depth + 1);
      if (out->size() + entries[i]->first.size() > limits.max_string_bytes) {
        return StringTooLong(out->size() + entries[i]->first.size(), limits);
      }
      *out += JsonQuote(entries[i]->first, opts.ensure_ascii);
      *out += key_sep;
      EMBER_RETURN_IF_ERROR(Write(entries[i]->second, out));
    }
    if (pretty) *out += Padding(depth);
    *out += '}';
    return Status::Ok();
  }
};

}  // namespace

StatusOr<Value> FromJson(const nlohmann::ordered_json& j, const Limits& limits) { return FromJsonAt(j, 0, limits); }

StatusOr<std::string> ToJson(const Value& v, const JsonOptions& opts, const Limits& limits) {
  JsonWriter w{opts, limits, opts.indent > 0 ? "," : ", ", ": ", {}};
  if (opts.separators) {
    w.item_sep = opts.separators->first;
    w.key_sep = opts.separators->second;
  }
  std::string out;
  EMBER_RETURN_IF_ERROR(w.Write(v, &out));
  if (out.size() > limits.max_string_bytes) return StringTooLong(out.size(), limits);
  return out;
}

}  // namespace ember::jinja
