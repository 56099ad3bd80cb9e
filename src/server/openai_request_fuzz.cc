// libFuzzer target for the OpenAI request path as the routes run it: the body through ParseJsonBody,
// then ParseOpenAIChatRequest (/v1/chat/completions) or ParseOpenAICompletionRequest (/v1/completions),
// then the error rendered as the dispatcher renders it (request_fuzz_util.h).
#include "server/request_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::server;
  return fuzz::FuzzRequestPath(data, size, ApiFlavor::kOpenAI, "/v1/chat/completions", "/v1/completions",
                               [](const nlohmann::json& body, bool chat) {
                                 return chat ? ParseOpenAIChatRequest(body) : ParseOpenAICompletionRequest(body);
                               });
}
