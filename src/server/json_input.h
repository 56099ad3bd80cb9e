// The server's names for the depth-limited JSON parser (util/json_limited.h), the one way it parses
// JSON text it did not write: request bodies, tool-call arguments sent as strings, JSON the model
// produced.
#pragma once

#include "util/json_limited.h"

namespace ember::server {

using ::ember::kMaxJsonDepth;
using ::ember::kMaxOrderedKeyWork;
using ::ember::ParseJsonLimited;
using ::ember::ParseOrderedJsonLimited;

}  // namespace ember::server
