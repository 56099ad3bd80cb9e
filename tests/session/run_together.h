// Runs batched requests so the runner admits them in one pass, in order: an in-flight overlap made on
// purpose, not by luck (shared by the BatchedSession suites).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/batch_runner.h"
#include "session/batched_session.h"
#include "session/session_test_util.h"
#include "support/poll.h"

namespace ember::session_test {

// Holds the runner's step thread inside a token callback (Wait) while requests queue, so the next
// admission pass takes them together, in submission order: an in-flight overlap, not luck.
class StepGate {
 public:
  bool Wait() {
    held_ = true;
    if (!ember::testing::PollUntil([&] { return open_.load(); }, std::chrono::seconds(60))) {
      ADD_FAILURE() << "the step gate was never opened";
    }
    return true;
  }
  void UntilHeld() const {
    if (!ember::testing::PollUntil([&] { return held_.load(); }, std::chrono::seconds(60))) {
      ADD_FAILURE() << "the step thread never reached the gate";
    }
  }
  void Open() { open_ = true; }

 private:
  std::atomic<bool> held_{false}, open_{false};
};

inline void UntilWaiting(const BatchRunner& runner, int n) {
  if (!ember::testing::PollUntil([&] { return runner.stats().waiting >= n; }, std::chrono::seconds(60))) {
    ADD_FAILURE() << "the runner never had " << n << " requests waiting: " << runner.stats().waiting;
  }
}

// Runs reqs so that the runner admits them in one pass, in order: a blocker request holds the step
// thread in its first token callback while they queue one after the other.
inline std::vector<StatusOr<SessionResult>> RunTogether(BatchedSession& s, const BatchRunner& runner,
                                                 const std::vector<SessionRequest>& reqs) {
  StepGate gate;
  std::thread blocker([&] {
    SessionRequest b = session_test::GreedyRequest(session_test::PseudoIds(5, 99, 100, 20000), 2, "blocker");
    (void)s.Generate(b, [&](int32_t) { return gate.Wait(); });
  });
  gate.UntilHeld();
  std::vector<StatusOr<SessionResult>> out(reqs.size(), Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < reqs.size(); ++i) {
    threads.emplace_back([&, i] { out[i] = s.Generate(reqs[i], nullptr); });
    UntilWaiting(runner, static_cast<int>(i) + 1);
  }
  gate.Open();
  blocker.join();
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace ember::session_test
