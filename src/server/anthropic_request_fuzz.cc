// libFuzzer target for the Anthropic request path as the routes run it: the body through ParseJsonBody,
// then ParseAnthropicRequest (max_tokens required for /v1/messages, not for /v1/messages/count_tokens),
// then the error rendered in the Anthropic shape. The first input byte picks the route; the rest is the
// body. An exception escaping here would be a 500 from the server's catch-all instead of a 400, so
// libFuzzer reports it as a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace {

using ember::server::ApiError;
using ember::server::ApiFlavor;
using ember::server::ApiResult;
using ember::server::CompletionRequest;

size_t Touch(const CompletionRequest& r) {
  size_t n = r.model.size() + r.user.size() + r.cache_salt.size();
  for (const auto& m : r.messages) {
    n += m.role.size() + m.content.size() + m.tool_call_id.size() + m.name.size();
    for (const auto& c : m.tool_calls) n += c.id.size() + c.name.size() + c.arguments_json.size();
  }
  for (const auto& t : r.tools) n += t.name.size() + t.description.size() + t.parameters_json.size();
  for (const auto& s : r.stop) n += s.size();
  return n;
}

void CheckError(const ApiError& e) {
  if (e.http_status < 400 || e.http_status >= 500 || e.message.empty()) __builtin_trap();
  (void)ember::server::DumpJson(ember::server::ErrorBody(e, ApiFlavor::kAnthropic));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool messages = (data[0] & 1) == 0;
  httplib::Request http;
  http.method = "POST";
  http.path = messages ? "/v1/messages" : "/v1/messages/count_tokens";
  http.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);

  ApiResult<nlohmann::json> body = ember::server::ParseJsonBody(http);
  if (!body.ok()) {
    CheckError(body.error());
    return 0;
  }
  ApiResult<CompletionRequest> req = ember::server::ParseAnthropicRequest(body.value(), /*require_max_tokens=*/messages);
  if (!req.ok()) {
    CheckError(req.error());
    return 0;
  }
  volatile size_t sink = Touch(req.value());
  (void)sink;
  return 0;
}
