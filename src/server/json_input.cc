// The request-body helper every JSON route calls (the depth-limited parser is util/json_limited.h).
#include "server/json_input.h"

#include "server/routes.h"

namespace ember::server {

ApiResult<nlohmann::json> ParseJsonBody(const httplib::Request& req) {
  StatusOr<nlohmann::json> body = ParseJsonLimited(req.body);
  if (body.ok()) return std::move(body).value();
  if (body.status().code() == StatusCode::kResourceExhausted) {
    return InvalidRequest("request body: " + body.status().message());
  }
  return InvalidRequest("request body is not valid JSON: " + body.status().message());
}

}  // namespace ember::server
