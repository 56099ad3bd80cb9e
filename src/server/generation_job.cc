#include "server/generation_job.h"

#include "util/env.h"

namespace ember::server {

GenerationJob::GenerationJob(GenerationRequest request, std::vector<std::string> stops)
    : request_(std::move(request)), matcher_(std::move(stops)) {
  request_.cancel = &cancel_;
}

bool GenerationJob::OnToken(const TokenEvent& token) {
  JobEvent ev;
  ev.text = matcher_.Push(token.piece);
  if (matcher_.stopped()) {
    // The token that completed the stop string is not part of the reply; neither are its logprobs.
    if (!ev.text.empty()) Push(std::move(ev));
    return false;
  }
  ev.tokens.push_back(token);
  Push(std::move(ev));
  return !cancelled();
}

void GenerationJob::Complete(Status status, GenerationResult result) {
  if (!matcher_.stopped()) {
    std::string rest = matcher_.Finish();
    if (!rest.empty()) {
      JobEvent tail;
      tail.text = std::move(rest);
      Push(std::move(tail));
    }
  } else if (result.finish_reason == FinishReason::kLength) {
    result.finish_reason = FinishReason::kStop;  // the stop string ended it, whatever the engine thinks
  }
  JobEvent done;
  done.kind = JobEvent::Kind::kDone;
  done.status = std::move(status);
  done.result = std::move(result);
  done.stop_sequence = matcher_.matched();
  Push(std::move(done));
}

void GenerationJob::Push(JobEvent ev) {
  {
    MutexLock lock(&mu_);
    if (ev.kind == JobEvent::Kind::kDone) done_ = true;
    events_.push_back(std::move(ev));
  }
  cv_.SignalAll();
}

std::vector<JobEvent> GenerationJob::Wait(std::chrono::milliseconds timeout) {
  Env* env = Env::Default();
  const int64_t deadline = env->MonotonicMicros() + std::chrono::microseconds(timeout).count();
  MutexLock lock(&mu_);
  while (events_.empty() && !env->WaitUntil(&cv_, &mu_, deadline)) {
  }
  std::vector<JobEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool GenerationJob::done() const {
  MutexLock lock(&mu_);
  return done_;
}

}  // namespace ember::server
