#include "grammar/ordered_json_parse.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::grammar {

namespace {

using json = nlohmann::ordered_json;

// An nlohmann SAX handler that builds the DOM itself (iteratively, like nlohmann's own builder).
class LinearBuilder {
 public:
  // Objects up to this many keys are searched by scanning (cheaper than hashing when small).
  static constexpr size_t kScanKeys = 16;

  bool null() { return Put(json(nullptr)); }
  bool boolean(bool v) { return Put(json(v)); }
  bool number_integer(json::number_integer_t v) { return Put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Put(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return Put(json(v)); }
  bool string(std::string& v) { return Put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(json::object()); }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    json::object_t::Container& obj = f.value->get_ref<json::object_t&>();
    std::optional<size_t> at;
    if (f.index) {
      auto it = f.index->find(k);
      if (it != f.index->end()) at = it->second;
    } else {
      for (size_t i = 0; i < obj.size(); ++i) {
        if (obj[i].first == k) at = i;
      }
    }
    if (!at) {
      at = obj.size();
      if (f.index) f.index->emplace(k, *at);
      obj.emplace_back(std::move(k), nullptr);
      if (!f.index && obj.size() > kScanKeys) {
        f.index = std::make_unique<std::unordered_map<std::string, size_t>>();
        for (size_t i = 0; i < obj.size(); ++i) f.index->emplace(obj[i].first, i);
      }
    }
    slot_ = &obj[*at].second;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  json Take() { return std::move(root_); }

 private:
  struct Frame {
    json* value;
    std::unique_ptr<std::unordered_map<std::string, size_t>> index;  // large objects only
  };

  // Where the next value goes: the root, the end of the open array, or the slot of the last key.
  json* Place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back().value;
    if (top->is_array()) {
      top->get_ref<json::array_t&>().push_back(std::move(v));
      return &top->get_ref<json::array_t&>().back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool Put(json&& v) {
    Place(std::move(v));
    return true;
  }
  bool Open(json&& empty) {
    json* at = Place(std::move(empty));
    stack_.push_back({at, nullptr});
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  json root_;
  std::vector<Frame> stack_;
  json* slot_ = nullptr;
};

}  // namespace

std::optional<json> ParseOrderedJson(std::string_view text) {
  LinearBuilder builder;
  if (!json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json, /*strict=*/true)) {
    return std::nullopt;
  }
  return builder.Take();
}

}  // namespace ember::grammar
