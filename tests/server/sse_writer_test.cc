#include "server/sse_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

using nlohmann::json;

TEST(Sse, DataFrame) {
  EXPECT_EQ(SseData(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
}

TEST(Sse, NamedEvent) {
  EXPECT_EQ(SseEvent("message_stop", json{{"type", "message_stop"}}),
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

TEST(Sse, NewlinesInTextStayOnOneDataLine) {
  const std::string frame = SseData(json{{"text", "line1\nline2"}});
  EXPECT_EQ(frame.find('\n'), frame.size() - 2);
}

TEST(Sse, InvalidUtf8IsReplacedNotThrown) {
  EXPECT_NO_THROW({
    const std::string frame = SseData(json{{"text", std::string("a\xFF")}});
    EXPECT_NE(frame.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  });
}

TEST(SseWriter, StopsAfterFirstFailedWrite) {
  int calls = 0;
  SseWriter w([&](std::string_view) { return ++calls < 2; });
  EXPECT_TRUE(w.Data(json{{"x", 1}}));
  EXPECT_FALSE(w.Data(json{{"x", 2}}));
  EXPECT_FALSE(w.Done());
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(calls, 2);
}

TEST(SseWriter, WritesFramesInOrder) {
  std::string out;
  SseWriter w([&](std::string_view b) { out.append(b); return true; });
  w.Data(json{{"n", 1}});
  w.Raw(": ping\n\n");
  w.Done();
  EXPECT_EQ(out, "data: {\"n\":1}\n\n: ping\n\ndata: [DONE]\n\n");
}

}  // namespace
}  // namespace ember::server
