// Polling with a deadline, for tests that wait on another thread's progress: a broken component must
// fail the test with a message, never hang it until ctest's 20-minute timeout.
#pragma once

#include <chrono>
#include <thread>

namespace ember::testing {

// Calls `cond` every `every` until it returns true (-> true) or `limit` has passed (-> cond() once more).
template <class Cond>
bool PollUntil(Cond&& cond, std::chrono::milliseconds limit = std::chrono::seconds(30),
               std::chrono::milliseconds every = std::chrono::milliseconds(1)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= end) return cond();
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace ember::testing
