// Resource limits of one render. A template is code from a model file and its context is request data,
// so either can ask for unbounded work: nested loops, a string doubled in a loop, a list that contains
// itself. Every limit fails the render with ResourceExhausted and a message that names the limit
// ("max_steps exceeded: ..."); nothing grows without bound, and the render never crashes.
//
// Steps: one per evaluated node and per loop iteration, plus the work an operation does on its operands:
// one per list item or dict entry it touches and one per kBytesPerStep bytes of string it reads or writes
// (so `x in big_list`, `big ~ big` and `items | sort` cost what they cost). A render therefore allocates at
// most about max_steps * kBytesPerStep bytes in total. The real templates under tests/template/ take
// well under 1% of the default budget for a 1,000-message conversation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace ember::jinja {

struct Limits {
  uint64_t max_steps = 10'000'000;      // evaluation steps (see above)
  size_t max_output_bytes = 64u << 20;  // the rendered prompt
  size_t max_string_bytes = 32u << 20;  // any one string value (captured blocks and macro output too)
  size_t max_items = 1'000'000;         // any one list, dict or namespace
  int max_depth = 64;                   // lists/dicts nested in each other: context JSON, built values, tojson
  int max_call_depth = 256;             // macro / caller() calls in progress
  int max_nesting = 2000;               // evaluator recursion (expressions and blocks), across all calls:
                                        // ~0.75 KiB of stack each, so 1.5 MiB at most
};

constexpr size_t kBytesPerStep = 32;

// Steps used by a render, for callers that want to see how close a template runs to its budget.
struct RenderStats {
  uint64_t steps = 0;
};

// The step counter and the size checks of one render.
class Budget {
 public:
  explicit Budget(const Limits& limits) : limits_(limits) {}

  const Limits& limits() const { return limits_; }
  uint64_t used() const { return used_; }

  // Charges `n` steps; fails once the total passes max_steps.
  Status Charge(uint64_t n) {
    if (n > limits_.max_steps - used_) {
      used_ = limits_.max_steps;
      return StepsExceeded();
    }
    used_ += n;
    return Status::Ok();
  }
  // Charge for the hot path: false once out of steps (Charge then builds the error).
  bool TryCharge(uint64_t n) {
    if (n > limits_.max_steps - used_) return false;
    used_ += n;
    return true;
  }
  // Steps for reading or writing `bytes` bytes of string.
  Status ChargeBytes(size_t bytes) { return Charge(bytes / kBytesPerStep); }
  // Steps for searching a haystack of `n` bytes for a needle of `m` bytes (worst case n * m).
  Status ChargeSearch(size_t n, size_t m) { return Charge(1 + n / kBytesPerStep * (1 + m / kBytesPerStep)); }

  // Size checks, before an operation builds something that large.
  Status CheckString(size_t bytes) const;
  Status CheckItems(size_t n) const;
  Status CheckDepth(int depth) const;

 private:
  Status StepsExceeded() const;

  const Limits& limits_;
  uint64_t used_ = 0;
};

// The messages, shared by the checks above and by code that has only the Limits (printing values).
Status StringTooLong(size_t bytes, const Limits& limits);
Status TooManyItems(size_t n, const Limits& limits);
Status TooDeep(const Limits& limits);

}  // namespace ember::jinja
