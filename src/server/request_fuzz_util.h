// What the two request fuzzers (openai_request_fuzz.cc, anthropic_request_fuzz.cc) share: the route's
// path from bytes to a request — ParseJsonBody, then the API's parser — where the first input byte picks
// one of two routes and the rest is the body. Every byte string must end in a request or a 4xx ApiError
// with a message; an exception escaping would be a 500 from the dispatcher's catch-all, so libFuzzer
// reports it as a crash. Fuzz builds only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/routes.h"
#include "server/sse_writer.h"

namespace ember::server::fuzz {

// The route reads every field of a parsed request before generating: touch them all, so a request that
// parsed "successfully" into dangling or inconsistent state is caught by ASan.
inline size_t Touch(const CompletionRequest& r) {
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

// A parse or validation failure is a client error: 4xx with a message, renderable in the API's shape.
inline void CheckError(const ApiError& e, ApiFlavor flavor) {
  if (e.http_status < 400 || e.http_status >= 500 || e.message.empty()) __builtin_trap();
  (void)DumpJson(ErrorBody(e, flavor));
}

// `parse(body_json, first_route)` is the API's parser for the route the first byte picked.
template <class Parse>
int FuzzRequestPath(const uint8_t* data, size_t size, ApiFlavor flavor, const char* first_path,
                    const char* second_path, Parse parse) {
  if (size == 0) return 0;
  const bool first = (data[0] & 1) == 0;
  httplib::Request http;
  http.method = "POST";
  http.path = first ? first_path : second_path;
  http.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  ApiResult<nlohmann::json> body = ParseJsonBody(http);
  if (!body.ok()) {
    CheckError(body.error(), flavor);
    return 0;
  }
  ApiResult<CompletionRequest> req = parse(body.value(), first);
  if (!req.ok()) {
    CheckError(req.error(), flavor);
    return 0;
  }
  volatile size_t sink = Touch(req.value());
  (void)sink;
  return 0;
}

}  // namespace ember::server::fuzz
