// JSON <-> template values: the render context comes in as JSON (parsed into native values once, at the
// edge), and `tojson` / printing a container goes back out in the reference renderer's exact layout.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>

#include "template/limits.h"
#include "template/value.h"
#include "util/status.h"

namespace ember::jinja {

// Converts a JSON document to a template value the way the reference renderer sees a JS object built by
// JSON.parse: integral numbers become integers (1.0 -> 1); object keys that are array indices ("0",
// "12") come first in ascending order, the rest keep their order (JS property order). Documents nested
// deeper than limits.max_depth (arrays/objects in each other; a scalar is depth 0) or with a container
// longer than limits.max_items are refused: the JSON may be request data.
StatusOr<Value> FromJson(const nlohmann::ordered_json& j, const Limits& limits);

struct JsonOptions {
  int indent = 0;              // 0 = single line; like the reference, indent=0 also means single line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // (item, key)
  bool undefined_as_null = true;  // printing a container writes `undefined`, tojson writes `null`
};

// json.dumps-style text: ", " and ": " separators by default ("," and ": " with an indent).
// Errors for values JSON cannot hold (functions, tuples, as in the reference), for a namespace that
// contains itself, for nesting deeper than limits.max_depth and for text longer than
// limits.max_string_bytes (shared sublists can make the text exponentially longer than the value).
StatusOr<std::string> ToJson(const Value& v, const JsonOptions& opts, const Limits& limits);

}  // namespace ember::jinja
