// Typed access to one JSON object of a request, so parsers read fields into native types in one line each
// and a wrong type becomes a 400 that names the field ("messages[2].content", "temperature"). The first
// error wins; after it every read is a no-op, so a parser can read all its fields and check once.
// Absent and null fields leave the output untouched (clients send null for "default"). Reading request
// JSON any other way (get<>, at(), value(), operator[] on a missing key) throws or asserts on a wrong
// type; that is a 500 or a crash, never the 400 the client deserves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace ember::server {

class FieldReader {
 public:
  // `path` prefixes every reported field name ("messages[0]."); `error` is the shared first-error slot.
  FieldReader(const nlohmann::json& obj, std::string path, std::optional<ApiError>* error);

  void Float(const char* key, float* out, double lo, double hi);
  void Int(const char* key, int32_t* out, int64_t lo, int64_t hi);
  void OptionalInt(const char* key, std::optional<int32_t>* out, int64_t lo, int64_t hi);
  void Seed(const char* key, std::optional<uint64_t>* out);
  void Bool(const char* key, bool* out);
  void String(const char* key, std::string* out);
  // One string or an array of strings ("stop"), at most `max_items` of at most `max_bytes` each.
  void StringOrList(const char* key, std::vector<std::string>* out, size_t max_items, size_t max_bytes);
  // The field's JSON if it is present, not null and of the wanted type; nullptr otherwise (and an error
  // when it is present with another type).
  const nlohmann::json* Object(const char* key);
  const nlohmann::json* Array(const char* key);
  // Present and not null, whatever its type.
  const nlohmann::json* Any(const char* key);

  // A reader of a nested object ("messages[2]."), sharing this reader's error slot. Reads through it
  // report `path` + key; when `obj` is not an object at all, it fails at once with "'<path>' must be an
  // object" (so the caller need not check).
  FieldReader Child(const nlohmann::json& obj, const std::string& path);

  void Fail(const std::string& param, const std::string& message);
  std::string Path(const std::string& key) const { return path_ + key; }
  bool ok() const { return !error_->has_value(); }

 private:
  const nlohmann::json* Get(const char* key) const;
  void WrongType(const char* key, const char* wanted);

  const nlohmann::json& obj_;
  std::string path_;
  std::optional<ApiError>* error_;
};

// "base[i]": the path of an array element in error messages.
std::string IndexPath(const std::string& base, size_t i);

// A tool call's `arguments` into *out as JSON text: a string (kept as sent: a model's arguments need not
// be JSON, and clients send the model's turn back as it was) or an object (dumped). A string holding JSON
// nested deeper than kMaxJsonDepth is refused, because the template is handed the parsed value.
// Absent: a 400 when `required`, else *out is left as it is.
void ReadArgumentsText(FieldReader& f, bool required, std::string* out);

}  // namespace ember::server
