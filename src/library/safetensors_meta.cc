#include "library/safetensors_meta.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "util/json_limited.h"

namespace ember::library {
namespace {

using nlohmann::json;

// Distinct dtype names one header may use (the format has about a dozen).
constexpr size_t kMaxDtypes = 64;

// Reads a safetensors header as a stream of JSON events, building nothing but the totals: a header may
// be 100 MB, and a DOM of that much hostile JSON would take gigabytes. Shape accepted:
//   { "<tensor>": { "dtype": "<s>", "shape": [n, ...], "data_offsets": [b, e] }, ..., "__metadata__": {...} }
// Keys a tensor does not need, and the metadata, are skipped whatever they hold.
class HeaderReader final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return Scalar("null"); }
  bool boolean(bool) override { return Scalar("a boolean"); }
  bool number_integer(number_integer_t) override { return Scalar("a negative number"); }
  bool number_float(number_float_t, const string_t&) override { return Scalar("a fraction or a huge number"); }
  bool binary(binary_t&) override { return Scalar("binary"); }
  bool number_unsigned(number_unsigned_t v) override {
    if (Skipping() || depth_ != 3) return Scalar("a number");
    std::vector<uint64_t>& list = field_ == Field::kShape ? shape_ : offsets_;
    const size_t cap = field_ == Field::kShape ? kMaxSafetensorsDims : 2;
    if (list.size() >= cap) return Fail(FieldName() + " has more than " + std::to_string(cap) + " entries");
    list.push_back(v);
    return true;
  }
  bool string(string_t& s) override {
    if (Skipping()) return true;
    if (depth_ == 2 && field_ == Field::kDtype) {
      if (s.empty()) return Fail(FieldName() + " is empty");  // a dtype is a name ("BF16", "F32", ...)
      dtype_ = s;
      have_dtype_ = true;
      return true;
    }
    return Scalar("a string");
  }
  bool key(string_t& k) override {
    if (Skipping()) return true;
    if (depth_ == 1) {
      tensor_ = k;
    } else if (depth_ == 2) {
      field_ = k == "dtype" ? Field::kDtype : k == "shape" ? Field::kShape : k == "data_offsets" ? Field::kOffsets
                                                                                                 : Field::kOther;
      // A repeated field is refused (as the format's reference reader does), not merged or overwritten.
      const bool seen = field_ == Field::kDtype ? have_dtype_ : field_ == Field::kShape ? have_shape_
                        : field_ == Field::kOffsets                                      ? have_offsets_
                                                                                          : false;
      if (seen) return Fail(FieldName() + " appears twice");
    }
    return true;
  }
  bool start_object(std::size_t) override { return Open(/*object=*/true); }
  bool start_array(std::size_t) override { return Open(/*object=*/false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    return Fail(e.what());
  }

  const std::string& error() const { return error_; }
  const SafetensorsSummary& summary() const { return summary_; }

 private:
  enum class Field { kNone, kDtype, kShape, kOffsets, kOther };

  bool Skipping() const { return skip_from_ > 0; }
  std::string FieldName() const {
    const char* f = field_ == Field::kShape ? "shape" : field_ == Field::kOffsets ? "data_offsets" : "dtype";
    return "tensor '" + tensor_ + "': " + f;
  }
  bool Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  // A scalar where the shape above allows none (a skipped value's scalars are fine).
  bool Scalar(const char* what) {
    if (Skipping()) return true;
    if (depth_ == 0) return Fail("the header is not a JSON object");
    if (depth_ == 1) {
      if (tensor_ == "__metadata__") return true;
      return Fail("tensor '" + tensor_ + "' is " + what + ", not an object");
    }
    if (field_ == Field::kOther) return true;
    return Fail(FieldName() + " holds " + what);
  }
  bool Open(bool object) {
    if (++depth_ > kMaxJsonDepth) return Fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (Skipping()) return true;
    if (depth_ == 1) return object ? true : Fail("the header is not a JSON object");
    if (depth_ == 2) {
      if (tensor_ == "__metadata__") return skip_from_ = depth_, true;
      if (!object) return Fail("tensor '" + tensor_ + "' is an array, not an object");
      if (++summary_.tensors > kMaxSafetensorsTensors) {
        return Fail("more than " + std::to_string(kMaxSafetensorsTensors) + " tensors");
      }
      shape_.clear();
      offsets_.clear();
      have_dtype_ = have_shape_ = have_offsets_ = false;
      field_ = Field::kNone;
      return true;
    }
    if (depth_ > 3) return Fail(FieldName() + " nests arrays or objects");
    // depth 3: the value of a tensor's field.
    if (field_ == Field::kOther) return skip_from_ = depth_, true;
    if (object || field_ == Field::kDtype) return Fail(FieldName() + " has the wrong type");
    (field_ == Field::kShape ? have_shape_ : have_offsets_) = true;
    return true;
  }
  bool Close() {
    const int closing = depth_--;
    if (Skipping()) {
      if (closing == skip_from_) skip_from_ = 0;
      return true;
    }
    return closing == 2 ? EndTensor() : true;
  }
  bool EndTensor() {
    if (!have_dtype_ || !have_shape_ || !have_offsets_) {
      return Fail("tensor '" + tensor_ + "' lacks dtype, shape or data_offsets");
    }
    if (offsets_.size() != 2 || offsets_[0] > offsets_[1]) {
      return Fail("tensor '" + tensor_ + "': data_offsets is not [begin, end] with begin <= end");
    }
    uint64_t elements = 1;
    for (uint64_t d : shape_) {
      if (__builtin_mul_overflow(elements, d, &elements)) return Fail("tensor '" + tensor_ + "': shape overflows");
    }
    uint64_t& bytes = summary_.bytes_by_dtype[dtype_];
    if (summary_.bytes_by_dtype.size() > kMaxDtypes) return Fail("more than " + std::to_string(kMaxDtypes) + " dtypes");
    if (__builtin_add_overflow(summary_.parameters, elements, &summary_.parameters) ||
        __builtin_add_overflow(bytes, offsets_[1] - offsets_[0], &bytes)) {
      return Fail("tensor totals overflow");
    }
    return true;
  }

  int depth_ = 0;
  int skip_from_ = 0;  // > 0: inside a value being skipped, opened at this depth
  std::string tensor_;
  Field field_ = Field::kNone;
  std::string dtype_;
  std::vector<uint64_t> shape_, offsets_;
  bool have_dtype_ = false, have_shape_ = false, have_offsets_ = false;
  SafetensorsSummary summary_;
  std::string error_;
};

// Typed optional members of a config object: absent is empty, present with another type is an error.
Status ReadString(const json& obj, const char* key, std::string* out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return InvalidArgument(std::string("config.json: '") + key + "' is not a string");
  *out = it->get_ref<const std::string&>();
  return Status::Ok();
}

Status ReadContext(const json& obj, int64_t* out) {
  const auto it = obj.find("max_position_embeddings");
  if (it == obj.end() || it->is_null()) return Status::Ok();
  // Positive and below 2^40: a context past that is not a number any model means.
  if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() >= (uint64_t{1} << 40)) {
    return InvalidArgument("config.json: 'max_position_embeddings' is not a positive integer below 2^40");
  }
  *out = static_cast<int64_t>(it->get<uint64_t>());
  return Status::Ok();
}

}  // namespace

