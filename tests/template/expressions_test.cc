// Expressions: literals and how values print, operators and their precedence, member/item access,
// slicing, string methods, tests, conditional expressions, and undefined-variable semantics.
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

bool IsError(const std::string& s) { return s.rfind("ERROR", 0) == 0; }

TEST(Printing, ValuesPrintLikeTheReference) {
  EXPECT_EQ(R("{{ 1 }}|{{ -2 }}|{{ 1.0 }}|{{ 2.5 }}|{{ true }}|{{ false }}|{{ none }}|{{ undefined_name }}"),
            "1|-2|1.0|2.5|true|false||");
  EXPECT_EQ(R("{{ [1, 'a', none, true, 1.5] }}"), R"([1, "a", null, true, 1.5])");
  EXPECT_EQ(R("{{ {'k': [1, {'n': none}], 'e': {}} }}"), R"({"k": [1, {"n": null}], "e": {}})");
  EXPECT_EQ(R("{{ [missing] }}"), "[undefined]");
}

TEST(Literals, StringsAndEscapes) {
  EXPECT_EQ(R(R"({{ 'a\nb' }}|{{ "q\"q" }}|{{ 'it\'s' }}|{{ '\t' }}|{{ '\x41\u00e9' }})"), "a\nb|q\"q|it's|\t|A\xC3\xA9");
  EXPECT_EQ(R("{{ 'con' 'cat' }}"), "concat");  // adjacent literals join
  EXPECT_EQ(R("{{ [1, 2,] | length }}{{ (1, 2) | length }}"), "22");
}

TEST(Operators, Arithmetic) {
  EXPECT_EQ(R("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}"),
            "7|9|3.5|2.0|3|-4|1");
  EXPECT_EQ(R("{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 1.5 + 1 }}|{{ 3 - 5 }}"), "-1|1024|0.5|2.5|-2");
  EXPECT_TRUE(IsError(R("{{ 1 // 0 }}")));
  EXPECT_TRUE(IsError(R("{{ 'a' - 1 }}")));
}

TEST(Operators, ConcatenationWithTildeAndPlus) {
  EXPECT_EQ(R("{{ 'a' ~ 1 ~ 1.5 ~ true }}|{{ 'n' + 1 }}|{{ 1.0 ~ '' }}|{{ [1, 2] + [3] }}"), "a11.5true|n1|1|[1, 2, 3]");
  // `~` and `+` share one precedence level (left to right), as in the reference.
  EXPECT_EQ(R("{{ 'a' ~ 1 + 2 }}"), "a12");
  EXPECT_EQ(R("{{ 'x' + [1, 'b'] }}"), "x1,b");
  EXPECT_TRUE(IsError(R("{{ 'a' ~ missing }}")));
  EXPECT_TRUE(IsError(R("{{ 'a' + none }}")));
}

TEST(Operators, ComparisonLogicAndMembership) {
  EXPECT_EQ(R("{{ 1 < 2 }}{{ 2 <= 2 }}{{ 3 > 4 }}{{ 1 == 1.0 }}{{ 'a' != 'b' }}"), "truetruefalsetruetrue");
  EXPECT_EQ(R("{{ 1 == '1' }}{{ true == 1 }}{{ none == missing }}{{ [1] == [1] }}"), "truetruetruefalse");
  EXPECT_EQ(R("{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}{{ 'x' in missing }}"),
            "truetruetruetruefalse");
  EXPECT_EQ(R("{{ 0 or 'd' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ not 0 }}|{{ not not 'x' }}"), "d|b||true|true");
  EXPECT_EQ(R("{{ 1 < 2 and 2 < 3 or false }}"), "true");
  EXPECT_TRUE(IsError(R("{{ 'a' < 'b' }}")));  // the reference only orders numbers
}

TEST(Operators, ConditionalExpressions) {
  EXPECT_EQ(R("{{ 'y' if 1 else 'n' }}{{ 'y' if 0 else 'n' }}{{ 'only' if false }}|"), "yn|");
  EXPECT_EQ(R("{{ 'a' if x == 1 else 'b' if x == 2 else 'c' }}", J(R"({"x": 2})")), "b");
}

TEST(Access, AttributesItemsAndIndices) {
  const auto ctx = J(R"({"m": {"role": "user", "parts": [{"t": "x"}, {"t": "y"}]}, "xs": [10, 20, 30]})");
  EXPECT_EQ(R("{{ m.role }}{{ m['role'] }}{{ m.parts[1].t }}{{ m['parts'][0]['t'] }}", ctx), "useruseryx");
  EXPECT_EQ(R("{{ xs[0] }}{{ xs[-1] }}{{ xs.1 }}{{ xs[5] }}{{ xs | length }}{{ xs.length }}", ctx), "10302033");
  EXPECT_EQ(R("{{ m.missing }}{{ m.missing.deeper }}{{ missing.attr }}", ctx), "");
  EXPECT_EQ(R("{{ 'hello'[1] }}{{ 'hello'[-1] }}"), "eo");
  EXPECT_TRUE(IsError(R("{{ missing[0] }}")));  // indexing undefined by number is an error in the reference
}

