#include "server/model_select.h"

#include <nlohmann/json.hpp>

#include "server/request_fields.h"

namespace ember::server {

ApiError ModelNotFound(std::string message) {
  return ApiError{404, "invalid_request_error", std::move(message), "model", "model_not_found", "not_found_error"};
}

ApiResult<ModelLease> AcquireModel(ServerContext& ctx, const std::string& name) {
  Acquired got = ctx.models->Acquire(name);
  switch (got.error) {
    case AcquireError::kNone: return std::move(got.lease);
    case AcquireError::kUnknownModel: return ModelNotFound(std::move(got.message));
    case AcquireError::kNoModelNamed: return InvalidRequest(got.message, "model");
    case AcquireError::kNotRunnable:
      return ApiError{400, "invalid_request_error", got.message, "model", "model_not_runnable"};
    case AcquireError::kLoadFailed: return ApiError{500, "api_error", got.message, "model", "model_load_failed"};
    case AcquireError::kBusy:
      return ApiError{503, "overloaded_error", got.message, "model", "model_busy", "", /*retry_after_s=*/1};
    case AcquireError::kTooLarge:
      return ApiError{507, "api_error", got.message, "model", "model_too_large"};
    case AcquireError::kStopping: return Overloaded(got.message);
  }
  return ApiError{500, "api_error", "unknown model selection failure", ""};
}

ApiResult<std::string> ModelField(const nlohmann::json& body) {
  std::optional<ApiError> error;
  std::string model;
  if (body.is_object()) FieldReader(body, "", &error).String("model", &model);
  if (error) return *error;
  return model;
}

}  // namespace ember::server
