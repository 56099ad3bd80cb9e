// libFuzzer target for the Anthropic request path as the routes run it: the body through ParseJsonBody,
// then ParseAnthropicRequest (max_tokens required for /v1/messages, not for /v1/messages/count_tokens),
// then the error rendered in the Anthropic shape (request_fuzz_util.h).
#include "server/request_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::server;
  return fuzz::FuzzRequestPath(data, size, ApiFlavor::kAnthropic, "/v1/messages", "/v1/messages/count_tokens",
                               [](const nlohmann::json& body, bool messages) {
                                 return ParseAnthropicRequest(body, /*require_max_tokens=*/messages);
                               });
}
