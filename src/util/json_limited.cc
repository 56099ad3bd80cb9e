// Depth-limited JSON parsing (json_limited.h).
#include "util/json_limited.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace ember {
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
  bool key(typename Base::string_t&) override { return ++members_[depth_], true; }
  bool start_object(std::size_t) override { return Open(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_object() override {
    // An ordered object finds each new key by a linear scan of the keys before it: n keys cost n^2/2
    // compares (200,000 keys took 94 s). The order-keeping parse is refused past a bounded total.
    const uint64_t n = members_[depth_];
    key_work_ += n * n / 2;
    too_many_keys_ = kOrdered && key_work_ > kMaxOrderedKeyWork;
    return --depth_, !too_many_keys_;
  }
  bool end_array() override { return --depth_, true; }
  // Syntax errors, and out_of_range for numbers beyond double (1e999).
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

  bool too_deep() const { return too_deep_; }
  bool too_many_keys() const { return too_many_keys_; }
  const std::string& error() const { return error_; }

 private:
  static constexpr bool kOrdered = std::is_same_v<Json, nlohmann::ordered_json>;
  bool Open() {
    too_deep_ = ++depth_ > kMaxJsonDepth;
    if (!too_deep_) members_[depth_] = 0;
    return !too_deep_;
  }
  int depth_ = 0;
  uint64_t members_[kMaxJsonDepth + 1] = {};
  uint64_t key_work_ = 0;
  bool too_deep_ = false;
  bool too_many_keys_ = false;
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
    if (check.too_many_keys()) {
      return ResourceExhausted("JSON objects too large to keep in order (the sum of keys^2/2 over its objects exceeds " +
                               std::to_string(kMaxOrderedKeyWork) + ")");
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

}  // namespace ember
