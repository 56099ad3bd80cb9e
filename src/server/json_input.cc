// Depth-limited JSON parsing (json_input.h) and the request-body helper every JSON route calls.
#include "server/json_input.h"

#include <string>

#include "server/routes.h"

namespace ember::server {
namespace {

// A SAX pass that only counts open containers and stops at the first one beyond the limit, or at the
// first syntax error. It builds nothing. (nlohmann's parser callback, which could discard over-deep
// values in one pass, rescans the parent array after every element it closes: quadratic in the array's
// length, 10 s for 100,000 small objects. Two linear passes are far cheaper.)
template <class Json>
class DepthCheck final : public nlohmann::json_sax<Json> {
 public:
  using Base = nlohmann::json_sax<Json>;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(typename Base::number_integer_t) override { return true; }
  bool number_unsigned(typename Base::number_unsigned_t) override { return true; }
  bool number_float(typename Base::number_float_t, const typename Base::string_t&) override { return true; }
  bool string(typename Base::string_t&) override { return true; }
  bool binary(typename Base::binary_t&) override { return true; }
  bool key(typename Base::string_t&) override { return true; }
  bool start_object(std::size_t) override { return Open(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  // Syntax errors, and out_of_range for numbers beyond double (1e999).
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  bool Open() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    return !too_deep_;
  }
  int depth_ = 0;
  bool too_deep_ = false;
  std::string error_;
};

template <class Json>
StatusOr<Json> ParseLimited(std::string_view text) {
  DepthCheck<Json> check;
  if (!Json::sax_parse(text.begin(), text.end(), &check)) {
    if (check.too_deep()) {
      return ResourceExhausted("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                               " levels of objects and arrays (the limit)");
    }
    return InvalidArgument(check.error());
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(e.what());  // not expected after the check; still never an exception
  }
}

}  // namespace

StatusOr<nlohmann::json> ParseJsonLimited(std::string_view text) { return ParseLimited<nlohmann::json>(text); }

StatusOr<nlohmann::ordered_json> ParseOrderedJsonLimited(std::string_view text) {
  return ParseLimited<nlohmann::ordered_json>(text);
}

ApiResult<nlohmann::json> ParseJsonBody(const httplib::Request& req) {
  StatusOr<nlohmann::json> body = ParseJsonLimited(req.body);
  if (body.ok()) return std::move(body).value();
  if (body.status().code() == StatusCode::kResourceExhausted) {
    return InvalidRequest("request body: " + body.status().message());
  }
  return InvalidRequest("request body is not valid JSON: " + body.status().message());
}

}  // namespace ember::server
