#include "server/memory_return.h"

#include <malloc.h>

#include <thread>

#include "util/env.h"
#include "util/mutex.h"

namespace ember::server {
namespace {

constexpr int kMmapThresholdBytes = 1 << 20;
constexpr int64_t kDelayMicros = 200'000;

// Never destroyed: the trimming thread may outlive main's statics.
class Trimmer {
 public:
  void Request() {
    MutexLock l(&mu_);
    due_us_ = env_->MonotonicMicros() + kDelayMicros;
    pending_ = true;
    cv_.Signal();
  }

  void Run() {
    for (;;) {
      {
        MutexLock l(&mu_);
        while (!pending_) cv_.Wait(&mu_);
        // Until kDelayMicros have passed since the last request: the replies it follows are written by then.
        while (env_->MonotonicMicros() < due_us_) (void)env_->WaitUntil(&cv_, &mu_, due_us_);
        pending_ = false;
      }
      malloc_trim(0);
    }
  }

 private:
  Env* env_ = Env::Default();
  Mutex mu_;
  CondVar cv_;
  bool pending_ GUARDED_BY(mu_) = false;
  int64_t due_us_ GUARDED_BY(mu_) = 0;
};

Trimmer& TheTrimmer() {
  static Trimmer* t = [] {
    auto* made = new Trimmer;
    std::thread([made] { made->Run(); }).detach();
    return made;
  }();
  return *t;
}

}  // namespace

void TuneAllocatorForServing() {
  static const bool once = [] {
    // Also fixes the trim threshold (glibc's dynamic adjustment of both stops once either is set).
    mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
    return true;
  }();
  (void)once;
}

void ReturnFreedMemorySoon() { TheTrimmer().Request(); }

}  // namespace ember::server
