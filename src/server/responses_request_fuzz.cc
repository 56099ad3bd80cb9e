// libFuzzer target for what the Responses API reads from outside: byte 0 even, a POST /v1/responses body
// through ParseJsonBody and ParseResponsesRequest (errors must be 4xx with a message, never an exception);
// odd, a response store file through DecodeStoredResponse (a file in the cache directory is untrusted: it
// must be refused or decode into an entry that encodes and decodes back to itself).
#include "server/request_fuzz_util.h"
#include "server/response_store.h"
#include "server/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::server;
  if (size > 0 && (data[0] & 1) == 1) {
    const std::string_view file(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::string id = "resp_" + std::string(32, '0');
    ember::StatusOr<StoredResponse> r = DecodeStoredResponse(file, id);
    if (!r.ok()) return 0;
    ember::StatusOr<StoredResponse> again = DecodeStoredResponse(EncodeStoredResponse(r.value()), id);
    if (!again.ok() || again->response != r->response || again->conversation.size() != r->conversation.size()) {
      __builtin_trap();
    }
    return 0;
  }
  return fuzz::FuzzRequestPath(data, size, ApiFlavor::kOpenAI, "/v1/responses", "/v1/responses",
                               [](const nlohmann::json& body, bool) -> ApiResult<CompletionRequest> {
                                 ApiResult<ResponsesRequest> r = ParseResponsesRequest(body);
                                 if (!r.ok()) return r.error();
                                 (void)DumpJson(r.value().metadata);
                                 (void)DumpJson(r.value().tools);
                                 return r.value().completion;
                               });
}
