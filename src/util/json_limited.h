// The one way ember parses JSON text it did not write: request bodies, tool-call arguments sent as
// strings, JSON the model produced, the manifests and configs of other tools' model stores.
// nlohmann's parser is iterative, but copying, dumping and converting a value recurse once per nesting
// level, so an unbounded depth (`{"a":{"a":...}}` 100,000 deep fits in 600 KB) would overflow the
// stack later. The limit is enforced while parsing: an over-deep
// value is never built.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace ember {

// Containers (objects and arrays) nested in one JSON text, the outermost one included.
inline constexpr int kMaxJsonDepth = 64;

// kInvalidArgument: not JSON (the parser's message, with its byte offset).
// kResourceExhausted: nested deeper than kMaxJsonDepth (the message names the limit).
StatusOr<nlohmann::json> ParseJsonLimited(std::string_view text);
// Order-keeping objects insert by linear search, so ParseOrderedJsonLimited also bounds the sum over
// its objects of keys^2/2 (about 0.1 s of compares; one object of 5,792 keys, or many smaller ones).
inline constexpr uint64_t kMaxOrderedKeyWork = uint64_t{1} << 24;

// The same for templates, which see object keys in the order the client wrote them
// (kResourceExhausted also past kMaxOrderedKeyWork).
StatusOr<nlohmann::ordered_json> ParseOrderedJsonLimited(std::string_view text);

}  // namespace ember
