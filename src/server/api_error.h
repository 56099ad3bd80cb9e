// Client-facing errors, and their two wire shapes:
//   OpenAI:    {"error":{"message":..,"type":"invalid_request_error","param":"field","code":null}}
//   Anthropic: {"type":"error","error":{"type":"invalid_request_error","message":..}}
// Every handler reports failure as an ApiError value; the route table renders it in the route's flavor.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "util/status.h"

namespace ember::server {

enum class ApiFlavor { kOpenAI, kAnthropic };

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the offending request field ("messages[1].content"), "" when none
  // (The members below have initializers, so the many 4-member literals stay valid.)
  std::string code = {};            // OpenAI's machine-readable `code` ("model_not_found"); "" -> null
  std::string anthropic_type = {};  // the Anthropic flavor's type when it differs from `type` ("" = same)
  int retry_after_s = 0;            // > 0: a Retry-After header (the SDKs wait that long before retrying)
};

ApiError InvalidRequest(std::string message, std::string param = "");
ApiError AuthenticationError(std::string message);
ApiError NotFoundError(std::string message);
ApiError TooLarge(std::string message);
ApiError RateLimited(std::string message);
ApiError Overloaded(std::string message);
// A Status from the backend: kInvalidArgument -> 400, kUnimplemented -> 501, kResourceExhausted -> 429,
// anything else -> 500.
ApiError FromStatus(const Status& status);

nlohmann::json ErrorBody(const ApiError& error, ApiFlavor flavor);

// A value or the ApiError that explains why there is none.
template <typename T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace ember::server
