#include "server/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
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

// One accepted connection: a buffered socket stream whose reads obey the current request's deadline and
// byte budgets. Writes are bounded per call by the write timeout (and SO_SNDTIMEO, which httplib's
// accept loop sets from the same value).
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(socket_t fd, const TransportLimits& limits, const std::atomic<socket_t>& listener)
      : fd_(fd), limits_(limits), listener_(listener), deadline_us_(Now()) {}

  // Waits up to `idle_s` for the first byte of the next request; false when the client closed, stayed
  // idle, or the server is stopping.
  bool WaitForRequest(double idle_s) { return pos_ < len_ || PollUntil(POLLIN, After(idle_s), true); }
  void BeginRequest() {
    deadline_us_ = After(limits_.request_timeout_s);
    consumed_ = 0;
    in_body_ = false;
  }
  void BeginBody() {
    in_body_ = true;
    consumed_ = 0;
  }
  void CloseAfterResponse() { close_after_ = true; }
  bool must_close() const { return close_after_ || failure_ != ReadFailure::kNone; }
  ReadFailure failure() const { return failure_; }
  bool Gone() const { return pos_ == len_ && !Alive(); }

  // A connection closed with unread input would answer the client's next segments with a reset, which
  // can destroy the response before the client reads it: half-close, then swallow input for a moment.
  void Close() {
    if (close_after_) {
      ::shutdown(fd_, SHUT_WR);
      const int64_t until = After(1.0);
      std::array<char, 4096> sink;
      while (PollUntil(POLLIN, until, false) && ::recv(fd_, sink.data(), sink.size(), 0) > 0) {
      }
    }
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
  }

  bool is_readable() const override { return pos_ < len_ || PollUntil(POLLIN, deadline_us_, true); }
  bool is_writable() const override { return PollUntil(POLLOUT, After(limits_.write_timeout_s), false) && Alive(); }

  ssize_t read(char* ptr, size_t size) override {
    const size_t budget = in_body_ ? limits_.max_raw_body_bytes : limits_.max_header_bytes;
    if (consumed_ >= budget) {
      failure_ = in_body_ ? ReadFailure::kBodyLimit : ReadFailure::kHeaderLimit;
      return -1;
    }
    if (pos_ == len_) {
      if (!PollUntil(POLLIN, deadline_us_, true)) {
        if (listener_ != INVALID_SOCKET) failure_ = ReadFailure::kDeadline;
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(fd_, buf_.data(), buf_.size(), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min({size, len_ - pos_, budget - consumed_});
    std::memcpy(ptr, buf_.data() + pos_, n);
    pos_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Endpoint(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Endpoint(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  int64_t Now() const { return limits_.env->MonotonicMicros(); }
  int64_t After(double seconds) const { return Now() + static_cast<int64_t>(seconds * 1e6); }
  // Polls in slices of 100 ms so that, when `stop_aware`, a stopping server is not held up by a client
  // (and a simulated clock moved past `until` is noticed within a slice).
  bool PollUntil(short events, int64_t until_us, bool stop_aware) const {
    for (;;) {
      if (stop_aware && listener_ == INVALID_SOCKET) return false;
      const int64_t left = (until_us - Now()) / 1000;
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      if (r > 0) return true;  // ready, or POLLHUP/POLLERR: the next recv/send reports which
      if (r < 0 && errno != EINTR) return false;
    }
  }
  // Readable with nothing to read means the client closed; its half of a stream is gone.
  bool Alive() const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  const socket_t fd_;
  const TransportLimits& limits_;
  const std::atomic<socket_t>& listener_;
  std::array<char, 4096> buf_;
  size_t pos_ = 0, len_ = 0;  // unread bytes are buf_[pos_, len_)
  int64_t deadline_us_;  // the current request's read deadline (Env::MonotonicMicros)
  size_t consumed_ = 0;       // bytes handed to the parser in the current phase (headers or body)
  bool in_body_ = false;
  bool close_after_ = false;
  ReadFailure failure_ = ReadFailure::kNone;
};

// httplib runs a request from parse to logger on the worker that owns the connection.
thread_local ConnectionStream* t_connection = nullptr;

constexpr int kListenBacklog = SOMAXCONN;

}  // namespace

TransportServer::TransportServer(TransportLimits limits) : limits_(limits) {
  // SO_REUSEADDR instead of httplib's SO_REUSEPORT: a restart binds at once over the last run's
  // TIME_WAIT connections, and a second live server on the port is an error instead of a silent share.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const auto write_s = static_cast<time_t>(limits_.write_timeout_s);
  set_write_timeout(write_s, static_cast<time_t>((limits_.write_timeout_s - static_cast<double>(write_s)) * 1e6));
  // Runs after httplib chose Connection/Keep-Alive headers: tell the client when this one will not be reused.
  set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (t_connection == nullptr || !t_connection->must_close()) return;
    res.headers.erase("Keep-Alive");
    res.set_header("Connection", "close");
  });
}

int TransportServer::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  // httplib listened with a backlog of 5; calling listen() again on the socket only deepens the queue.
  if (bound > 0 && ::listen(svr_sock_, kListenBacklog) != 0) return -1;
  return bound;
}

void TransportServer::CloseAfterResponse() {
  if (t_connection != nullptr) t_connection->CloseAfterResponse();
}

bool TransportServer::ClientGone() { return t_connection != nullptr && t_connection->Gone(); }

ReadFailure TransportServer::CurrentReadFailure() {
  return t_connection != nullptr ? t_connection->failure() : ReadFailure::kNone;
}

// httplib's own loop, with ember's stream: keep-alive up to keep_alive_max_count_ requests, each given
// keep_alive_timeout_sec_ of idle time to start (the first one the whole request timeout).
bool TransportServer::process_and_close_socket(socket_t sock) {
  ConnectionStream conn(sock, limits_, svr_sock_);
  t_connection = &conn;
  bool ok = false;
  for (size_t served = 0; served < keep_alive_max_count_; ++served) {
    const double wait_s = served == 0 ? limits_.request_timeout_s : static_cast<double>(keep_alive_timeout_sec_);
    if (!conn.WaitForRequest(wait_s)) break;
    conn.BeginRequest();
    bool client_closes = false;
    ok = process_request(conn, served + 1 == keep_alive_max_count_, client_closes,
                         [&conn](httplib::Request&) { conn.BeginBody(); });
    if (!ok || client_closes || conn.must_close()) break;
  }
  t_connection = nullptr;
  conn.Close();
  return ok;
}

std::optional<FramingError> ParseBodyFraming(const httplib::Request& req, BodyFraming* out) {
  *out = {};
  const size_t lengths = req.get_header_value_count("Content-Length");
  const size_t codings = req.get_header_value_count("Transfer-Encoding");
  if (codings > 0) {
    // Both headers at once is how requests are smuggled past proxies; httplib would trust the coding.
    if (lengths > 0) return FramingError{400, "a request may not carry both Content-Length and Transfer-Encoding"};
    const std::string coding = req.get_header_value("Transfer-Encoding");
    if (codings > 1 || ::strcasecmp(coding.c_str(), "chunked") != 0) {
      return FramingError{501, "Transfer-Encoding '" + coding.substr(0, 64) + "' is not supported (only chunked)"};
    }
    out->has_body = out->chunked = true;
    return std::nullopt;
  }
  if (lengths == 0) return std::nullopt;
  const std::string value = req.get_header_value("Content-Length");
  if (lengths > 1 || value.empty() || value.size() > 18 ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return FramingError{400, "invalid Content-Length '" + value.substr(0, 64) + "'"};
  }
  out->content_length = std::stoull(value);
  out->has_body = out->content_length > 0;
  return std::nullopt;
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
