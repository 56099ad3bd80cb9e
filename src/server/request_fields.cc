#include "server/request_fields.h"

#include "server/json_input.h"

namespace ember::server {

using nlohmann::json;

namespace {

// 'name' for error messages. Built by appending: GCC 12 warns falsely (-Wrestrict) on a chain of
// string operator+ that starts from a one-character literal.
std::string Quoted(const std::string& name) {
  std::string q;
  q.reserve(name.size() + 2);
  q += '\'';
  q += name;
  q += '\'';
  return q;
}

}  // namespace

FieldReader::FieldReader(const json& obj, std::string path, std::optional<ApiError>* error)
    : obj_(obj), path_(std::move(path)), error_(error) {}

const json* FieldReader::Get(const char* key) const {
  if (!ok() || !obj_.is_object()) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::Fail(const std::string& param, const std::string& message) {
  if (ok()) *error_ = InvalidRequest(message, param);
}

void FieldReader::WrongType(const char* key, const char* wanted) {
  Fail(Path(key), Quoted(Path(key)) + " must be " + wanted);
}

void FieldReader::Float(const char* key, float* out, double lo, double hi) {
  const json* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_number()) return WrongType(key, "a number");
  const double d = v->get<double>();
  if (d < lo || d > hi) {
    return Fail(Path(key), Quoted(Path(key)) + " must be between " + json(lo).dump() + " and " +
                               json(hi).dump() + ", got " + v->dump());
  }
  *out = static_cast<float>(d);
}

void FieldReader::Int(const char* key, int32_t* out, int64_t lo, int64_t hi) {
  std::optional<int32_t> v;
  OptionalInt(key, &v, lo, hi);
  if (v) *out = *v;
}

void FieldReader::OptionalInt(const char* key, std::optional<int32_t>* out, int64_t lo, int64_t hi) {
  const json* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_number_integer()) return WrongType(key, "an integer");
  const bool negative = v->is_number_unsigned() ? false : v->get<int64_t>() < 0;
  const int64_t i = negative ? v->get<int64_t>() : static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(), INT64_MAX));
  if (i < lo || i > hi) {
    return Fail(Path(key), Quoted(Path(key)) + " must be between " + std::to_string(lo) + " and " +
                               std::to_string(hi) + ", got " + v->dump());
  }
  *out = static_cast<int32_t>(i);
}

void FieldReader::Seed(const char* key, std::optional<uint64_t>* out) {
  const json* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_number_integer()) return WrongType(key, "an integer");
  *out = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
}

void FieldReader::Bool(const char* key, bool* out) {
  const json* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_boolean()) return WrongType(key, "a boolean");
  *out = v->get<bool>();
}

void FieldReader::String(const char* key, std::string* out) {
  const json* v = Get(key);
  if (v == nullptr) return;
  if (!v->is_string()) return WrongType(key, "a string");
  *out = v->get<std::string>();
}

void FieldReader::StringOrList(const char* key, std::vector<std::string>* out, size_t max_items, size_t max_bytes) {
  const json* v = Get(key);
  if (v == nullptr) return;
  auto add = [&](const json& s, const std::string& name) {
    if (!s.is_string()) return Fail(name, Quoted(name) + " must be a string");
    if (s.get_ref<const std::string&>().size() > max_bytes) {
      return Fail(name, Quoted(name) + " is longer than " + std::to_string(max_bytes) + " bytes (the limit)");
    }
    out->push_back(s.get<std::string>());
  };
  if (v->is_string()) {
    out->clear();
    return add(*v, Path(key));
  }
  if (!v->is_array()) return WrongType(key, "a string or an array of strings");
  if (v->size() > max_items) {
    return Fail(Path(key), Quoted(Path(key)) + " has more than " + std::to_string(max_items) + " items");
  }
  out->clear();
  for (size_t i = 0; i < v->size() && ok(); ++i) add((*v)[i], Path(key) + "[" + std::to_string(i) + "]");
}

FieldReader FieldReader::Child(const json& obj, const std::string& path) {
  FieldReader child(obj, path + ".", error_);
  if (!obj.is_object()) Fail(path, Quoted(path) + " must be an object");
  return child;
}

const json* FieldReader::Object(const char* key) {
  const json* v = Get(key);
  if (v != nullptr && !v->is_object()) {
    WrongType(key, "an object");
    return nullptr;
  }
  return v;
}

const json* FieldReader::Array(const char* key) {
  const json* v = Get(key);
  if (v != nullptr && !v->is_array()) {
    WrongType(key, "an array");
    return nullptr;
  }
  return v;
}

const json* FieldReader::Any(const char* key) { return Get(key); }

std::string IndexPath(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

void ReadArgumentsText(FieldReader& f, bool required, std::string* out) {
  const json* args = f.Any("arguments");
  const std::string param = f.Path("arguments");
  if (args == nullptr) {
    if (required) f.Fail(param, "'" + param + "' is required");
    return;
  }
  if (args->is_object()) {
    *out = args->dump();
  } else if (args->is_string()) {
    StatusOr<json> parsed = ParseJsonLimited(args->get_ref<const std::string&>());
    if (parsed.status().code() == StatusCode::kResourceExhausted) {
      return f.Fail(param, "'" + param + "': " + parsed.status().message());
    }
    *out = args->get<std::string>();
  } else {
    f.Fail(param, "'" + param + "' must be a string of JSON (or an object)");
  }
}

}  // namespace ember::server
