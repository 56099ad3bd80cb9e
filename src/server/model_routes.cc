// GET /v1/models, GET /v1/models/{id} (OpenAI) and llama-server's GET /models. With one model: that
// model, as before. With several: every model the server knows, loaded or not, with ember's fields
// (state, runnable, arch, quant, size) beside OpenAI's; listing loads nothing.
#include <algorithm>

#include "server/model_select.h"
#include "server/path_redaction.h"
#include "server/routes.h"

namespace ember::server {

using nlohmann::json;

json ModelStatusJson(const ModelStatus& m, int64_t created) {
  const std::string error = WithoutPaths(m.spec.runnable ? m.last_error : m.spec.why_not);
  return json{{"id", m.spec.name},
              {"object", "model"},
              {"created", created},
              {"owned_by", "ember"},
              {"context_length", m.spec.context_length},
              {"state", ModelStateName(m.state)},
              {"loaded", m.state == ModelState::kLoaded},
              {"runnable", m.spec.runnable},
              {"source", m.spec.source},
              {"arch", m.spec.arch},
              {"quant", m.spec.quant},
              {"size_bytes", m.spec.size_bytes},
              {"parameters", m.spec.parameters},
              {"error", error.empty() ? json(nullptr) : json(error)}};
}

namespace {

// The one model of single-model mode, as /v1/models has always shown it.
json SingleModelJson(ServerContext& ctx) {
  std::vector<ModelLease> one = ctx.models->LeaseLoaded();
  return json{{"id", ctx.model_id},
              {"object", "model"},
              {"created", ctx.UnixSeconds()},
              {"owned_by", "ember"},
              {"context_length", one.at(0).backend().context_length()}};
}

json ModelList(ServerContext& ctx) {
  json data = json::array();
  if (!ctx.models->multi()) {
    data.push_back(SingleModelJson(ctx));
  } else {
    for (const ModelStatus& m : ctx.models->List()) data.push_back(ModelStatusJson(m, ctx.UnixSeconds()));
  }
  return json{{"object", "list"}, {"data", std::move(data)}};
}

std::optional<ApiError> RetrieveModel(ServerContext& ctx, const std::string& id, httplib::Response& res) {
  if (!ctx.models->multi()) {
    const std::vector<std::string>& aliases = ctx.options.model_aliases;
    if (id == ctx.model_id || std::find(aliases.begin(), aliases.end(), id) != aliases.end()) {
      SetJson(res, SingleModelJson(ctx));
      return std::nullopt;
    }
  } else {
    for (const ModelStatus& m : ctx.models->List()) {
      if (m.spec.name != id) continue;
      SetJson(res, ModelStatusJson(m, ctx.UnixSeconds()));
      return std::nullopt;
    }
  }
  return ModelNotFound(ctx.models->NotFoundMessage(id));  // what a generation naming it would answer
}

}  // namespace

std::vector<Route> ModelRoutes(ServerContext& ctx) {
  ServerContext* c = &ctx;
  using Req = const httplib::Request&;
  using Res = httplib::Response&;
  Route retrieve{"GET", "/v1/models/", ApiFlavor::kOpenAI, true,
                 [c](Req q, Res s) { return RetrieveModel(*c, q.path.substr(std::string("/v1/models/").size()), s); }};
  retrieve.prefix = true;
  retrieve.nested = true;
  return {
      {"GET", "/v1/models", ApiFlavor::kOpenAI, true,
       [c](Req, Res s) -> std::optional<ApiError> {
         SetJson(s, ModelList(*c));
         return std::nullopt;
       }},
      std::move(retrieve),
      {"GET", "/models", ApiFlavor::kOpenAI, true,
       [c](Req, Res s) -> std::optional<ApiError> {
         if (c->models->multi()) {
           SetJson(s, ModelList(*c));
           return std::nullopt;
         }
         // llama-server's fields: aliases and tags (--alias, --tags).
         json model = SingleModelJson(*c);
         model["aliases"] = c->options.model_aliases.empty() ? json::array({c->model_id}) : json(c->options.model_aliases);
         model["tags"] = c->options.model_tags;
         SetJson(s, {{"object", "list"}, {"data", json::array({model})}});
         return std::nullopt;
       }},
  };
}

}  // namespace ember::server
