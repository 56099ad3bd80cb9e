#include "server/stop_matcher.h"

#include <gtest/gtest.h>

namespace ember::server {
namespace {

// Feeds pieces and returns everything emitted (including Finish()).
std::string Feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.Push(p);
  return out + m.Finish();
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.Push("hello"), "hello");
  EXPECT_EQ(m.Push(" world"), " world");
  EXPECT_EQ(m.Finish(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(Feed(m, {"abcSTOPdef"}), "abc");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "STOP");
}

TEST(StopMatcher, StopSplitAcrossTokensIsNeverEmitted) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.Push("ab S"), "ab ");  // "S" could start STOP: held
  EXPECT_EQ(m.Push("T"), "");
  EXPECT_EQ(m.Push("O"), "");
  EXPECT_EQ(m.Push("P and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.Push("x"), "");
  EXPECT_EQ(m.Finish(), "");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.Push("ST"), "");
  EXPECT_EQ(m.Push("AR"), "STAR");
  EXPECT_EQ(m.Push("S"), "");
  EXPECT_EQ(m.Finish(), "S");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(Feed(m, {"hel", "lo wor", "ld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcher, OverlappingPrefixes) {
  StopMatcher m({"aab"});
  EXPECT_EQ(Feed(m, {"a", "a", "a", "b", "c"}), "a");
  EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, EmptyStopStringIsIgnored) {
  StopMatcher m({""});
  EXPECT_EQ(Feed(m, {"abc"}), "abc");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackIncompleteUtf8) {
  StopMatcher m({});
  const std::string euro = "\xE2\x82\xAC";  // U+20AC in three byte tokens
  const std::string first = std::string("a").append(euro, 0, 1);  // not "a" + ...: GCC 12 -Wrestrict false positive
  EXPECT_EQ(m.Push(first), "a");
  EXPECT_EQ(m.Push(euro.substr(1, 1)), "");
  EXPECT_EQ(m.Push(euro.substr(2, 1)), euro);
}

TEST(IncompleteUtf8Suffix, Cases) {
  EXPECT_EQ(IncompleteUtf8Suffix(""), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xC3"), 1u);
  EXPECT_EQ(IncompleteUtf8Suffix("a\xC3\xA9"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xF0\x9F\x98\x80"), 0u);
}

}  // namespace
}  // namespace ember::server
