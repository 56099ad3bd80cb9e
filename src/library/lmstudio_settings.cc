#include "library/lmstudio_settings.h"

#include <nlohmann/json.hpp>

#include "util/json_limited.h"

namespace ember::library {

StatusOr<std::string> ParseLmStudioDownloadsFolder(std::string_view text) {
  if (text.size() > kMaxLmStudioSettingsBytes) {
    return InvalidArgument("settings.json is larger than " + std::to_string(kMaxLmStudioSettingsBytes) + " bytes");
  }
  EMBER_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonLimited(text));
  if (!j.is_object()) return InvalidArgument("settings.json is not a JSON object");
  const auto it = j.find("downloadsFolder");
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument("settings.json: 'downloadsFolder' is not a string");
  return it->get<std::string>();
}

std::string ParseLmStudioHomePointer(std::string_view text) {
  if (text.size() > kMaxHomePointerBytes) return "";
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  if (text.empty() || text.front() != '/') return "";
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\0') return "";
  }
  return std::string(text);
}

}  // namespace ember::library
