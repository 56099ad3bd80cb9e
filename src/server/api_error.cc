#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace ember::server {

ApiError InvalidRequest(std::string message, std::string param) {
  return {400, "invalid_request_error", std::move(message), std::move(param)};
}
ApiError AuthenticationError(std::string message) { return {401, "authentication_error", std::move(message), ""}; }
ApiError NotFoundError(std::string message) { return {404, "not_found_error", std::move(message), ""}; }
ApiError TooLarge(std::string message) { return {413, "request_too_large", std::move(message), ""}; }
ApiError RateLimited(std::string message) { return {429, "rate_limit_error", std::move(message), ""}; }
ApiError Overloaded(std::string message) { return {503, "overloaded_error", std::move(message), ""}; }

ApiError FromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return InvalidRequest(status.message());
    case StatusCode::kNotFound: return NotFoundError(status.message());
    case StatusCode::kUnimplemented: return {501, "not_implemented_error", status.message(), ""};
    case StatusCode::kResourceExhausted: return RateLimited(status.message());
    default: return {500, "api_error", status.ToString(), ""};
  }
}

nlohmann::json ErrorBody(const ApiError& error, ApiFlavor flavor) {
  using nlohmann::json;
  if (flavor == ApiFlavor::kAnthropic) {
    const std::string& type = error.anthropic_type.empty() ? error.type : error.anthropic_type;
    return json{{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}};
  }
  return json{{"error",
               {{"message", error.message},
                {"type", error.type},
                {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}};
}

}  // namespace ember::server
