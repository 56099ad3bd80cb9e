// Every filter the supported chat templates use, in both the bare (`x | f`) and call (`x | f(...)`) forms.
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

bool IsError(const std::string& s) { return s.rfind("ERROR", 0) == 0; }

TEST(Filters, TrimUpperLowerCapitalizeTitle) {
  EXPECT_EQ(R("[{{ '  a b \n' | trim }}]{{ 'aB' | upper }}{{ 'aB' | lower }}{{ 'hi there' | capitalize }}"),
            "[a b]ABabHi there");
  EXPECT_EQ(R("{{ 'one two-three' | title }}"), "One Two-Three");
}

TEST(Filters, Length) {
  // String length counts UTF-16 code units, like JavaScript: "é" is 1, "🎉" is 2.
  EXPECT_EQ(R("{{ 'abc' | length }}{{ 'é' | length }}{{ '🎉' | length }}{{ [1, 2] | length }}{{ {'a': 1} | length }}"),
            "31221");
  EXPECT_TRUE(IsError(R("{{ 5 | length }}")));
}

TEST(Filters, ToJsonDefaultSpacing) {
  const auto ctx = J(R"({"t": {"name": "f", "args": {"x": [1, 2.5, true, null], "s": "q\"\n"}}})");
  EXPECT_EQ(R("{{ t | tojson }}", ctx), R"({"name": "f", "args": {"x": [1, 2.5, true, null], "s": "q\"\n"}})");
  EXPECT_EQ(R("{{ 'ü' | tojson }}{{ 'ü' | tojson(ensure_ascii=true) }}"), "\"ü\"\"\\u00fc\"");
  EXPECT_EQ(R("{{ missing | tojson }}{{ none | tojson }}{{ 2.0 | tojson }}"), "nullnull2");
}

TEST(Filters, ToJsonIndent) {
  const auto ctx = J(R"({"t": {"a": 1, "b": [1, {"c": []}], "d": {}}})");
  EXPECT_EQ(R("{{ t | tojson(indent=2) }}", ctx),
            "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {\n      \"c\": []\n    }\n  ],\n  \"d\": {}\n}");
  EXPECT_EQ(R("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), R"({"a": 2, "b": 1})");
  EXPECT_EQ(R("{{ [1, 2] | tojson(separators=(',', ':')) }}"), "[1,2]");
}

TEST(Filters, ItemsKeysValuesDictsort) {
  const auto ctx = J(R"({"d": {"b": 2, "a": 1}})");
  EXPECT_EQ(R("{{ d | items }}|{{ d.keys() }}|{{ d.values() }}|{{ d | dictsort }}", ctx),
            R"([["b", 2], ["a", 1]]|["b", "a"]|[2, 1]|[["a", 1], ["b", 2]])");
  EXPECT_EQ(R("{{ d.get('a') }}{{ d.get('zz', 'dflt') }}{{ d.get('zz') }}", ctx), "1dflt");
}

TEST(Filters, Default) {
  EXPECT_EQ(R("{{ missing | default('x') }}{{ '' | default('x') }}{{ '' | default('x', true) }}{{ 0 | default(5, boolean=true) }}"),
            "xx5");
  EXPECT_EQ(R("[{{ none | default('x') }}]"), "[]");  // none is defined
  EXPECT_TRUE(IsError(R("{{ missing | default }}")));     // the bare form does not apply to undefined
}

TEST(Filters, FirstLastJoinListReverseUnique) {
  const auto ctx = J(R"({"xs": [3, 1, 2, 1]})");
  EXPECT_EQ(R("{{ xs | first }}{{ xs | last }}{{ xs | join }}|{{ xs | join(', ') }}|{{ xs | list }}", ctx),
            "313121|3, 1, 2, 1|[3, 1, 2, 1]");
  EXPECT_EQ(R("{{ xs | reverse }}{{ xs | unique }}{{ 'abc' | join('-') }}", ctx), "[1, 2, 1, 3][3, 1, 2]a-b-c");
}

TEST(Filters, SortPlainAndByAttribute) {
  EXPECT_EQ(R("{{ [3, 1, 2] | sort }}{{ ['b', 'A', 'c'] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}"),
            R"([1, 2, 3]["A", "b", "c"][3, 2, 1])");
  EXPECT_EQ(R("{{ xs | sort(attribute='n') | map(attribute='k') | join }}", J(R"({"xs": [{"n": 2, "k": "b"}, {"n": 1, "k": "a"}]})")),
            "ab");
  EXPECT_TRUE(IsError(R("{{ [1, 'a'] | sort }}")));
}

TEST(Filters, SelectattrRejectattrMap) {
  const auto ctx = J(R"({"ms": [{"role": "user", "c": 1}, {"role": "assistant", "c": 2}, {"role": "user", "c": 3}]})");
  EXPECT_EQ(R("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}", ctx), "[1, 3]");
  EXPECT_EQ(R("{{ ms | rejectattr('role', 'equalto', 'user') | map(attribute='c') | list }}", ctx), "[2]");
  EXPECT_EQ(R("{{ ms | selectattr('c') | length }}{{ ms | map(attribute='zz', default='-') | join }}", ctx), "3---");
  // The selected items are the same objects, so identity comparison works (Mistral's templates use this).
  EXPECT_EQ(R("{% set us = ms | selectattr('role', 'equalto', 'user') | list %}{{ ms[2] == us[-1] }}{{ ms[0] == us[-1] }}", ctx),
            "truefalse");
}

TEST(Filters, SelectRejectExtensions) {
  EXPECT_EQ(R("{{ [1, 2, 3, 4] | select('odd') | list }}{{ [1, 2, 3, 4] | reject('odd') | list }}{{ [0, 1, ''] | select | list }}"),
            "[1, 3][2, 4][1]");
  EXPECT_EQ(R("{{ ['a', 'b'] | map('upper') | join }}"), "AB");
}

TEST(Filters, StringIntFloatAbs) {
  EXPECT_EQ(R("{{ 5 | string }}{{ 1.0 | string }}{{ true | string }}{{ [1] | string }}{{ 'x' | string }}"), "51.0true[1]x");
  EXPECT_EQ(R("{{ '42' | int }}{{ '42abc' | int }}{{ 'x' | int }}{{ 'x' | int(7) }}{{ 3.9 | int }}{{ true | int }}"), "4242073" "1");
  EXPECT_EQ(R("{{ '2.5' | float }}{{ 'x' | float }}{{ 2 | float }}{{ -3 | abs }}{{ -2.5 | abs }}"), "2.50.02.032.5");
  EXPECT_TRUE(IsError(R("{{ none | string }}")));
}

TEST(Filters, IndentAndReplace) {
  EXPECT_EQ(R("{{ 'a\nb\n\nc' | indent }}"), "a\n    b\n\n    c");
  EXPECT_EQ(R("{{ 'a\nb' | indent(2, true) }}"), "  a\n  b");
  EXPECT_EQ(R("{{ 'a-b-c' | replace('-', '+') }}{{ 'ab' | replace('', '.') }}"), "a+b+c.a.b.");
}

TEST(Filters, UnknownFilterIsAnErrorWithPosition) {
  const std::string r = R("ok\n{{ 'x' | frobnicate }}");
  EXPECT_NE(r.find("Unknown StringValue filter: frobnicate"), std::string::npos) << r;
  EXPECT_NE(r.find("line 2"), std::string::npos) << r;
}

}  // namespace
}  // namespace ember::jinja::testing
