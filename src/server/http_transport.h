// The connection layer under httplib's request parser. httplib 0.11.4 (Debian's build) reads a request
// with a 5 s timeout per read() but no deadline for the whole request, lets request and header lines
// grow without bound, listens with a backlog of 5 (a burst of connects is reset by SYN cookies) and sets
// only SO_REUSEPORT (a second server silently shares the port). TransportServer replaces its
// per-connection loop and socket stream so these limits hold:
//   * a read deadline per request, from its first byte to the end of its body (slowloris);
//   * a cap on request-line + header bytes, and on the raw bytes of one body (framing included);
//   * SO_REUSEADDR (an immediate restart binds) and a deep listen backlog;
//   * a connection whose request body was refused unread closes after the response, after a short
//     drain, so the client reads the answer instead of a reset.
// See docs/server.md "Transport limits".
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "util/env.h"

namespace ember::server {

struct TransportLimits {
  double request_timeout_s = 30;              // first byte of a request -> last byte of its body
  size_t max_header_bytes = 64 << 10;         // request line + headers
  size_t max_raw_body_bytes = size_t{2} << 30;  // wire bytes of one body, chunk framing included
  double write_timeout_s = 10;                // one blocked write to a client that stopped reading
  // The clock the deadlines are measured on (a simulated one in tests; sockets are still polled in real
  // 100 ms slices, so a deadline is noticed within one slice of the clock passing it). Must outlive
  // the server.
  Env* env = Env::Default();
};

// Why the current request's reads stopped, for the error the client gets.
enum class ReadFailure { kNone, kDeadline, kHeaderLimit, kBodyLimit };

class TransportServer : public httplib::Server {
 public:
  explicit TransportServer(TransportLimits limits);

  // Binds host:port (0 = any free port), then deepens the listen backlog. Returns the port, or -1.
  int Bind(const std::string& host, int port);

  // For code running on a connection worker (pre-routing, handlers, error handler), about the request
  // that worker is handling. Outside a connection worker these do nothing / report kNone.
  static void CloseAfterResponse();   // the body was not read (or only in part): do not reuse
  static ReadFailure CurrentReadFailure();
  // True when the current request's client has closed its connection (EOF or reset), checked without
  // blocking. Pipelined bytes waiting to be read count as alive.
  static bool ClientGone();

 private:
  bool process_and_close_socket(socket_t sock) override;

  TransportLimits limits_;
};

// How a request frames its body, from its headers alone (RFC 9112 §6). A request with neither
// Content-Length nor chunked Transfer-Encoding has no body: a body-less POST needs no header.
struct BodyFraming {
  bool has_body = false;
  bool chunked = false;
  uint64_t content_length = 0;
};
// The framing, or why it is refused (the message names the header).
struct FramingError {
  int http_status;
  std::string message;
};
std::optional<FramingError> ParseBodyFraming(const httplib::Request& req, BodyFraming* out);

enum class BodyRead { kOk, kTooLarge, kFailed };
// Reads the body through httplib's reader (which decodes chunked framing and gzip/deflate/br content
// encodings) into `body`, stopping as soon as the DECODED size would pass `max_bytes`, so neither a
// chunked stream nor a compression bomb is read further than the cap.
BodyRead ReadCappedBody(const httplib::ContentReader& reader, size_t max_bytes, std::string* body);

}  // namespace ember::server
