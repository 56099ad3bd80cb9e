// JSON text -> nlohmann::ordered_json in time linear in the text. ordered_json::parse finds each new
// key by scanning the object's keys (ordered_map is a vector), so an object of n keys costs n^2/2
// string compares: 20,000 properties took most of a second before the schema compiler saw them. This
// builder indexes the keys of large objects in a hash map while parsing. Same result as
// ordered_json::parse (a repeated key keeps its first position and its last value).
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ember::grammar {

// nullopt when `text` is not valid JSON. Nesting is the caller's to bound (util/json_limited.h).
std::optional<nlohmann::ordered_json> ParseOrderedJson(std::string_view text);

}  // namespace ember::grammar
