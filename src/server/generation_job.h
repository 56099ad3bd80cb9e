// One generation in flight: the hand-off between the generation lane (which runs the backend and calls
// OnToken/Complete) and the HTTP worker that owns the client connection (which calls Wait and Cancel).
// Stop strings are matched here, on the lane thread, so the backend stops within one token of a match
// and a stop string never reaches the client.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <vector>

#include "server/backend.h"
#include "server/stop_matcher.h"
#include "util/mutex.h"

namespace ember::server {

struct JobEvent {
  enum class Kind { kText, kDone };
  Kind kind = Kind::kText;
  std::string text;                  // kText: safe-to-send text (may be empty when only tokens arrived)
  std::vector<TokenEvent> tokens;    // kText: the tokens behind it (for logprobs)
  Status status;                     // kDone
  GenerationResult result;           // kDone; finish_reason is kStop after a stop-string match
  std::string stop_sequence;         // kDone: the stop string that ended generation, "" if none
};

class GenerationJob {
 public:
  GenerationJob(GenerationRequest request, std::vector<std::string> stops);

  // The request handed to the backend; its cancel pointer refers to this job's flag.
  const GenerationRequest& request() const { return request_; }

  // Lane thread.
  bool OnToken(const TokenEvent& token);
  void Complete(Status status, GenerationResult result);

  // HTTP thread: waits up to `timeout` for events and takes all that are pending (possibly none).
  std::vector<JobEvent> Wait(std::chrono::milliseconds timeout) EXCLUDES(mu_);
  // Any thread: asks the backend to stop (client gone, shutdown). Idempotent.
  void Cancel() { cancel_.store(true); }
  bool cancelled() const { return cancel_.load(); }
  bool done() const EXCLUDES(mu_);

 private:
  void Push(JobEvent ev) EXCLUDES(mu_);

  GenerationRequest request_;
  std::atomic<bool> cancel_{false};
  StopMatcher matcher_;             // lane thread only
  mutable Mutex mu_;
  CondVar cv_;  // an event was pushed
  std::deque<JobEvent> events_ GUARDED_BY(mu_);
  bool done_ GUARDED_BY(mu_) = false;
};

}  // namespace ember::server
