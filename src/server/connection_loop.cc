#include "server/connection_loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace ember::server {
namespace {

constexpr int kTickMs = 100;  // deadlines are checked this often
constexpr size_t kReadChunk = 64 << 10;
constexpr double kDrainSeconds = 1.0;
// epoll data for the two descriptors that are not connections.
char kListenTag;
char kWakeTag;

std::string PeerAddress(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, text, sizeof(text));
  }
  return text;
}

ReadFailure FailureOf(FrameState state) {
  switch (state) {
    case FrameState::kHeaderLimit: return ReadFailure::kHeaderLimit;
    case FrameState::kBodyLimit: return ReadFailure::kBodyLimit;
    default: return ReadFailure::kNone;
  }
}

}  // namespace

// The loop's view of a connection: what it is waiting for, until when.
struct ConnectionLoop::Slot : Connection {
  enum class State {
    kIdle,     // no byte of a next request yet
    kReading,  // part of a request is here
    kBusy,     // a worker has it
    kDraining  // answered and half-closed: input is discarded until EOF or the drain deadline
  };
  explicit Slot(const FramingLimits& limits) : framer(limits) {}
  RequestFramer framer;
  State state = State::kIdle;
  int64_t deadline_us = 0;
  int64_t body_deadline_us = 0;  // the request timeout, from the request's first byte
  std::list<std::unique_ptr<Slot>>::iterator self;
};

ConnectionLoop::ConnectionLoop(LoopLimits limits, Handler handler)
    : limits_(std::move(limits)), handler_(std::move(handler)) {}

ConnectionLoop::~ConnectionLoop() { Stop(); }

Status ConnectionLoop::Start(int listen_fd) {
  listen_fd_ = listen_fd;
  ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return IoError("cannot create the connection loop's epoll or eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &kListenTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.ptr = &kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  for (size_t i = 0; i < std::max<size_t>(1, limits_.workers); ++i) workers_.emplace_back([this] { Work(); });
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void ConnectionLoop::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_ || !thread_.joinable()) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  thread_.join();
  work_cv_.SignalAll();
  for (std::thread& t : workers_) t.join();
  for (int fd : {epoll_fd_, wake_fd_, reserve_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

LoopCounts ConnectionLoop::counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

void ConnectionLoop::Run() {
  std::array<epoll_event, 256> events;
  int64_t next_sweep = Now();
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), kTickMs);
    {
      MutexLock lock(&mu_);
      if (stopping_) break;
    }
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &kListenTag) {
        AcceptAll();
      } else if (tag == &kWakeTag) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
      } else {
        OnReadable(static_cast<Slot*>(tag));
      }
    }
    TakeReturns();
    if (Now() >= next_sweep) {
      Sweep();
      next_sweep = Now() + kTickMs * 1000;
    }
  }
  // Stopping: what no worker holds is closed now; what workers hold is closed as they return it.
  MutexLock lock(&mu_);
  loop_gone_ = true;
  for (Connection* conn : ready_) static_cast<Slot*>(conn)->state = Slot::State::kIdle;
  for (auto& [conn, after] : returned_) static_cast<Slot*>(conn)->state = Slot::State::kIdle;
  ready_.clear();
  returned_.clear();
  for (auto& s : slots_) {
    if (s->state != Slot::State::kBusy) ::close(s->fd);
  }
}

void ConnectionLoop::Work() {
  for (;;) {
    Connection* conn = nullptr;
    {
      MutexLock lock(&mu_);
      while (ready_.empty() && !stopping_) work_cv_.Wait(&mu_);
      if (ready_.empty()) return;
      conn = ready_.front();
      ready_.pop_front();
    }
    handler_(conn);
  }
}

