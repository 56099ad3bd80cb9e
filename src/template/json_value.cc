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

Value ObjectFromJson(const nlohmann::ordered_json& j) {
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
  for (const auto& [idx, it] : indexed) obj.Set(it.key(), FromJson(it.value()));
  for (auto it = j.begin(); it != j.end(); ++it) {
    uint64_t idx = 0;
    if (!IsArrayIndexKey(it.key(), &idx)) obj.Set(it.key(), FromJson(it.value()));
  }
  return Value::MakeObject(std::move(obj));
}

// localeCompare approximation for sort_keys: case-insensitive first, then lower case before upper.
bool LocaleLess(const std::string& a, const std::string& b) {
  const std::string la = AsciiLower(a), lb = AsciiLower(b);
  if (la != lb) return la < lb;
  return a > b;
}

struct JsonWriter {
  const JsonOptions& opts;
  std::string item_sep, key_sep;

  Status Write(const Value& v, int depth, std::string* out) const {
    switch (v.kind()) {
      case Value::Kind::kUndefined: *out += opts.undefined_as_null ? "null" : "undefined"; return Status::Ok();
      case Value::Kind::kNone: *out += "null"; return Status::Ok();
      case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return Status::Ok();
      case Value::Kind::kInt: *out += std::to_string(v.as_int()); return Status::Ok();
      case Value::Kind::kFloat:
        *out += std::isfinite(v.as_float()) ? JsNumberToString(v.as_float()) : "null";
        return Status::Ok();
      case Value::Kind::kString: *out += JsonQuote(v.as_string(), opts.ensure_ascii); return Status::Ok();
      case Value::Kind::kArray:
        if (v.is_tuple()) break;
        return WriteArray(v.as_array(), depth, out);
      case Value::Kind::kObject: case Value::Kind::kNamespace:
        return WriteObject(v.as_object(), depth, out);
      case Value::Kind::kFunction: break;
    }
    return InvalidArgument(std::string("Cannot convert to JSON: ") + v.TypeName());
  }

  std::string Padding(int depth) const {
    std::string pad(1, '\n');
    pad.append(static_cast<size_t>(opts.indent) * static_cast<size_t>(depth), ' ');
    return pad;
  }

  Status WriteArray(const Array& a, int depth, std::string* out) const {
    const bool pretty = opts.indent > 0 && !a.empty();
    *out += '[';
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) *out += item_sep;
      if (pretty) *out += Padding(depth + 1);
      EMBER_RETURN_IF_ERROR(Write(a[i], depth + 1, out));
    }
    if (pretty) *out += Padding(depth);
    *out += ']';
    return Status::Ok();
  }

  Status WriteObject(const Object& o, int depth, std::string* out) const {
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& kv : o.items) entries.push_back(&kv);
    if (opts.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return LocaleLess(a->first, b->first); });
    }
    const bool pretty = opts.indent > 0 && !entries.empty();
    *out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) *out += item_sep;
      if (pretty) *out += Padding(depth + 1);
      *out += JsonQuote(entries[i]->first, opts.ensure_ascii);
      *out += key_sep;
      EMBER_RETURN_IF_ERROR(Write(entries[i]->second, depth + 1, out));
    }
    if (pretty) *out += Padding(depth);
    *out += '}';
    return Status::Ok();
  }
};

}  // namespace

Value FromJson(const nlohmann::ordered_json& j) {
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
    case nlohmann::ordered_json::value_t::string: return Value::String(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array arr;
      arr.reserve(j.size());
      for (const auto& e : j) arr.push_back(FromJson(e));
      return Value::MakeArray(std::move(arr));
    }
    case nlohmann::ordered_json::value_t::object: return ObjectFromJson(j);
    default: return Value();  // binary / discarded: nothing JSON.parse could produce
  }
}

StatusOr<std::string> ToJson(const Value& v, const JsonOptions& opts) {
  JsonWriter w{opts, opts.indent > 0 ? "," : ", ", ": "};
  if (opts.separators) {
    w.item_sep = opts.separators->first;
    w.key_sep = opts.separators->second;
  }
  std::string out;
  EMBER_RETURN_IF_ERROR(w.Write(v, 0, &out));
  return out;
}

}  // namespace ember::jinja
