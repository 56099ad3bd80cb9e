#include "server/request_framing.h"

#include <strings.h>

#include <algorithm>
#include <string_view>

namespace ember::server {
namespace {

constexpr std::string_view kCrlf = "\r\n";
// A chunk-size line (hex size and extensions) longer than this is not one a client writes.
constexpr size_t kMaxChunkLine = 1024;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The head's method and headers in httplib's types, so the framing rule is the one the routes apply.
httplib::Request HeadOf(std::string_view head, size_t* expect_begin, size_t* expect_end) {
  httplib::Request req;
  size_t line_end = head.find(kCrlf);
  req.method = std::string(head.substr(0, std::min(head.find(' '), line_end)));
  for (size_t at = line_end + 2; at < head.size();) {
    const size_t end = head.find(kCrlf, at);
    if (end == std::string_view::npos || end == at) break;
    const std::string_view line = head.substr(at, end - at);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = Trim(line.substr(0, colon));
      req.headers.emplace(std::string(name), std::string(Trim(line.substr(colon + 1))));
      if (name.size() == 6 && ::strncasecmp(name.data(), "Expect", 6) == 0) {
        *expect_begin = at;
        *expect_end = end + 2;
      }
    }
    at = end + 2;
  }
  return req;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

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

FrameState RequestFramer::Scan(const std::string& buffer) {
  if (head_end_ == 0) {
    const FrameState head = ScanHead(buffer);
    if (head != FrameState::kComplete) return head;
  }
  switch (body_) {
    case Body::kNone:
      end_ = head_end_;
      return FrameState::kComplete;
    case Body::kLength:
      if (buffer.size() - head_end_ < length_) return FrameState::kNeedMore;
      end_ = head_end_ + length_;
      return FrameState::kComplete;
    case Body::kChunked:
      return ScanChunks(buffer);
  }
  return FrameState::kNeedMore;
}

// Finds the blank line ending the head and reads the framing from it. A head whose framing the routes
// refuse (bad or conflicting headers, a Content-Length over the cap), or whose body the routes never
// read (any method but POST), is complete at the head: the worker answers it and closes.
FrameState RequestFramer::ScanHead(const std::string& buffer) {
  const size_t found = buffer.find("\r\n\r\n", search_from_);
  if (found == std::string::npos || found + 4 > limits_.max_header_bytes) {
    if (buffer.size() >= limits_.max_header_bytes) return FrameState::kHeaderLimit;
    search_from_ = buffer.size() < 3 ? 0 : buffer.size() - 3;
    return FrameState::kNeedMore;
  }
  head_end_ = found + 4;
  const httplib::Request req = HeadOf(std::string_view(buffer).substr(0, head_end_), &expect_begin_, &expect_end_);
  BodyFraming framing;
  if (ParseBodyFraming(req, &framing) || !framing.has_body || req.method != "POST" ||
      framing.content_length > limits_.max_body_bytes) {
    body_ = Body::kNone;
    return FrameState::kComplete;
  }
  body_ = framing.chunked ? Body::kChunked : Body::kLength;
  length_ = framing.content_length;
  pos_ = head_end_;
  wants_continue_ = expect_end_ != 0 && req.get_header_value("Expect") == "100-continue";
  return FrameState::kComplete;
}

void RequestFramer::StripExpect(std::string* buffer) {
  if (!wants_continue_) return;
  const size_t n = expect_end_ - expect_begin_;
  buffer->erase(expect_begin_, n);
  head_end_ -= n;
  pos_ -= n;
  if (end_ != 0) end_ -= n;
  search_from_ = 0;
  wants_continue_ = false;
}

// Walks chunk-size lines and data up to the last chunk and its trailers. Malformed framing is complete
// where it goes wrong: httplib's reader then fails on the same bytes and the route answers 400.
FrameState RequestFramer::ScanChunks(const std::string& buffer) {
  for (;;) {
    if (pos_ - head_end_ > limits_.max_raw_body_bytes) return FrameState::kBodyLimit;
    if (chunk_ == Chunk::kData) {
      const uint64_t have = std::min<uint64_t>(left_, buffer.size() - pos_);
      pos_ += have;
      left_ -= have;
      payload_ += have;
      // Past the cap in chunk data alone: without a Content-Encoding that is past the decoded cap too,
      // so the worker can refuse it now (with one, it refuses on the wire bytes).
      if (payload_ > limits_.max_body_bytes) return FrameState::kBodyLimit;
      if (left_ > 0) return FrameState::kNeedMore;
      chunk_ = Chunk::kDataEnd;
      continue;
    }
    if (chunk_ == Chunk::kDataEnd) {  // the CRLF after a chunk's data, and nothing else
      if (buffer.size() - pos_ < 2) return FrameState::kNeedMore;
      if (buffer.compare(pos_, 2, kCrlf) != 0) break;
      pos_ += 2;
      chunk_ = Chunk::kSize;
      continue;
    }
    const size_t line_end = buffer.find(kCrlf, pos_);
    if (line_end == std::string::npos) {
      if (buffer.size() - pos_ > kMaxChunkLine) break;
      return FrameState::kNeedMore;
    }
    if (line_end - pos_ > kMaxChunkLine) break;
    const std::string_view line(buffer.data() + pos_, line_end - pos_);
    pos_ = line_end + 2;
    if (chunk_ == Chunk::kTrailer) {
      if (line.empty()) break;  // the blank line after the trailers ends the body
    } else {
      uint64_t size = 0;
      size_t digits = 0;
      for (; digits < line.size() && HexDigit(line[digits]) >= 0 && digits < 16; ++digits) {
        size = size * 16 + static_cast<uint64_t>(HexDigit(line[digits]));
      }
      if (digits == 0 || size > limits_.max_raw_body_bytes) {
        if (digits > 0) return FrameState::kBodyLimit;
        break;
      }
      left_ = size;
      chunk_ = size == 0 ? Chunk::kTrailer : Chunk::kData;
    }
  }
  end_ = pos_;
  return FrameState::kComplete;
}

}  // namespace ember::server
