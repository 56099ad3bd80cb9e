// The HTTP server's connections: ConnectionLoop (epoll) accepts and reads each request whole, within
// its deadlines and byte caps; a worker then runs httplib's request parser and the routes over the
// buffered bytes and writes the answer to the socket. httplib 0.11.4 (Debian's build) alone held a
// thread per connection for its life, waited 5 s per read with no deadline for the whole request, let
// header lines grow without bound, listened with a backlog of 5 and set only SO_REUSEPORT. Here:
//   * an open connection holds a socket, not a thread, until its request is complete;
//   * a head deadline, a request deadline (first byte to end of body), an idle keep-alive deadline;
//   * caps on request-line + header bytes, on the raw bytes of one body, on connections per client
//     address and in all, on the bytes buffered for unfinished requests;
//   * SO_REUSEADDR (an immediate restart binds) and a deep listen backlog;
//   * a connection whose request body was refused unread is half-closed and drained after the answer,
//     so the client reads the answer instead of a reset.
// See docs/server.md "Connections" and "Transport limits".
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/connection_loop.h"
#include "server/request_framing.h"
#include "util/env.h"

namespace ember::server {

struct TransportLimits {
  double request_timeout_s = 30;              // first byte of a request -> last byte of its body
  double header_timeout_s = 5;                // a new connection -> the end of its request head
  double idle_timeout_s = 5;                  // a kept-alive connection waiting for its next request
  size_t max_header_bytes = 64 << 10;         // request line + headers
  size_t max_body_bytes = 8 << 20;            // decoded; a larger Content-Length is refused from the head
  size_t max_raw_body_bytes = size_t{2} << 30;  // wire bytes of one body, chunk framing included
  size_t max_connections = 16384;             // open connections in all
  size_t max_connections_per_client = 1024;   // open connections from one client address
  size_t max_buffered_bytes = size_t{1} << 30;  // bytes held for requests still arriving, all together
  double write_timeout_s = 10;                // one blocked write to a client that stopped reading
  size_t workers = 8;                         // threads answering complete requests
  // The clock the deadlines are measured on (a simulated one in tests; the loop checks it every 100 ms).
  // Must outlive the server.
  Env* env = Env::Default();
};

class TransportServer : public httplib::Server {
 public:
  explicit TransportServer(TransportLimits limits);
  ~TransportServer() override;

  // Binds host:port (0 = any free port) with a deep listen backlog. Returns the port, or -1.
  int Bind(const std::string& host, int port);
  // Starts the connection loop and the workers on the bound socket.
  Status Serve();
  // Stops accepting, waits for the workers, closes every connection. Idempotent.
  void Stop();
  LoopCounts counts() const;

  // For code running on a connection worker (pre-routing, handlers, error handler), about the request
  // that worker is handling. Outside a connection worker these do nothing / report kNone.
  static void CloseAfterResponse();   // the body was not read (or only in part): do not reuse
  static ReadFailure CurrentReadFailure();
  // True when the current request's client has closed its connection (EOF or reset), checked without
  // blocking. Pipelined bytes waiting to be read count as alive.
  static bool ClientGone();

 private:
  void Answer(Connection* conn);

  TransportLimits limits_;
  std::unique_ptr<ConnectionLoop> loop_;
};

enum class BodyRead { kOk, kTooLarge, kFailed };
// Reads the body through httplib's reader (which decodes chunked framing and gzip/deflate/br content
// encodings) into `body`, stopping as soon as the DECODED size would pass `max_bytes`, so neither a
// chunked stream nor a compression bomb is read further than the cap.
BodyRead ReadCappedBody(const httplib::ContentReader& reader, size_t max_bytes, std::string* body);

}  // namespace ember::server
