// The public API: Template::Parse/Render, RenderChatTemplate, error reporting with line and column,
// context validation, resource limits, and concurrent renders of one parsed template.
#include <atomic>
#include <thread>
#include <vector>

#include "render_util.h"
#include "template/chat_template.h"
#include "template/js_string.h"
#include "template/json_value.h"

namespace ember::jinja::testing {
namespace {

TEST(Errors, SyntaxErrorsNameLineAndColumn) {
  auto t = Template::Parse("line one\n{% if x %}\n  {{ x + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 3, column 10"), std::string::npos) << t.status().ToString();

  auto unclosed = Template::Parse("a\n{% for x in xs %}{{ x }}");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("unclosed 'for'"), std::string::npos) << unclosed.status().ToString();

  auto bad_char = Template::Parse("{{ a ; b }}");
  ASSERT_FALSE(bad_char.ok());
  EXPECT_NE(bad_char.status().message().find("line 1, column 6"), std::string::npos) << bad_char.status().ToString();
}

TEST(Errors, UnsupportedSyntaxIsRejectedNotIgnored) {
  for (const char* src : {"{% include 'x.j2' %}", "{% raw %}x{% endraw %}", "{% extends 'base' %}",
                          "{{ x is divisibleby(3) }}", "{{ 'a\\qb' }}", "{{ 'unterminated }}"}) {
    auto t = Template::Parse(src);
    ASSERT_FALSE(t.ok()) << src;
    EXPECT_NE(t.status().message().find("line 1"), std::string::npos) << t.status().ToString();
  }
  // A string literal continued with a backslash-newline (Mistral Small 3.1 does this) is an error in the
  // reference too, rather than a silently different prompt.
  EXPECT_FALSE(Template::Parse("{{ 'a\\\nb' }}").ok());
}

TEST(Errors, RuntimeErrorsNameLineAndColumn) {
  const auto r = Render("a\nb {{ 1 + 'x' - 2 }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2, column"), std::string::npos) << r.status().ToString();
  const auto raised = Render("{% if true %}\n\n   {{ raise_exception('bad roles') }}{% endif %}");
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(raised.status().message().find("line 3, column 7"), std::string::npos) << raised.status().ToString();
  EXPECT_NE(raised.status().message().find("bad roles"), std::string::npos);
}

TEST(Api, ContextValidation) {
  auto t = Template::Parse("{{ x }}");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->Render(nlohmann::ordered_json::array()).ok());
  EXPECT_FALSE(t->Render(J(R"({"range": 1})")).ok());  // builtins cannot be redefined
  EXPECT_FALSE(t->Render(J(R"({"true": 1})")).ok());
  EXPECT_EQ(*t->Render(J(R"({"x": "v"})")), "v");
}

TEST(Api, RenderChatTemplateNeedsMessages) {
  EXPECT_FALSE(RenderChatTemplate("x", J("{}")).ok());
  EXPECT_FALSE(RenderChatTemplate("x", J(R"({"messages": 1})")).ok());
  auto r = RenderChatTemplate("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
                              J(R"({"messages": [{"role": "user", "content": "hi"}], "bos_token": "<s>"})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "<s>hi");
}

TEST(Api, ClockComesFromTheCaller) {
  auto t = Template::Parse("{{ strftime_now('%Y-%m-%d') }}");
  ASSERT_TRUE(t.ok());
  EvalOptions opts;
  ::ember::testing::SimEnv env;
  env.SetWallMicros(0);
  opts.env = &env;
  EXPECT_EQ(*t->Render(J("{}"), opts), "1970-01-01");
  env.SetWallMicros(int64_t{86400} * 1'000'000 * 365);  // the render reads the Env at render time
  EXPECT_EQ(*t->Render(J("{}"), opts), "1971-01-01");
}

TEST(Limits, RecursionOutputAndRange) {
  const auto deep = Render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kResourceExhausted);

  auto t = Template::Parse("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}");
  ASSERT_TRUE(t.ok());
  EvalOptions small;
  small.limits.max_output_bytes = 1000;
  const auto big = t->Render(J("{}"), small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);

  EXPECT_FALSE(Render("{{ range(100000000) | length }}").ok());
  EXPECT_FALSE(Render("{% break %}").ok());
}

TEST(Api, ConcurrentRendersOfOneTemplate) {
  auto t = Template::Parse(
      "{%- set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.role }}:{{ m.content }};{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        nlohmann::ordered_json ctx;
        ctx["messages"] = {{{"role", "user"}, {"content", std::to_string(i)}}, {{"role", "bot"}, {"content", std::to_string(k)}}};
        const std::string want = "user:" + std::to_string(i) + ";bot:" + std::to_string(k) + ";2";
        auto got = t->Render(ctx);
        if (!got.ok() || *got != want) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(JsString, NumberFormattingMatchesJavaScript) {
  EXPECT_EQ(JsNumberToString(0.1), "0.1");
  EXPECT_EQ(JsNumberToString(1.5e300), "1.5e+300");
  EXPECT_EQ(JsNumberToString(1e21), "1e+21");
  EXPECT_EQ(JsNumberToString(123456789012345680000.0), "123456789012345680000");
  EXPECT_EQ(JsNumberToString(1e-7), "1e-7");
  EXPECT_EQ(JsNumberToString(0.000001), "0.000001");
  EXPECT_EQ(JsNumberToString(-2.5), "-2.5");
  EXPECT_EQ(JsNumberToString(100), "100");
}

TEST(JsString, TrimLengthAndQuote) {
  EXPECT_EQ(JsTrim("\xEF\xBB\xBF x \xE2\x80\xA8"), "x");  // BOM and U+2028 are JS whitespace
  EXPECT_EQ(Utf16Length("a\xF0\x9F\x8E\x89"), 3);
  EXPECT_EQ(JsonQuote("a\"\\\n\x01/", false), "\"a\\\"\\\\\\n\\u0001/\"");
  EXPECT_EQ(JsonQuote("\xF0\x9F\x8E\x89", true), "\"\\ud83c\\udf89\"");
}

TEST(JsonValue, KeyOrderFollowsJavaScriptObjects) {
  // JSON.parse puts array-index-like keys first, in numeric order; the rest keep their order.
  const Limits limits;
  const Value v = *FromJson(J(R"({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5})"), limits);
  std::string keys;
  for (const auto& [k, x] : v.as_object().items()) keys += k + ",";
  EXPECT_EQ(keys, "2,10,b,a,01,");
  EXPECT_TRUE(FromJson(J("2.0"), limits)->is_int());  // JS has no integral floats
  EXPECT_TRUE(FromJson(J("2.5"), limits)->is_float());
}

}  // namespace
}  // namespace ember::jinja::testing
