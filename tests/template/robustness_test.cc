// Hostile or broken templates must fail with a Status, never crash, hang or overflow the stack.
#include <random>

#include "render_util.h"

namespace ember::jinja::testing {
namespace {

TEST(Robustness, DeepNestingIsRejected) {
  const std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  EXPECT_FALSE(Template::Parse("{{ " + parens + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(Template::Parse(ifs).ok());
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_FALSE(Template::Parse(chain + " }}").ok());
  EXPECT_FALSE(Template::Parse("{{ " + std::string(10000, '-') + "1 }}").ok());
  // Moderate nesting still works.
  EXPECT_EQ(R("{{ " + std::string(50, '(') + "7" + std::string(50, ')') + " }}"), "7");
}

// Random token soup: every parse/render must return (ok or a located error).
TEST(Robustness, RandomTokenSoupNeverCrashes) {
  static const char* const kPieces[] = {
      "{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "if", "elif", "else", "endif", "for",
      "endfor", "in", "set", "macro", "endmacro", "call", "endcall", "x", "xs", "loop", ".", "[", "]", "(", ")",
      "{", "}", ",", ":", "|", "trim", "tojson", "is", "not", "defined", "and", "or", "+", "-", "~", "*", "/",
      "//", "%", "**", "==", "<", "'s'", "\"t\"", "1", "2.5", "none", "true", " ", "\n", "text", "=", "::-1",
      "namespace(", "range(3)", "caller()", "break", "continue", "'\\",
  };
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pick(0, sizeof(kPieces) / sizeof(kPieces[0]) - 1);
  std::uniform_int_distribution<int> len(1, 40);
  const auto ctx = J(R"({"x": {"a": [1, 2]}, "xs": [1, "two", null]})");
  EvalOptions opts;
  opts.limits.max_output_bytes = 1 << 16;
  int parsed = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string src;
    for (int k = len(rng); k > 0; --k) src += kPieces[pick(rng)];
    auto t = Template::Parse(src);
    if (!t.ok()) {
      ASSERT_NE(t.status().message().find("template"), std::string::npos) << src;
      continue;
    }
    ++parsed;
    auto r = t->Render(ctx, opts);
    if (!r.ok()) {
      ASSERT_FALSE(r.status().message().empty()) << src;
    }
  }
  EXPECT_GT(parsed, 100);  // the soup must reach the evaluator, not only the parser
}

}  // namespace
}  // namespace ember::jinja::testing