TEST(Access, Slicing) {
  const auto ctx = J(R"({"xs": [1, 2, 3, 4, 5]})");
  EXPECT_EQ(R("{{ xs[1:3] }}{{ xs[:2] }}{{ xs[3:] }}{{ xs[::-1] }}{{ xs[::2] }}{{ xs[-2:] }}{{ xs[:-1] }}", ctx),
            "[2, 3][1, 2][4, 5][5, 4, 3, 2, 1][1, 3, 5][4, 5][1, 2, 3, 4]");
  EXPECT_EQ(R("{{ 'héllo'[::-1] }}|{{ 'abcdef'[1:4] }}|{{ 'abc'[5:] }}"), "olléh|bcd|");
  EXPECT_EQ(R("{{ xs[4:1:-1] }}{{ xs[10:] }}", ctx), "[5, 4, 3][]");
}

TEST(StringMethods, CommonMethods) {
  EXPECT_EQ(R("{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}{{ '  x  '.strip() }}|{{ '  x '.lstrip() }}|{{ ' x  '.rstrip() }}|"),
            "HELLOhellox|x | x|");
  EXPECT_EQ(R("{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}"), "Hello World|HELLO");
  EXPECT_EQ(R("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}{{ 'abc'.startswith(('x', 'a')) }}"), "truetruetrue");
  EXPECT_EQ(R("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a,b,c'.split(',', 1) }}"),
            R"(["a", "b", "", "c"]["a", "b"]["a", "b,c"])");
  EXPECT_EQ(R("{{ 'aaa'.replace('a', 'b') }}{{ 'aaa'.replace('a', 'b', 2) }}"), "bbbbba");
  // The reference ignores strip's argument and strips all whitespace (Qwen3's `.strip('\n')` relies on it).
  EXPECT_EQ(R(R"({{ '\n x \n'.strip('\n') }}|{{ 'xax'.strip('x') }})"), "x|xax");
  EXPECT_EQ(R("{{ 'a</think>b'.split('</think>')[-1] }}"), "b");
}

TEST(Tests, IsTests) {
  const auto ctx = J(R"({"s": "x", "n": 1, "f": 1.5, "l": [1], "d": {"a": 1}, "z": null, "t": true})");
  EXPECT_EQ(R("{{ s is string }}{{ n is number }}{{ f is number }}{{ n is integer }}{{ f is integer }}", ctx),
            "truetruetruetruefalse");
  EXPECT_EQ(R("{{ l is iterable }}{{ s is iterable }}{{ d is iterable }}{{ d is mapping }}{{ l is mapping }}", ctx),
            "truetruefalsetruefalse");
  EXPECT_EQ(R("{{ l is sequence }}{{ d is sequence }}{{ n is sequence }}", ctx), "truetruefalse");
  EXPECT_EQ(R("{{ z is none }}{{ missing is none }}{{ missing is defined }}{{ s is defined }}{{ missing is undefined }}", ctx),
            "truefalsefalsetruetrue");
  EXPECT_EQ(R("{{ t is true }}{{ t is false }}{{ 1 is true }}{{ t is boolean }}{{ z is not none }}", ctx),
            "truefalsefalsetruefalse");
  EXPECT_EQ(R("{{ 3 is odd }}{{ 3 is even }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ range is callable }}"),
            "truefalsetruetruetrue");
  EXPECT_NE(R("{{ 1 is frobnicated }}").find("Unknown test: frobnicated"), std::string::npos);
}

TEST(Undefined, SemanticsMatchTheReference) {
  EXPECT_EQ(R("[{{ nope }}]{% if nope %}x{% endif %}{{ nope | default('d') }}{{ nope is defined }}"), "[]dfalse");
  EXPECT_TRUE(IsError(R("{{ nope + 1 }}")));
  EXPECT_TRUE(IsError(R("{{ nope | length }}")));
  EXPECT_TRUE(IsError(R("{{ nope() }}")));
  EXPECT_EQ(R("{{ nope == none }}{{ nope != 1 }}"), "truetrue");
}

TEST(Globals, RangeAndRaiseAndStrftime) {
  EXPECT_EQ(R("{{ range(3) }}{{ range(1, 4) }}{{ range(5, 0, -2) }}"), "[0, 1, 2][1, 2, 3][5, 3, 1]");
  const std::string raised = R("line1\n  {{ raise_exception('Roles must alternate') }}");
  EXPECT_NE(raised.find("Roles must alternate"), std::string::npos) << raised;
  EXPECT_NE(raised.find("line 2"), std::string::npos) << raised;
  EXPECT_EQ(R(R"({{ strftime_now("%d %b %Y") }}|{{ strftime_now("%Y-%m-%d %H:%M %B %% %y") }})"),
            "26 Jul 2024|2024-07-26 10:30 July % %y");
  EXPECT_EQ(R("{{ True }}{{ False }}{{ None }}"), "truefalse");
}

}  // namespace
}  // namespace ember::jinja::testing
