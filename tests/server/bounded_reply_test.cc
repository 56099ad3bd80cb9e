// Replies that grow with what a request asks for are built as text under a byte limit, and refused
// with a 413 naming the limit rather than built past it.
#include "server/bounded_reply.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/fake_backend.h"

namespace ember::server {
namespace {

using nlohmann::json;

TEST(BoundedReply, TokenizeReplyIsTheJsonItAlwaysWas) {
  int calls = 0;
  auto piece_of = [&](int32_t id) {
    ++calls;
    std::string piece = id == 3 ? "\xff" : "p";
    if (id != 3) piece += std::to_string(id);
    return piece;
  };
  ApiResult<std::string> r = TokenizeReply({1, 2, 1, 3}, /*with_pieces=*/true, piece_of, 1 << 20);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(r.value()),
            json::parse(R"({"tokens":[{"id":1,"piece":"p1"},{"id":2,"piece":"p2"},{"id":1,"piece":"p1"},)"
                        R"({"id":3,"piece":[255]}]})"));
  EXPECT_EQ(calls, 3);  // each distinct id rendered once
  ApiResult<std::string> ids = TokenizeReply({7, 8}, false, piece_of, 1 << 20);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids.value(), R"({"tokens":[7,8]})");
}

TEST(BoundedReply, PastTheLimitIsA413NamingIt) {
  std::vector<int32_t> ids(10000, 5);
  auto piece_of = [](int32_t) { return std::string("abc"); };
  ApiResult<std::string> r = TokenizeReply(ids, true, piece_of, 50000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().http_status, 413);
  EXPECT_NE(r.error().message.find("reply limit of 50000 bytes"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("without with_pieces"), std::string::npos) << r.error().message;
  EXPECT_TRUE(TokenizeReply(ids, false, piece_of, 50000).ok());  // 20 kB of ids fit
}

TEST(BoundedReply, DetokenizeIsRefusedBeforeTheTextIsBuilt) {
  FakeBackend fake;
  std::vector<int32_t> ids(300000, 'x');  // several slices
  ApiResult<std::string> fits = DetokenizeWithin(fake, ids, 400000);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(json::parse(fits.value())["content"], std::string(300000, 'x'));
  ApiResult<std::string> over = DetokenizeWithin(fake, ids, 200000);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().http_status, 413);
  EXPECT_NE(over.error().message.find("200000"), std::string::npos);
}

TEST(BoundedReply, TheLimitFollowsTheBodyLimit) {
  ServeOptions o;
  o.max_body_bytes = 8u << 20;
  EXPECT_EQ(MaxReplyBytes(o), 32u << 20);
  o.max_body_bytes = 1000;
  EXPECT_EQ(MaxReplyBytes(o), 4u << 20);
}

}  // namespace
}  // namespace ember::server
