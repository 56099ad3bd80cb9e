// A stored response's conversation (the ChatMessages its prompt held, minus `instructions`, plus its own
// reply) as JSON, for the response store's files. Reading is validating: a file is untrusted input (a
// damaged or planted file must be refused, never crash), so every field goes through FieldReader.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "server/backend.h"
#include "util/status.h"

namespace ember::server {

nlohmann::json ConversationToJson(const std::vector<ChatMessage>& messages);
// kCorrupt naming the first bad field when `j` is not what ConversationToJson writes.
StatusOr<std::vector<ChatMessage>> ConversationFromJson(const nlohmann::json& j);

}  // namespace ember::server