StatusOr<uint64_t> SafetensorsHeaderLength(const uint8_t* first8, uint64_t file_size) {
  if (file_size < 8) return Corrupt("shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (n > kMaxSafetensorsHeaderBytes) {
    return Corrupt("header length " + std::to_string(n) + " exceeds the limit of " +
                   std::to_string(kMaxSafetensorsHeaderBytes));
  }
  if (n > file_size - 8) return Corrupt("header length " + std::to_string(n) + " runs past the end of the file");
  return n;
}

StatusOr<SafetensorsSummary> ParseSafetensorsHeader(std::string_view header) {
  HeaderReader reader;
  if (!json::sax_parse(header.begin(), header.end(), &reader)) {
    return Corrupt("safetensors header: " + reader.error());
  }
  return reader.summary();
}

std::string DominantDtype(const SafetensorsSummary& s) {
  std::string best;
  uint64_t most = 0;
  for (const auto& [dtype, bytes] : s.bytes_by_dtype) {
    if (best.empty() || bytes > most) {
      best = dtype;
      most = bytes;
    }
  }
  return best;
}

StatusOr<HfModelConfig> ParseHfConfig(std::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return InvalidArgument("config.json is larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  }
  EMBER_ASSIGN_OR_RETURN(json j, ParseJsonLimited(text));
  if (!j.is_object()) return InvalidArgument("config.json is not a JSON object");
  HfModelConfig c;
  EMBER_RETURN_IF_ERROR(ReadString(j, "model_type", &c.model_type));
  EMBER_RETURN_IF_ERROR(ReadContext(j, &c.context_length));
  if (const auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return InvalidArgument("config.json: 'architectures' is not an array");
    if (!it->empty()) {
      if (!it->front().is_string()) return InvalidArgument("config.json: 'architectures' holds a non-string");
      c.architecture = it->front().get<std::string>();
    }
  }
  // Multimodal configs keep the language model's numbers in text_config.
  if (const auto it = j.find("text_config"); it != j.end() && it->is_object()) {
    if (c.context_length == 0) EMBER_RETURN_IF_ERROR(ReadContext(*it, &c.context_length));
    if (c.model_type.empty()) EMBER_RETURN_IF_ERROR(ReadString(*it, "model_type", &c.model_type));
  }
  if (const auto it = j.find("quantization_config"); it != j.end() && it->is_object()) {
    EMBER_RETURN_IF_ERROR(ReadString(*it, "quant_method", &c.quant_method));
  }
  return c;
}

}  // namespace ember::library
