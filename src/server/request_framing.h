// Where one HTTP/1.1 request ends in the bytes a connection has received so far. The connection loop
// (connection_loop.h) uses it to hand a request to a worker only once it is all there; httplib then
// parses it from memory. This is a framing scan, not a parser: it finds the end of the head, takes the
// body framing from the head with the same rule the routes apply (ParseBodyFraming), and walks chunk
// sizes. Whatever it cannot judge it hands over as it is, and the worker's checks refuse it.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ember::server {

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

struct FramingLimits {
  size_t max_header_bytes = 64 << 10;          // request line + headers
  size_t max_body_bytes = 8 << 20;  // a Content-Length above it is refused from the head; chunk data past it is kBodyLimit
  size_t max_raw_body_bytes = size_t{2} << 30;  // wire bytes of one body, chunk framing included
};

enum class FrameState {
  kNeedMore,     // the request is not complete yet
  kComplete,     // bytes [0, end()) are one request the worker can parse without reading the socket
  kHeaderLimit,  // no end of the head within max_header_bytes
  kBodyLimit,    // the body passed max_raw_body_bytes on the wire
};

class RequestFramer {
 public:
  explicit RequestFramer(const FramingLimits& limits) : limits_(limits) {}

  // Scans `buffer` (the connection's bytes; the request starts at 0). Each call continues where the last
  // one stopped, so a request arriving in many pieces is scanned once in all. After kComplete, erase
  // [0, end()) from the buffer and Reset() for the next request.
  FrameState Scan(const std::string& buffer);
  size_t end() const { return end_; }
  // The head is complete (so the request line and headers are known).
  bool head_done() const { return head_end_ != 0; }
  // The head carries `Expect: 100-continue` for a body the loop is going to read: the loop answers
  // "100 Continue" itself and calls StripExpect, so the worker does not invite the body a second time.
  bool wants_continue() const { return wants_continue_; }
  void StripExpect(std::string* buffer);
  void Reset() { *this = RequestFramer(limits_); }

 private:
  FrameState ScanHead(const std::string& buffer);
  FrameState ScanChunks(const std::string& buffer);

  FramingLimits limits_;
  size_t search_from_ = 0;  // where the search for the head's end resumes
  size_t head_end_ = 0;     // offset just past the blank line ending the head (0: not found yet)
  size_t end_ = 0;
  bool wants_continue_ = false;
  size_t expect_begin_ = 0, expect_end_ = 0;  // the Expect line, CRLF included
  // Body framing once the head is known.
  enum class Body { kNone, kLength, kChunked } body_ = Body::kNone;
  uint64_t length_ = 0;
  // Chunked walk: the next unscanned offset and what it is in.
  enum class Chunk { kSize, kData, kDataEnd, kTrailer } chunk_ = Chunk::kSize;
  size_t pos_ = 0;
  uint64_t left_ = 0;     // data bytes left in the current chunk
  uint64_t payload_ = 0;  // chunk data bytes scanned so far
};

}  // namespace ember::server