void ConnectionLoop::Return(Connection* conn, AfterResponse after) {
  {
    MutexLock lock(&mu_);
    if (!loop_gone_) {
      returned_.emplace_back(conn, after);
    } else {
      ::close(conn->fd);  // the slot itself is freed with the loop
      return;
    }
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void ConnectionLoop::AcceptAll() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if ((errno == EMFILE || errno == ENFILE) && reserve_fd_ >= 0) {
        // Out of descriptors: the pending connection would wake the loop for ever. Accept it with the
        // reserved descriptor and close it at once.
        ::close(reserve_fd_);
        const int shed = ::accept(listen_fd_, nullptr, nullptr);
        if (shed >= 0) ::close(shed);
        reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        MutexLock lock(&mu_);
        ++counts_.refused;
        continue;
      }
      return;  // EAGAIN: none left
    }
    std::string peer = PeerAddress(addr);
    if (!MakeRoom(peer)) {
      ::close(fd);
      MutexLock lock(&mu_);
      ++counts_.refused;
      continue;
    }
    auto slot = std::make_unique<Slot>(limits_.framing);
    Slot* s = slot.get();
    s->fd = fd;
    s->peer = std::move(peer);
    s->deadline_us = After(limits_.header_timeout_s);
    slots_.push_back(std::move(slot));
    s->self = std::prev(slots_.end());
    ++per_client_[s->peer];
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = s;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    MutexLock lock(&mu_);
    ++counts_.open;
  }
}

// Room for one more connection from `peer`: under both caps, or after closing the oldest connection that
// holds no request a worker is answering — an idle one first, else one still sending its head — from
// the same client (per-client cap) or from anyone (total cap). A client that fills its share can only
// push out its own connections.
bool ConnectionLoop::MakeRoom(const std::string& peer) {
  auto evict = [this](const std::string* only) {
    for (const bool idle_only : {true, false}) {
      for (auto& s : slots_) {
        if (only != nullptr && s->peer != *only) continue;
        const bool idle = s->state == Slot::State::kIdle;
        const bool head = s->state == Slot::State::kReading && !s->framer.head_done();
        if (idle || (!idle_only && head)) {
          Close(s.get());
          MutexLock lock(&mu_);
          ++counts_.evicted;
          return true;
        }
      }
    }
    return false;
  };
  auto it = per_client_.find(peer);
  if (it != per_client_.end() && it->second >= limits_.max_connections_per_client && !evict(&peer)) return false;
  return slots_.size() < limits_.max_connections || evict(nullptr);
}

// A connection a worker holds is out of the epoll set: a hang-up would otherwise be reported (level
// triggered, whatever the event mask) on every wait until the worker gives it back.
void ConnectionLoop::Watch(Slot* s, bool reading) {
  if (!reading) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s->fd, nullptr);
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = s;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, s->fd, &ev);
}

