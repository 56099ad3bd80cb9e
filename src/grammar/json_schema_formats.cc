#include "grammar/json_schema_formats.h"

namespace ember::grammar::schema_formats {

namespace {

std::string Date() {
  return "[0-9]{4} \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
         "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
         "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]))";
}

std::string Time() {
  const std::string hour = "([01] [0-9] | \"2\" [0-3])", minute = "[0-5] [0-9]";
  return hour + " \":\" " + minute + " \":\" " + minute + " (\".\" [0-9]{1,6})? (\"Z\" | [+\\x2D] " + hour +
         " \":\" " + minute + ")";
}

}  // namespace

std::string FormatContent(std::string_view format) {
  if (format == "date") return Date();
  if (format == "time") return Time();
  if (format == "date-time") return Date() + " \"T\" " + Time();
  if (format == "uuid") {
    return "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}";
  }
  if (format == "email") {
    return "[a-zA-Z0-9_+\\x2D]{1,32} (\".\" [a-zA-Z0-9_+\\x2D]{1,32}){0,3} \"@\" ([a-z0-9]{1,20} \".\"){1,3} "
           "[a-z]{2,10}";
  }
  if (format == "ipv4") {
    const std::string octet = "(\"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9]? [0-9])";
    return octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet;
  }
  return "";
}

}  // namespace ember::grammar::schema_formats
