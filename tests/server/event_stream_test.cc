// StartEventStream: httplib runs the provider after the route handler has returned, outside the
// dispatcher's catch, so a throwing stream must end only its own response.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "server/routes.h"

namespace ember::server {
namespace {

struct Captured {
  std::string bytes;
  bool done = false;
  bool provider_ok = false;
  int released = 0;
};

void RunProvider(httplib::Response& res, Captured* c) {
  httplib::DataSink sink;
  sink.write = [c](const char* d, size_t n) {
    c->bytes.append(d, n);
    return true;
  };
  sink.done = [c] { c->done = true; };
  sink.is_writable = [] { return true; };
  c->provider_ok = res.content_provider_(0, 0, sink);
}

TEST(EventStreamTest, WritesFramesThenEnds) {
  httplib::Response res;
  Captured c;
  StartEventStream(res, [](SseWriter& w) { w.Data({{"x", 1}}); w.Done(); }, [&c] { ++c.released; });
  ASSERT_TRUE(res.is_chunked_content_provider_);
  EXPECT_EQ(res.get_header_value("Content-Type"), "text/event-stream");
  RunProvider(res, &c);
  EXPECT_TRUE(c.provider_ok);
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.bytes, "data: {\"x\":1}\n\ndata: [DONE]\n\n");
  res.content_provider_resource_releaser_(true);
  EXPECT_EQ(c.released, 1);
}

TEST(EventStreamTest, AnExceptionEndsOnlyThisResponse) {
  httplib::Response res;
  Captured c;
  StartEventStream(
      res,
      [](SseWriter& w) {
        w.Data({{"partial", true}});
        throw std::runtime_error("boom");
      },
      [&c] { ++c.released; });
  ASSERT_NO_THROW(RunProvider(res, &c));
  EXPECT_FALSE(c.provider_ok);  // httplib closes the connection instead of ending the chunked body
  EXPECT_FALSE(c.done);
  EXPECT_EQ(c.bytes, "data: {\"partial\":true}\n\n");
  res.content_provider_resource_releaser_(false);
  EXPECT_EQ(c.released, 1);
}

}  // namespace
}  // namespace ember::server
