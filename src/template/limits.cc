#include "template/limits.h"

namespace ember::jinja {

Status StringTooLong(size_t bytes, const Limits& limits) {
  return ResourceExhausted("max_string_bytes exceeded: a string of " + std::to_string(bytes) +
                           " bytes is longer than the limit of " + std::to_string(limits.max_string_bytes));
}

Status TooManyItems(size_t n, const Limits& limits) {
  return ResourceExhausted("max_items exceeded: a list or dict of " + std::to_string(n) +
                           " items is longer than the limit of " + std::to_string(limits.max_items));
}

Status TooDeep(const Limits& limits) {
  return ResourceExhausted("max_depth exceeded: lists/dicts nested deeper than " + std::to_string(limits.max_depth));
}

Status Budget::CheckString(size_t bytes) const {
  return bytes > limits_.max_string_bytes ? StringTooLong(bytes, limits_) : Status::Ok();
}

Status Budget::CheckItems(size_t n) const {
  return n > limits_.max_items ? TooManyItems(n, limits_) : Status::Ok();
}

Status Budget::CheckDepth(int depth) const { return depth > limits_.max_depth ? TooDeep(limits_) : Status::Ok(); }

Status Budget::StepsExceeded() const {
  return ResourceExhausted("max_steps exceeded: the render took more than " + std::to_string(limits_.max_steps) +
                           " steps");
}

}  // namespace ember::jinja
