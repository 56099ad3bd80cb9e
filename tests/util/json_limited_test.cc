// The depth-limited JSON parser every untrusted JSON text goes through (util/json_limited.h).
#include "util/json_limited.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace ember {
namespace {

// `{"a":{"a":...1...}}` with `depth` objects, or `[[...1...]]` with `depth` arrays.
std::string Nested(size_t depth, bool arrays = false) {
  std::string s;
  s.reserve(depth * 6 + 1);
  for (size_t i = 0; i < depth; ++i) s += arrays ? "[" : "{\"a\":";
  s += "1";
  for (size_t i = 0; i < depth; ++i) s += arrays ? "]" : "}";
  return s;
}

TEST(JsonLimited, AcceptsUpToTheLimit) {
  StatusOr<nlohmann::json> j = ParseJsonLimited(Nested(kMaxJsonDepth));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  const nlohmann::json* v = &*j;
  for (int i = 0; i < kMaxJsonDepth; ++i) v = &(*v)["a"];
  EXPECT_EQ(*v, 1);
  EXPECT_TRUE(ParseJsonLimited(Nested(kMaxJsonDepth, /*arrays=*/true)).ok());
}

TEST(JsonLimited, OneLevelMoreIsRefusedNamingTheLimit) {
  for (bool arrays : {false, true}) {
    StatusOr<nlohmann::json> j = ParseJsonLimited(Nested(kMaxJsonDepth + 1, arrays));
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(j.status().message().find("64"), std::string::npos) << j.status().message();
  }
  // Objects and arrays count alike: 40 of each, interleaved.
  std::string mixed;
  for (int i = 0; i < 40; ++i) mixed += "[{\"k\":";
  mixed += "0";
  for (int i = 0; i < 40; ++i) mixed += "}]";
  EXPECT_EQ(ParseJsonLimited(mixed).status().code(), StatusCode::kResourceExhausted);
}

// The reported crash: 100,000 levels (600 KB). Without the limit, parsing succeeds (nlohmann's parser is
// iterative) and the first copy or dump of the value overflows the stack.
TEST(JsonLimited, HundredThousandLevelsAreRefusedWithoutBuildingThem) {
  for (bool arrays : {false, true}) {
    const std::string text = Nested(100000, arrays);
    StatusOr<nlohmann::json> j = ParseJsonLimited(text);
    EXPECT_EQ(j.status().code(), StatusCode::kResourceExhausted);
    StatusOr<nlohmann::ordered_json> o = ParseOrderedJsonLimited(text);
    EXPECT_EQ(o.status().code(), StatusCode::kResourceExhausted);
  }
}

// Where the recursion is (checked, so the limit sits in the right place): nlohmann's parser and its
// destructor are iterative, so parsing and freeing a 100,000-deep value is safe; copying and dumping
// recurse once per level and overflow the stack (the reported SIGSEGV came from dump()). Hence the
// limit at parse time: every value the server holds can then be copied and dumped.
TEST(JsonLimited, NlohmannParsesAndFreesDeepValuesWithoutRecursion) {
  for (bool arrays : {false, true}) {
    const nlohmann::json deep = nlohmann::json::parse(Nested(100000, arrays));
    EXPECT_TRUE(arrays ? deep.is_array() : deep.is_object());
    // Freed here, at the end of the scope.
  }
}

// Wide is fine: depth, not size, is what recursion pays for. The check must also stay linear in the
// length: nlohmann's parser callback (the obvious way to limit depth) rescans the parent array after
// every element, which takes minutes for the 300,000 elements of a 3 MB body. Linear is well under a
// second even on a loaded machine; the bound only catches the quadratic way.
TEST(JsonLimited, WideArraysStayLinear) {
  std::string wide = "[";
  for (int i = 0; i < 300000; ++i) wide += i ? ",{\"a\":[1]}" : "{\"a\":[1]}";
  wide += "]";
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<nlohmann::json> w = ParseJsonLimited(wide);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->size(), 300000u);
  EXPECT_LT(s, 20.0);
}

TEST(JsonLimited, InvalidTextIsAnInvalidArgumentWithTheParserMessage) {
  for (const char* text : {"", "{", "{\"a\":}", "nope", "[1,]", "\"\\ud800\"", "\"\xff\""}) {
    StatusOr<nlohmann::json> j = ParseJsonLimited(text);
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(j.status().message().find("parse error"), std::string::npos) << j.status().message();
  }
  // Beyond double: nlohmann throws out_of_range, not parse_error; still a value, not an exception.
  StatusOr<nlohmann::json> big = ParseJsonLimited("{\"temperature\":1e999}");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  // Too deep and then broken: the depth is what the client needs to hear about.
  EXPECT_EQ(ParseJsonLimited(Nested(100) + "garbage").status().code(), StatusCode::kResourceExhausted);
}

TEST(JsonLimited, OrderedKeepsTheClientsKeyOrder) {
  StatusOr<nlohmann::ordered_json> j = ParseOrderedJsonLimited(R"({"z":1,"a":{"y":2,"b":3}})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->dump(), R"({"z":1,"a":{"y":2,"b":3}})");
}

// An object with `keys` members "k0".."kN".
std::string WideObject(int keys) {
  std::string s = "{";
  for (int i = 0; i < keys; ++i) s += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  return s + "}";
}

TEST(JsonLimited, OrderedObjectsAreBoundedByTheirKeyScanWork) {
  // 5,000 keys: 12.5 M compares, under the bound; 200,000 keys (94 s of compares when kept in order)
  // are refused by the scan before anything is built, and plain JSON still takes them.
  StatusOr<nlohmann::ordered_json> ok = ParseOrderedJsonLimited(WideObject(5000));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->size(), 5000u);
  const std::string huge = WideObject(200000);
  StatusOr<nlohmann::ordered_json> refused = ParseOrderedJsonLimited(huge);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(std::to_string(kMaxOrderedKeyWork)), std::string::npos);
  StatusOr<nlohmann::json> plain = ParseJsonLimited(huge);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->size(), 200000u);
  // Many objects add up: 400 objects of 1,000 keys are 200 M compares in total.
  std::string many = "[";
  for (int i = 0; i < 400; ++i) {
    // Two appends, not `(i ? "," : "") + WideObject(..)`: GCC 12 at -O3 warns falsely (-Wrestrict,
    // PR105329) on operator+(const char*, string&&) when the literal may be empty.
    if (i > 0) many += ',';
    many += WideObject(1000);
  }
  EXPECT_FALSE(ParseOrderedJsonLimited(many + "]").ok());
}

}  // namespace
}  // namespace ember
