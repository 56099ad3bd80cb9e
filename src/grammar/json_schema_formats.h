// String `format`s the JSON Schema compiler enforces (internal to grammar/): date, time, date-time (RFC
// 3339; February stops at the 28th and seconds at 59, a subset that is valid every year), uuid, email (a
// plain subset of addresses), ipv4.
#pragma once

#include <string>
#include <string_view>

namespace ember::grammar::schema_formats {

// GBNF for the string content (between the quotes) of `format`; empty when the format is not supported.
std::string FormatContent(std::string_view format);

}  // namespace ember::grammar::schema_formats
