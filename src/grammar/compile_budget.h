// What compiling a JSON Schema (or a set of tool schemas) into GBNF may spend: bytes of grammar text,
// rules, and wall time, checked while the compiler runs (not after), plus a cancellation probe (the
// server's "has the client left?") polled every few milliseconds. One budget may be shared by several
// compiles (one per tool of a request), which then share its limits. The first limit hit sticks: every
// later check returns the same error, so a compiler unwinding through many frames reports one cause.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "util/env.h"
#include "util/status.h"

namespace ember::grammar {

struct CompileLimits {
  // Rules defined and their text, counted as the compiler defines them. Some are dropped from the
  // output as unreachable, so these are twice GbnfLimits' max_bytes and max_rules, which the emitted
  // grammar must still meet (the compiler's final check and ParseGbnf).
  size_t max_bytes = 512 * 1024;
  size_t max_rules = 8192;
  // Wall time for the whole compile. Ordinary schemas compile in well under a millisecond; this is the
  // backstop for shapes whose work is not bounded by the two limits above (allOf / oneOf folding).
  std::chrono::milliseconds max_time{250};
};

class CompileBudget {
 public:
  // `env` supplies the clock (null: Env::Default()), so a simulated clock can drive the time limit.
  explicit CompileBudget(CompileLimits limits = {}, std::function<bool()> cancelled = {}, Env* env = nullptr);

  // One unit of compiler work. Cheap: the clock (and `cancelled`) is consulted every 64 units, the
  // probe at most once per kPollInterval.
  Status Step();
  // A unit of work that may be large (copying a sub-schema): the clock is read now.
  Status Poll() { return status_.ok() ? CheckClock() : status_; }
  // One more rule whose text (name and body) is `bytes` long.
  Status AddRule(size_t bytes);
  // The sticky state: OK, or the first limit hit / the cancellation.
  const Status& status() const { return status_; }
  // Whether compilation stopped because `cancelled` said so (the caller has no one to answer).
  bool was_cancelled() const { return was_cancelled_; }
  const CompileLimits& limits() const { return limits_; }

 private:
  static constexpr std::chrono::milliseconds kPollInterval{5};
  Status CheckClock();

  CompileLimits limits_;
  std::function<bool()> cancelled_;
  Env* env_;
  int64_t deadline_us_;
  int64_t next_poll_us_;
  size_t bytes_ = 0;
  size_t rules_ = 0;
  uint32_t steps_ = 0;
  bool was_cancelled_ = false;
  Status status_;
};

}  // namespace ember::grammar
