// RequestFramer: where a request ends, however its bytes arrive (whole, a byte at a time), and what it
// hands over at the head alone (bodies the routes never read, framing they refuse).
#include "server/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace ember::server {
namespace {

struct Fed {
  FrameState state = FrameState::kNeedMore;
  size_t end = 0;
  std::string buffer;  // after any Expect line was stripped
  bool continued = false;
};

// Feeds `bytes` in pieces of `piece` bytes as the connection loop does.
Fed Feed(const std::string& bytes, size_t piece, FramingLimits limits = {}) {
  RequestFramer framer(limits);
  Fed f;
  for (size_t at = 0; at < bytes.size() && f.state == FrameState::kNeedMore; at += piece) {
    f.buffer.append(bytes, at, piece);
    f.state = framer.Scan(f.buffer);
    if (framer.wants_continue()) {
      f.continued = true;
      framer.StripExpect(&f.buffer);
    }
  }
  if (f.state == FrameState::kComplete) f.end = framer.end();
  return f;
}

const std::string kPost = "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\n";

TEST(RequestFramer, LengthBodyEndsWhereItsLengthSaysWhateverThePieces) {
  const std::string req = kPost + "Content-Length: 5\r\n\r\nhello";
  for (size_t piece : {size_t{1}, size_t{3}, req.size(), req.size() + 10}) {
    const Fed f = Feed(req + "GET /next HTTP/1.1\r\n\r\n", piece);
    ASSERT_EQ(f.state, FrameState::kComplete) << piece;
    EXPECT_EQ(f.end, req.size()) << piece;
  }
  EXPECT_EQ(Feed(req.substr(0, req.size() - 1), 1).state, FrameState::kNeedMore);
}

TEST(RequestFramer, ChunkedBodyEndsAfterTheLastChunkAndTrailers) {
  const std::string req = kPost + "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
  for (size_t piece : {size_t{1}, size_t{7}, req.size()}) {
    const Fed f = Feed(req + "GET", piece);
    ASSERT_EQ(f.state, FrameState::kComplete) << piece;
    EXPECT_EQ(f.end, req.size()) << piece;
  }
  EXPECT_EQ(Feed(req.substr(0, req.size() - 2), 1).state, FrameState::kNeedMore);
}

TEST(RequestFramer, HeadAloneWhenTheBodyWillNotBeRead) {
  // GET (bodies of other methods are never read), no body, refused framing, a Content-Length over the cap.
  const std::string heads[] = {
      "GET /health HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
      kPost + "\r\n",
      kPost + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      kPost + "Transfer-Encoding: gzip\r\n\r\n",
      kPost + "Content-Length: 12abc\r\n\r\n",
      kPost + "Content-Length: 999999999\r\n\r\n",
  };
  for (const std::string& head : heads) {
    const Fed f = Feed(head + "body bytes", 4);
    ASSERT_EQ(f.state, FrameState::kComplete) << head;
    EXPECT_EQ(f.end, head.size()) << head;
  }
}

TEST(RequestFramer, ExpectContinueIsAnsweredByTheLoopAndStripped) {
  const std::string req = kPost + "expect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  const Fed f = Feed(req + "{}", 1);
  ASSERT_EQ(f.state, FrameState::kComplete);
  EXPECT_TRUE(f.continued);
  EXPECT_EQ(f.buffer.substr(0, f.end), kPost + "Content-Length: 2\r\n\r\n{}");
  // Over the cap: not invited, handed over with its Expect so the route's refusal answers it.
  const std::string big = kPost + "Expect: 100-continue\r\nContent-Length: 999999999\r\n\r\n";
  const Fed refused = Feed(big, 5);
  EXPECT_FALSE(refused.continued);
  EXPECT_EQ(refused.end, big.size());
}

TEST(RequestFramer, LimitsOnTheHeadAndTheRawBody) {
  FramingLimits limits;
  limits.max_header_bytes = 128;
  limits.max_raw_body_bytes = 64;
  EXPECT_EQ(Feed(kPost + "X: " + std::string(200, 'x'), 16, limits).state, FrameState::kHeaderLimit);
  EXPECT_EQ(Feed(kPost + "X: " + std::string(200, 'x') + "\r\n\r\n", 1000, limits).state, FrameState::kHeaderLimit);
  std::string chunks = kPost + "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 20; ++i) chunks += "8\r\n12345678\r\n";
  EXPECT_EQ(Feed(chunks, 3, limits).state, FrameState::kBodyLimit);
  // A chunk declared larger than the whole raw budget is refused before its bytes arrive.
  EXPECT_EQ(Feed(kPost + "Transfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n", 5, limits).state, FrameState::kBodyLimit);
}

TEST(RequestFramer, MalformedChunksAreHandedOverWhereTheyGoWrong) {
  const std::string head = kPost + "Transfer-Encoding: chunked\r\n\r\n";
  const Fed bad = Feed(head + "zz\r\nabc", 2);
  ASSERT_EQ(bad.state, FrameState::kComplete);
  EXPECT_EQ(bad.end, head.size() + 4);  // httplib's reader fails on the same line: a 400
  const Fed no_crlf = Feed(head + "3\r\nabcXY", 2);
  EXPECT_EQ(no_crlf.state, FrameState::kComplete);
}

}  // namespace
}  // namespace ember::server
