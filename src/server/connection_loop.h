// The accept-and-read side of the HTTP server: one thread with epoll owns every connection that is not
// being answered. It reads each request into memory and hands it to a worker only once it is complete
// (RequestFramer), so a connection costs a socket and a few hundred bytes until then, whatever the client
// does: idle keep-alives, headers a byte at a time, a body that never ends. Deadlines (head, body, idle),
// a per-client-address and a total connection cap, and a cap on the bytes buffered for all requests
// bound what clients can make it hold. The worker answers (httplib, from the buffered bytes) and gives
// the connection back: kept alive, closed, or drained then closed. docs/server.md, *Connections*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/request_framing.h"
#include "util/env.h"
#include "util/mutex.h"
#include "util/status.h"
#include "util/thread_annotations.h"

namespace ember::server {

// Why the request handed to a worker is incomplete, for the error its client gets.
enum class ReadFailure { kNone, kDeadline, kHeaderLimit, kBodyLimit, kOverloaded };

struct LoopLimits {
  FramingLimits framing;
  double header_timeout_s = 5;    // a new connection's first byte -> end of its head
  double request_timeout_s = 30;  // a request's first byte -> end of its body
  double idle_timeout_s = 5;      // a kept-alive connection waiting for its next request
  size_t max_connections = 16384;
  size_t max_connections_per_client = 1024;
  size_t max_buffered_bytes = size_t{1} << 30;  // request bytes held for all unfinished requests together
  size_t workers = 8;
  Env* env = Env::Default();  // the clock of the deadlines (checked every 100 ms)
};

// One client connection. The loop owns it while reading; a worker while answering (then only the worker
// touches it, until Return).
struct Connection {
  int fd = -1;
  std::string peer;       // the client's address: the per-client cap's key
  std::string buffer;     // received bytes not yet consumed
  size_t request_end = 0;  // the request handed to the worker is buffer[0, request_end)
  ReadFailure failure = ReadFailure::kNone;  // why it is incomplete (kNone: complete)
  size_t served = 0;      // requests answered on this connection before this one
};

// What a worker does with a connection after answering on it.
enum class AfterResponse { kKeepAlive, kClose, kDrainAndClose };

struct LoopCounts {
  size_t open = 0;      // connections now (reading, idle or answered)
  size_t busy = 0;      // handed to workers
  uint64_t refused = 0;  // accepted then closed at once: no room and nothing to evict
  uint64_t evicted = 0;  // idle or half-sent connections closed to make room for a new one
  uint64_t timed_out = 0;
};

class ConnectionLoop {
 public:
  // Runs on a worker thread; must end by calling Return(conn, ...).
  using Handler = std::function<void(Connection*)>;

  ConnectionLoop(LoopLimits limits, Handler handler);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Serves connections accepted on `listen_fd` (already listening; made non-blocking here; not closed).
  Status Start(int listen_fd);
  // Stops accepting, lets the workers finish what they hold, closes every connection. Idempotent.
  void Stop();
  // From a worker: the answer is sent (request [0, request_end) is consumed on kKeepAlive).
  void Return(Connection* conn, AfterResponse after) EXCLUDES(mu_);
  LoopCounts counts() const EXCLUDES(mu_);

 private:
  struct Slot;  // a Connection plus the loop's bookkeeping
  void Run();
  void Work() EXCLUDES(mu_);
  void AcceptAll();
  bool MakeRoom(const std::string& peer);
  void OnReadable(Slot* s);
  void BeginRequest(Slot* s);
  void Advance(Slot* s);
  void Dispatch(Slot* s, ReadFailure failure);
  void TakeReturns() EXCLUDES(mu_);
  void Sweep();
  void Close(Slot* s);
  void Watch(Slot* s, bool reading);
  int64_t Now() const { return limits_.env->MonotonicMicros(); }
  int64_t After(double seconds) const { return Now() + static_cast<int64_t>(seconds * 1e6); }

  const LoopLimits limits_;
  const Handler handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;     // eventfd: a worker returned a connection, or Stop()
  int reserve_fd_ = -1;  // closed to accept-and-close when the process is out of descriptors
  std::thread thread_;
  std::vector<std::thread> workers_;
  // Loop thread only.
  std::list<std::unique_ptr<Slot>> slots_;  // accept order: eviction takes the oldest
  std::unordered_map<std::string, size_t> per_client_;
  size_t buffered_ = 0;
  // Shared with the workers.
  mutable Mutex mu_;
  CondVar work_cv_;
  std::deque<Connection*> ready_ GUARDED_BY(mu_);  // requests waiting for a worker
  std::vector<std::pair<Connection*, AfterResponse>> returned_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  bool loop_gone_ GUARDED_BY(mu_) = false;  // the loop thread ended: workers close what they return
  LoopCounts counts_ GUARDED_BY(mu_);
};

}  // namespace ember::server
