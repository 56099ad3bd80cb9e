#include "server/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ember::server {
namespace {

void Endpoint(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

// The request a worker answers, as httplib's parser reads it: the bytes the loop buffered, never the
// socket (the request is complete, or the loop said why not: reads past the end then fail with that
// reason). Writes go to the (non-blocking) socket, each bounded by the write timeout.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& conn, const TransportLimits& limits) : conn_(conn), limits_(limits) {}

  void CloseAfterResponse() { close_after_ = true; }
  bool close_after() const { return close_after_; }
  bool must_close() const { return close_after_ || conn_.failure != ReadFailure::kNone; }
  ReadFailure failure() const { return pos_ < conn_.request_end ? ReadFailure::kNone : conn_.failure; }
  // httplib consumed exactly the request the loop framed: the next one starts right after it.
  bool consumed_all() const { return pos_ == conn_.request_end; }
  bool Gone() const { return conn_.buffer.size() == conn_.request_end && !Alive(); }

  bool is_readable() const override { return pos_ < conn_.request_end; }
  bool is_writable() const override { return WaitWritable(After(limits_.write_timeout_s)) && Alive(); }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ >= conn_.request_end) return -1;
    const size_t n = std::min(size, conn_.request_end - pos_);
    std::memcpy(ptr, conn_.buffer.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const int64_t deadline = After(limits_.write_timeout_s);
    for (;;) {
      const ssize_t n = ::send(conn_.fd, ptr, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitWritable(deadline)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Endpoint(conn_.fd, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Endpoint(conn_.fd, false, ip, port); }
  socket_t socket() const override { return conn_.fd; }

 private:
  int64_t After(double seconds) const {
    return limits_.env->MonotonicMicros() + static_cast<int64_t>(seconds * 1e6);
  }
  // Polls in 100 ms slices so a simulated clock moved past the deadline is noticed.
  bool WaitWritable(int64_t deadline_us) const {
    for (;;) {
      const int64_t left = (deadline_us - limits_.env->MonotonicMicros()) / 1000;
      if (left <= 0) return false;
      pollfd p{conn_.fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      if (r > 0) return (p.revents & POLLOUT) != 0;
      if (r < 0 && errno != EINTR) return false;
    }
  }
  // Readable with nothing to read means the client closed; its half of a stream is gone.
  bool Alive() const {
    pollfd p{conn_.fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    char c;
    const ssize_t n = ::recv(conn_.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  Connection& conn_;
  const TransportLimits& limits_;
  size_t pos_ = 0;  // next byte of the request for the parser
  bool close_after_ = false;
};

// httplib runs a request from parse to logger on the worker that answers it.
thread_local ConnectionStream* t_connection = nullptr;

constexpr int kListenBacklog = SOMAXCONN;

LoopLimits LoopLimitsOf(const TransportLimits& t) {
  LoopLimits l;
  l.framing = {t.max_header_bytes, t.max_body_bytes, t.max_raw_body_bytes};
  l.header_timeout_s = t.header_timeout_s;
  l.request_timeout_s = t.request_timeout_s;
  l.idle_timeout_s = t.idle_timeout_s;
  l.max_connections = t.max_connections;
  l.max_connections_per_client = t.max_connections_per_client;
  l.max_buffered_bytes = t.max_buffered_bytes;
  l.workers = t.workers;
  l.env = t.env;
  return l;
}

// Idle connections cost a descriptor each: take the hard limit, as servers made for many do.
void RaiseDescriptorLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

TransportServer::TransportServer(TransportLimits limits) : limits_(limits) {
  // SO_REUSEADDR instead of httplib's SO_REUSEPORT: a restart binds at once over the last run's
  // TIME_WAIT connections, and a second live server on the port is an error instead of a silent share.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Runs after httplib chose Connection/Keep-Alive headers: tell the client when this one will not be reused.
  set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (t_connection == nullptr || !t_connection->must_close()) return;
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");
  });
}

TransportServer::~TransportServer() { Stop(); }

int TransportServer::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  // httplib listened with a backlog of 5; calling listen() again on the socket only deepens the queue.
  if (bound > 0 && ::listen(svr_sock_, kListenBacklog) != 0) return -1;
  return bound;
}

Status TransportServer::Serve() {
  RaiseDescriptorLimit();
  loop_ = std::make_unique<ConnectionLoop>(LoopLimitsOf(limits_), [this](Connection* c) { Answer(c); });
  return loop_->Start(svr_sock_);
}

void TransportServer::Stop() {
  if (loop_ != nullptr) loop_->Stop();
  const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
  if (sock != INVALID_SOCKET) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
  }
}

LoopCounts TransportServer::counts() const { return loop_ != nullptr ? loop_->counts() : LoopCounts{}; }

// One request, parsed and answered by httplib from the buffered bytes; the connection then goes back to
// the loop: kept alive, closed, or (its body refused unread) drained first.
void TransportServer::Answer(Connection* conn) {
  ConnectionStream stream(*conn, limits_);
  t_connection = &stream;
  bool client_closes = false;
  const bool last = conn->served + 1 >= keep_alive_max_count_;
  const bool ok = process_request(stream, last, client_closes, [](httplib::Request&) {});
  t_connection = nullptr;
  AfterResponse after = AfterResponse::kKeepAlive;
  if (stream.must_close() || !stream.consumed_all()) {
    after = AfterResponse::kDrainAndClose;
  } else if (!ok || client_closes || last) {
    after = AfterResponse::kClose;
  }
  loop_->Return(conn, after);
}

void TransportServer::CloseAfterResponse() {
  if (t_connection != nullptr) t_connection->CloseAfterResponse();
}

bool TransportServer::ClientGone() { return t_connection != nullptr && t_connection->Gone(); }

ReadFailure TransportServer::CurrentReadFailure() {
  return t_connection != nullptr ? t_connection->failure() : ReadFailure::kNone;
}

BodyRead ReadCappedBody(const httplib::ContentReader& reader, size_t max_bytes, std::string* body) {
  bool over = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (n > max_bytes - body->size()) {
      over = true;
      return false;
    }
    body->append(data, n);
    return true;
  });
  if (over) return BodyRead::kTooLarge;
  return ok ? BodyRead::kOk : BodyRead::kFailed;
}

}  // namespace ember::server
