#include "grammar/compile_budget.h"

#include <string>
#include <utility>

namespace ember::grammar {

namespace {
int64_t Micros(std::chrono::milliseconds ms) { return std::chrono::duration_cast<std::chrono::microseconds>(ms).count(); }
}  // namespace

CompileBudget::CompileBudget(CompileLimits limits, std::function<bool()> cancelled, Env* env)
    : limits_(limits), cancelled_(std::move(cancelled)), env_(env != nullptr ? env : Env::Default()) {
  const int64_t now = env_->MonotonicMicros();
  deadline_us_ = now + Micros(limits_.max_time);
  next_poll_us_ = now;
}

Status CompileBudget::Step() {
  if (!status_.ok()) return status_;
  // Every unit is microseconds of work at most, so 64 of them keep the clock (and the probe) fresh.
  if ((++steps_ & 63u) != 0) return status_;
  return CheckClock();
}

Status CompileBudget::AddRule(size_t bytes) {
  if (!status_.ok()) return status_;
  ++rules_;
  bytes_ += bytes;
  if (rules_ > limits_.max_rules) {
    status_ = InvalidArgument("schema too large: its grammar needs more than " + std::to_string(limits_.max_rules) +
                              " rules (the limit)");
  } else if (bytes_ > limits_.max_bytes) {
    status_ = InvalidArgument("schema too large: its grammar exceeds " + std::to_string(limits_.max_bytes) +
                              " bytes (the limit)");
  }
  return Step();
}

Status CompileBudget::CheckClock() {
  const int64_t now = env_->MonotonicMicros();
  if (cancelled_ && now >= next_poll_us_) {
    next_poll_us_ = now + Micros(kPollInterval);
    if (cancelled_()) {
      was_cancelled_ = true;
      status_ = FailedPrecondition("schema compilation cancelled: the client left");
      return status_;
    }
  }
  if (now > deadline_us_) {
    status_ = InvalidArgument("schema too complex: compiling it takes more than " +
                              std::to_string(limits_.max_time.count()) + " ms (the limit)");
  }
  return status_;
}

}  // namespace ember::grammar
