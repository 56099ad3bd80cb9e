// libFuzzer target for llama-server's native bodies as the routes run them: the body through
// ParseJsonBody, then ParseLlamaCompletion (/completion) or ParseLlamaTokenize and ParseLlamaDetokenize
// (/tokenize, /detokenize), the error rendered in the OpenAI shape (request_fuzz_util.h).
#include "server/llama_request.h"
#include "server/request_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::server;
  return fuzz::FuzzRequestPath(
      data, size, ApiFlavor::kOpenAI, "/completion", "/tokenize",
      [](const nlohmann::json& body, bool completion) -> ApiResult<CompletionRequest> {
        if (completion) {
          LlamaDefaults d;
          d.parallel = 4;
          ApiResult<LlamaCompletion> c = ParseLlamaCompletion(body, d);
          if (!c.ok()) return c.error();
          CompletionRequest req = std::move(c.value().req);
          for (const PromptPiece& p : c.value().prompt) {
            if (p.is_text) req.prompt_text += p.text;
            else req.prompt_ids.push_back(p.id);
          }
          return req;
        }
        ApiResult<std::vector<int32_t>> ids = ParseLlamaDetokenize(body);  // the same bodies, both parsers
        if (!ids.ok()) fuzz::CheckError(ids.error(), ApiFlavor::kOpenAI);
        ApiResult<LlamaTokenize> t = ParseLlamaTokenize(body);
        if (!t.ok()) return t.error();
        CompletionRequest req;
        req.prompt_text = t.value().content;
        req.prompt_ids = ids.ok() ? ids.value() : std::vector<int32_t>{};
        (void)PieceJson(t.value().content);
        return req;
      });
}