void ConnectionLoop::OnReadable(Slot* s) {
  std::array<char, kReadChunk> chunk;
  bool eof = false;
  while (s->state == Slot::State::kIdle || s->state == Slot::State::kReading || s->state == Slot::State::kDraining) {
    const ssize_t n = ::recv(s->fd, chunk.data(), chunk.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    if (s->state == Slot::State::kDraining) continue;
    if (s->state == Slot::State::kIdle) BeginRequest(s);
    s->buffer.append(chunk.data(), static_cast<size_t>(n));
    buffered_ += static_cast<size_t>(n);
    Advance(s);
    if (s->state == Slot::State::kReading && buffered_ > limits_.max_buffered_bytes) {
      Dispatch(s, ReadFailure::kOverloaded);
    }
  }
  // A client that closed with a request incomplete (or none) is gone; one whose request is with a
  // worker notices it there (ClientGone) and the connection closes when it comes back.
  if (eof && s->state != Slot::State::kBusy) Close(s);
}

// A request's first byte: its head is due within the header timeout (a new connection's, from the
// accept), its body within the request timeout.
void ConnectionLoop::BeginRequest(Slot* s) {
  s->state = Slot::State::kReading;
  s->body_deadline_us = After(limits_.request_timeout_s);
  const int64_t head = s->served == 0 ? s->deadline_us : After(limits_.header_timeout_s);
  s->deadline_us = std::min(head, s->body_deadline_us);
}

// Scans what arrived; answers `Expect: 100-continue`; hands a complete (or refused) request to a worker.
void ConnectionLoop::Advance(Slot* s) {
  const bool had_head = s->framer.head_done();
  const FrameState state = s->framer.Scan(s->buffer);
  if (!had_head && s->framer.head_done()) {
    s->deadline_us = s->body_deadline_us;  // the head is in: the body has the rest of the request timeout
    if (s->framer.wants_continue()) {
      const size_t before = s->buffer.size();
      if (state == FrameState::kNeedMore) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!::send(s->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      s->framer.StripExpect(&s->buffer);
      buffered_ -= before - s->buffer.size();
    }
  }
  if (state == FrameState::kNeedMore) return;
  if (state == FrameState::kComplete) s->request_end = s->framer.end();
  Dispatch(s, FailureOf(state));
}

void ConnectionLoop::Dispatch(Slot* s, ReadFailure failure) {
  if (failure != ReadFailure::kNone) s->request_end = s->buffer.size();
  s->failure = failure;
  s->state = Slot::State::kBusy;
  buffered_ -= s->buffer.size();
  Watch(s, false);
  {
    MutexLock lock(&mu_);
    ready_.push_back(s);
    ++counts_.busy;
  }
  work_cv_.Signal();
}

void ConnectionLoop::TakeReturns() {
  std::vector<std::pair<Connection*, AfterResponse>> back;
  {
    MutexLock lock(&mu_);
    back.swap(returned_);
    counts_.busy -= back.size();
  }
  for (auto& [conn, after] : back) {
    Slot* s = static_cast<Slot*>(conn);
    if (after == AfterResponse::kClose) {
      Close(s);
      continue;
    }
    if (after == AfterResponse::kDrainAndClose) {
      ::shutdown(s->fd, SHUT_WR);
      s->state = Slot::State::kDraining;
      s->deadline_us = After(kDrainSeconds);
      std::string().swap(s->buffer);
      Watch(s, true);
      continue;
    }
    s->buffer.erase(0, s->request_end);
    if (s->buffer.empty()) std::string().swap(s->buffer);
    s->request_end = 0;
    s->failure = ReadFailure::kNone;
    ++s->served;
    s->framer.Reset();
    buffered_ += s->buffer.size();
    s->state = Slot::State::kIdle;
    s->deadline_us = After(limits_.idle_timeout_s);
    Watch(s, true);
    if (!s->buffer.empty()) {  // pipelined: the next request is already (partly) here
      BeginRequest(s);
      Advance(s);
    }
  }
}

// Deadlines: an idle or draining connection closes; one partway through a request goes to a worker,
// which answers 408 (or closes, when not even the request line arrived).
void ConnectionLoop::Sweep() {
  const int64_t now = Now();
  std::vector<Slot*> due;
  for (auto& s : slots_) {
    if (s->state != Slot::State::kBusy && now >= s->deadline_us) due.push_back(s.get());
  }
  for (Slot* s : due) {
    {
      MutexLock lock(&mu_);
      ++counts_.timed_out;
    }
    if (s->state == Slot::State::kReading) {
      Dispatch(s, ReadFailure::kDeadline);
    } else {
      Close(s);
    }
  }
}

void ConnectionLoop::Close(Slot* s) {
  if (s->state != Slot::State::kBusy) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, s->fd, nullptr);
  ::close(s->fd);
  if (s->state != Slot::State::kBusy) buffered_ -= s->buffer.size();
  auto it = per_client_.find(s->peer);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  {
    MutexLock lock(&mu_);
    --counts_.open;
  }
  slots_.erase(s->self);
}

}  // namespace ember::server
