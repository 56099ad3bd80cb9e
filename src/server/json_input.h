// The one way the server parses JSON text it did not write: request bodies, tool-call arguments sent
// as strings, and JSON the model produced. nlohmann's parser is iterative, but copying, dumping and
// converting a value recurse once per nesting level, so an unbounded depth (`{"a":{"a":...}}` 100,000
// deep fits in 600 KB) would overflow the stack later. The limit is enforced while parsing: an over-deep
// value is never built.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace ember::server {

// Containers (objects and arrays) nested in one JSON text, the outermost one included.
inline constexpr int kMaxJsonDepth = 64;

// kInvalidArgument: not JSON (the parser's message, with its byte offset).
// kResourceExhausted: nested deeper than kMaxJsonDepth (the message names the limit).
StatusOr<nlohmann::json> ParseJsonLimited(std::string_view text);
// The same for templates, which see object keys in the order the client wrote them.
StatusOr<nlohmann::ordered_json> ParseOrderedJsonLimited(std::string_view text);

}  // namespace ember::server
