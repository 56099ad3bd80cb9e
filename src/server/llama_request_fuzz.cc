// libFuzzer target for llama-server's native bodies as the routes run them: the body through
// ParseJsonBody, then ParseLlamaCompletion (/completion) or ParseLlamaTokenize and ParseLlamaDetokenize
// (/tokenize, /detokenize), the error rendered in the OpenAI shape (request_fuzz_util.h). The body's
// `model` goes through ModelField and a several-models router's selection (model_router.h), whose
// errors echo the client's name: bounded, never a crash.
#include "server/fake_model_loader.h"
#include "server/llama_request.h"
#include "server/model_router.h"
#include "server/model_select.h"
#include "server/request_fuzz_util.h"

namespace {

// Fake models "a" and "b" (loaded on first use, kept), and "c", which cannot run.
ember::server::ModelRouter& Router() {
  using namespace ember::server;
  static FakeModelLoader loader(FakeModelLoader::Options{});
  static ModelRouter router([] {
    std::vector<ModelSpec> specs = loader.Specs({"a", "b", "c"});
    specs[2].runnable = false;
    specs[2].why_not = "not a model";
    return specs;
  }(), &loader, ModelRouter::Options{});
  return router;
}

void SelectModel(const nlohmann::json& body) {
  using namespace ember::server;
  ApiResult<std::string> name = ModelField(body);
  if (!name.ok()) return fuzz::CheckError(name.error(), ApiFlavor::kOpenAI);
  Acquired got = Router().Acquire(name.value());
  if (got.ok() != (name.value() == "a" || name.value() == "b")) __builtin_trap();
  if (!got.ok() && (got.message.empty() || got.message.size() > 1024)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember::server;
  return fuzz::FuzzRequestPath(
      data, size, ApiFlavor::kOpenAI, "/completion", "/tokenize",
      [](const nlohmann::json& body, bool completion) -> ApiResult<CompletionRequest> {
        SelectModel(body);
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
