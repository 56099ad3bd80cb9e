#include "forwarding_backend.h"
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <thread>

#include "server/api_error.h"
#include "server/fake_backend.h"
#include "support/poll.h"

namespace ember::server {
namespace {

std::shared_ptr<GenerationJob> Job(const std::string& prompt, int max_tokens = 8, std::vector<std::string> stops = {}) {
  GenerationRequest g;
  for (unsigned char c : prompt) g.prompt.push_back(c);
  g.max_tokens = max_tokens;
  return std::make_shared<GenerationJob>(std::move(g), std::move(stops));
}

// Drains a job's events until kDone; returns the text and the final event.
std::pair<std::string, JobEvent> Drain(GenerationJob& job) {
  std::string text;
  for (int waits = 0; waits < 60; ++waits) {  // a minute: a job that never ends fails, not hangs
    for (JobEvent& ev : job.Wait(std::chrono::milliseconds(1000))) {
      if (ev.kind == JobEvent::Kind::kDone) return {text, std::move(ev)};
      text += ev.text;
    }
  }
  ADD_FAILURE() << "the job did not end within 60 s; text so far: " << text;
  job.Cancel();
  return {text, JobEvent{}};
}

TEST(Scheduler, RunsAJobAndReportsDone) {
  FakeBackend backend;
  Scheduler s(&backend, 4);
  auto job = Job("echo: hello world", 100);
  ASSERT_TRUE(s.Submit(job).ok());
  auto [text, done] = Drain(*job);
  EXPECT_EQ(text, "hello world");
  EXPECT_TRUE(done.status.ok());
  EXPECT_EQ(done.result.finish_reason, FinishReason::kStop);
  EXPECT_EQ(done.result.completion_tokens, 4);  // 3-byte pieces
}

TEST(Scheduler, StopStringEndsGenerationEarly) {
  FakeBackend backend;
  Scheduler s(&backend, 4);
  auto job = Job("echo: one two STOP three four five", 100, {"STOP"});
  ASSERT_TRUE(s.Submit(job).ok());
  auto [text, done] = Drain(*job);
  EXPECT_EQ(text, "one two ");
  EXPECT_EQ(done.stop_sequence, "STOP");
  EXPECT_EQ(done.result.finish_reason, FinishReason::kStop);
  EXPECT_LT(done.result.completion_tokens, 8);  // the backend stopped at the match, not at the end
}

TEST(Scheduler, LengthLimit) {
  FakeBackend backend;
  Scheduler s(&backend, 4);
  auto job = Job("echo: abcdefghijkl", 2);
  ASSERT_TRUE(s.Submit(job).ok());
  auto [text, done] = Drain(*job);
  EXPECT_EQ(text, "abcdef");
  EXPECT_EQ(done.result.finish_reason, FinishReason::kLength);
}

TEST(Scheduler, FifoOrderAndQueueLimit) {
  FakeBackend backend;
  backend.Hold();
  Scheduler s(&backend, 2);
  auto running = Job("echo: first");
  ASSERT_TRUE(s.Submit(running).ok());
  if (!ember::testing::PollUntil([&] { return backend.generations_started() >= 1; })) {
    backend.Release();
    FAIL() << "the first job never reached the backend";
  }
  auto a = Job("echo: a"), b = Job("echo: b"), c = Job("echo: c");
  ASSERT_TRUE(s.Submit(a).ok());
  ASSERT_TRUE(s.Submit(b).ok());
  Status full = s.Submit(c);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.stats().queued, 2u);
  EXPECT_EQ(s.stats().rejected, 1u);
  backend.Release();
  auto [text_b, done_b] = Drain(*b);
  EXPECT_EQ(text_b, "b");
  EXPECT_TRUE(a->done());  // FIFO: a finished before b did
  EXPECT_TRUE(running->done());
  // `completed` is counted just after the job's kDone event, so give the lane a moment.
  for (int i = 0; i < 1000 && s.stats().completed < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(s.stats().completed, 3u);
}

TEST(Scheduler, CancelledQueuedJobIsSkippedAndFreesItsSlot) {
  FakeBackend backend;
  backend.Hold();
  Scheduler s(&backend, 1);
  auto running = Job("echo: x");
  ASSERT_TRUE(s.Submit(running).ok());
  if (!ember::testing::PollUntil([&] { return backend.generations_started() >= 1; })) {
    backend.Release();
    FAIL() << "the first job never reached the backend";
  }
  auto gone = Job("echo: y");
  ASSERT_TRUE(s.Submit(gone).ok());
  gone->Cancel();
  auto next = Job("echo: z");
  EXPECT_TRUE(s.Submit(next).ok());  // the cancelled job no longer counts against the limit
  backend.Release();
  auto [text, done] = Drain(*gone);
  EXPECT_EQ(done.result.finish_reason, FinishReason::kCancelled);
  Drain(*next);
  EXPECT_EQ(backend.generations_started(), 2);  // `gone` never reached the backend
}

TEST(Scheduler, CancelStopsARunningGeneration) {
  FakeBackend::Options o;
  o.token_delay_ms = 5;
  FakeBackend backend(o);
  Scheduler s(&backend, 1);
  auto job = Job("[long]", 100000);
  ASSERT_TRUE(s.Submit(job).ok());
  job->Wait(std::chrono::milliseconds(1000));  // at least one token
  job->Cancel();
  auto [text, done] = Drain(*job);
  EXPECT_EQ(done.result.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(backend.cancelled_generations(), 1);
}

TEST(Scheduler, ShutdownCancelsAfterGraceAndRefusesNewWork) {
  FakeBackend::Options o;
  o.token_delay_ms = 5;
  FakeBackend backend(o);
  Scheduler s(&backend, 4);
  auto job = Job("[long]", 100000);
  ASSERT_TRUE(s.Submit(job).ok());
  s.Shutdown(std::chrono::milliseconds(50));
  EXPECT_TRUE(job->done());
  EXPECT_EQ(s.Submit(Job("echo: late")).code(), StatusCode::kFailedPrecondition);
}

// A backend that throws from Generate when the prompt says so ("throw:std", "throw:int", or
// "throw:late" after one token went out); every other prompt goes to a FakeBackend. Only a test needs
// a backend that breaks the no-throw contract of backend.h, to show the lane survives one that does.
class ThrowingBackend final : public ForwardingBackend {
 public:
  Status Generate(const GenerationRequest& req, const TokenCallback& on_token, GenerationResult* out) override {
    const std::string prompt(req.prompt.begin(), req.prompt.end());
    out->completion_tokens = 99;  // garbage a throwing backend may leave behind
    if (prompt == "throw:std") throw std::runtime_error("backend exploded");
    if (prompt == "throw:int") throw 42;
    if (prompt == "throw:late") {
      on_token(TokenEvent{'h', "h", 0, {}});
      throw std::bad_alloc();
    }
    return fake_.Generate(req, on_token, out);
  }
};

TEST(Scheduler, AnExceptionFailsOnlyItsOwnRequest) {
  ThrowingBackend backend;
  Scheduler s(&backend, 8);
  struct Case {
    const char* prompt;
    const char* what;
  };
  for (const Case& c : {Case{"throw:std", "backend exploded"}, Case{"throw:int", "not a std::exception"},
                        Case{"throw:late", "bad_alloc"}}) {
    auto bad = Job(c.prompt);
    auto next = Job("echo: still serving", 100);
    ASSERT_TRUE(s.Submit(bad).ok());
    ASSERT_TRUE(s.Submit(next).ok());  // queued behind the one that throws
    auto [bad_text, bad_done] = Drain(*bad);
    EXPECT_EQ(bad_done.status.code(), StatusCode::kInternal) << c.prompt;
    EXPECT_NE(bad_done.status.message().find(c.what), std::string::npos) << bad_done.status.message();
    EXPECT_EQ(bad_done.result.completion_tokens, 0);  // not the backend's leftovers
    EXPECT_EQ(bad_done.result.prompt_tokens, static_cast<int32_t>(std::string(c.prompt).size()));
    auto [text, done] = Drain(*next);
    EXPECT_TRUE(done.status.ok()) << c.prompt << ": " << done.status.ToString();
    EXPECT_EQ(text, "still serving");
  }
  EXPECT_EQ(s.stats().running, 0u);
  // An Internal status is what the routes answer with a 500 and the message.
  EXPECT_EQ(FromStatus(Internal("generation failed: x")).http_status, 500);
}

}  // namespace
}  // namespace ember::server
