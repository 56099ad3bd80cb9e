// libFuzzer target for the OpenAI request path as the routes run it: the body through ParseJsonBody,
// then ParseOpenAIChatRequest (/v1/chat/completions) or ParseOpenAICompletionRequest (/v1/completions),
// then the error rendered as the dispatcher renders it. The first input byte picks the route; the rest
// is the body. Any byte string must end in a request or an ApiError — an exception escaping here would
// be a 500 from the server (the dispatcher's catch-all), so libFuzzer reports it as a crash.
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

// What the route does with a parsed request before generating: it reads every field. Touch them so a
// request that parsed "successfully" into dangling or inconsistent state is caught by ASan.
size_t Touch(const CompletionRequest& r) {
  size_t n = r.model.size() + r.prompt_text.size() + r.prompt_ids.size() + r.user.size() + r.cache_salt.size();
  for (const auto& m : r.messages) {
    n += m.role.size() + m.content.size() + m.tool_call_id.size() + m.name.size();
    for (const auto& c : m.tool_calls) n += c.id.size() + c.name.size() + c.arguments_json.size();
  }
  for (const auto& t : r.tools) n += t.name.size() + t.description.size() + t.parameters_json.size();
  for (const auto& [k, v] : r.template_kwargs) n += k.size() + v.size();
  for (const auto& s : r.stop) n += s.size();
  return n + r.sampling.logit_bias.size();
}

void CheckError(const ApiError& e) {
  // A parse or validation failure is a client error: 4xx, with a message.
  if (e.http_status < 400 || e.http_status >= 500 || e.message.empty()) __builtin_trap();
  (void)ember::server::DumpJson(ember::server::ErrorBody(e, ApiFlavor::kOpenAI));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) == 0;
  httplib::Request http;
  http.method = "POST";
  http.path = chat ? "/v1/chat/completions" : "/v1/completions";
  http.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);

  ApiResult<nlohmann::json> body = ember::server::ParseJsonBody(http);
  if (!body.ok()) {
    CheckError(body.error());
    return 0;
  }
  ApiResult<CompletionRequest> req = chat ? ember::server::ParseOpenAIChatRequest(body.value())
                                          : ember::server::ParseOpenAICompletionRequest(body.value());
  if (!req.ok()) {
    CheckError(req.error());
    return 0;
  }
  volatile size_t sink = Touch(req.value());
  (void)sink;
  return 0;
}
