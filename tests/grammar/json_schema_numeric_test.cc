// Integer ranges are exact and bounded numbers sound: checked value by value against the bounds.
#include "grammar/json_schema_numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "grammar/grammar.h"

namespace ember::grammar::schema_numeric {
namespace {

std::shared_ptr<const Grammar> Parse(const std::string& body) {
  StatusOr<std::shared_ptr<const Grammar>> g = ParseGbnf("root ::= " + body + "\n");
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << body;
  return g.ok() ? *g : nullptr;
}

TEST(IntegerRange, ExactlyTheIntegersInRange) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 0}, {0, 9}, {0, 100}, {-50, 50}, {1, 1}, {7, 1234}, {-1234, -7}, {-9, 0}, {10, 19}, {99, 101}, {-101, -99},
      {250, 255}, {-1, 1}, {0, 999}, {123, 4567}};
  for (const auto& [lo, hi] : ranges) {
    std::shared_ptr<const Grammar> g = Parse(IntegerRange(lo, hi));
    ASSERT_NE(g, nullptr);
    for (int64_t v = -1300; v <= 5000; ++v) {
      EXPECT_EQ(Matches(*g, std::to_string(v)), v >= lo && v <= hi) << lo << ".." << hi << ": " << v;
    }
    EXPECT_FALSE(Matches(*g, "-0")) << lo << ".." << hi;
    EXPECT_FALSE(Matches(*g, "00")) << lo << ".." << hi;
    EXPECT_FALSE(Matches(*g, "01")) << lo << ".." << hi;
  }
}

TEST(IntegerRange, TheDigitBoundHolds) {
  std::shared_ptr<const Grammar> g = Parse(IntegerRange(-kMaxMagnitude, kMaxMagnitude));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Matches(*g, "999999999999999"));
  EXPECT_TRUE(Matches(*g, "-999999999999999"));
  EXPECT_FALSE(Matches(*g, "1000000000000000"));
}

TEST(NumberGrammar, EveryAcceptedNumberIsWithinTheBounds) {
  struct Case {
    Bounds b;
    std::vector<const char*> must_match;
  };
  const std::vector<Case> cases = {
      {{0.0, 1.0, false, false}, {"0", "1", "0.5", "0.999"}},
      {{0.0, 1.0, true, true}, {"0.5", "0.001"}},
      {{-1.0, 1.0, false, false}, {"-1", "-0.75", "0", "0.25", "1"}},
      {{-40.5, 60.0, false, false}, {"-40", "-39.5", "60", "59.99"}},
      {{std::nullopt, 0.0, false, true}, {"-1", "-0.5", "-123.25"}},
      {{10.0, std::nullopt, true, false}, {"11", "10.5", "99999.5"}},
      {{2.5, 3.5, false, false}, {"3"}},
  };
  for (const Case& c : cases) {
    const std::string body = NumberGrammar(c.b);
    ASSERT_FALSE(body.empty());
    std::shared_ptr<const Grammar> g = Parse(body);
    ASSERT_NE(g, nullptr);
    for (const char* m : c.must_match) EXPECT_TRUE(Matches(*g, m)) << m << " in " << body;
    // Soundness on a grid: whatever matches satisfies the bounds.
    for (int i = -20000; i <= 20000; i += (i > -6000 && i < 6000) ? 1 : 37) {
      for (const char* fmt : {"%.2f", "%.3f", "%.0f"}) {
        char buf[32];
        std::snprintf(buf, sizeof buf, fmt, i / 100.0);
        if (!Matches(*g, buf)) continue;
        const double v = std::atof(buf);
        if (c.b.minimum) {
          EXPECT_TRUE(c.b.exclusive_minimum ? v > *c.b.minimum : v >= *c.b.minimum) << buf << " " << body;
        }
        if (c.b.maximum) {
          EXPECT_TRUE(c.b.exclusive_maximum ? v < *c.b.maximum : v <= *c.b.maximum) << buf << " " << body;
        }
      }
    }
  }
}

TEST(NumberGrammar, UnboundedNumbersHaveBoundedDigits) {
  std::shared_ptr<const Grammar> g = Parse(NumberGrammar({}));
  ASSERT_NE(g, nullptr);
  for (const char* ok : {"0", "-0", "1.5", "-2e10", "3.25E-7", "123456789012345"}) EXPECT_TRUE(Matches(*g, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "1e", "+1", "1234567890123456", "1e123"}) EXPECT_FALSE(Matches(*g, bad)) << bad;
}

TEST(NumberGrammar, NothingFitsIsEmpty) {
  EXPECT_TRUE(NumberGrammar({0.0, 0.0, true, false}).empty());
  int64_t lo = 0, hi = 0;
  EXPECT_FALSE(IntegerBounds({0.5, 0.9, false, false}, &lo, &hi));
  EXPECT_TRUE(IntegerBounds({0.5, 2.5, false, false}, &lo, &hi));
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 2);
}

}  // namespace
}  // namespace ember::grammar::schema_numeric
