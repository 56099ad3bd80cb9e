#include "server/sse_writer.h"

#include <nlohmann/json.hpp>

namespace ember::server {

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string SseData(const nlohmann::json& payload) { return "data: " + DumpJson(payload) + "\n\n"; }

std::string SseEvent(std::string_view event, const nlohmann::json& payload) {
  std::string out = "event: ";
  out.append(event);
  out += "\ndata: " + DumpJson(payload) + "\n\n";
  return out;
}

bool SseWriter::Raw(std::string_view bytes) {
  if (!ok_) return false;
  ok_ = write_(bytes);
  return ok_;
}

}  // namespace ember::server
