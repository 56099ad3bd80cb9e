// Statements: if/elif/else, for (loop variables, else, inline if, unpacking, break/continue), set (plain,
// tuple, block, namespace attribute), macros (defaults, keywords, varargs/kwargs), call blocks, filter
// blocks, and the scoping rules between them.
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

TEST(If, ElifElse) {
  const std::string t = "{% if n == 1 %}one{% elif n == 2 %}two{% elif n > 2 %}many{% else %}none{% endif %}";
  EXPECT_EQ(R(t, J(R"({"n": 1})")), "one");
  EXPECT_EQ(R(t, J(R"({"n": 2})")), "two");
  EXPECT_EQ(R(t, J(R"({"n": 7})")), "many");
  EXPECT_EQ(R(t, J(R"({"n": 0})")), "none");
}

TEST(If, Truthiness) {
  const std::string t = "{% if v %}T{% else %}F{% endif %}";
  for (const char* falsy : {R"({"v": ""})", R"({"v": 0})", R"({"v": 0.0})", R"({"v": []})", R"({"v": {}})",
                            R"({"v": null})", R"({"v": false})", "{}"}) {
    EXPECT_EQ(R(t, J(falsy)), "F") << falsy;
  }
  for (const char* truthy : {R"({"v": "x"})", R"({"v": -1})", R"({"v": [0]})", R"({"v": {"a": 0}})", R"({"v": true})"}) {
    EXPECT_EQ(R(t, J(truthy)), "T") << truthy;
  }
}

TEST(For, LoopVariables) {
  const std::string t =
      "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
      "{{ loop.length }}{{ loop.first }}{{ loop.last }};{% endfor %}";
  EXPECT_EQ(R(t, J(R"({"xs": ["a", "b"]})")), "10212truefalse;21102falsetrue;");
  EXPECT_EQ(R("{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }} {% endfor %}", J(R"({"xs": [1, 2, 3]})")),
            ">1>2 1>2>3 2>3> ");
}

TEST(For, ElseRunsOnlyWhenEmpty) {
  const std::string t = "{% for x in xs %}{{ x }}{% else %}empty{% endfor %}";
  EXPECT_EQ(R(t, J(R"({"xs": []})")), "empty");
  EXPECT_EQ(R(t, J(R"({"xs": [1]})")), "1");
}

TEST(For, InlineIfFiltersBeforeLoopVariables) {
  EXPECT_EQ(R("{% for x in xs if x > 1 %}{{ x }}/{{ loop.length }} {% endfor %}", J(R"({"xs": [1, 2, 3]})")),
            "2/2 3/2 ");
}

TEST(For, OverDictKeysAndItems) {
  const auto ctx = J(R"({"d": {"b": 1, "a": 2}})");
  EXPECT_EQ(R("{% for k in d %}{{ k }}{% endfor %}", ctx), "ba");  // insertion order, not sorted
  EXPECT_EQ(R("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", ctx), "b=1,a=2,");
  EXPECT_EQ(R("{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}", ctx), "b1a2");
}

TEST(For, BreakAndContinue) {
  EXPECT_EQ(R("{% for x in xs %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", J(R"({"xs": [1, 2, 3, 4]})")),
            "12");
  EXPECT_EQ(R("{% for x in xs %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}",
              J(R"({"xs": [1, 2, 3, 4]})")),
            "13");
  // Like the reference, what an iteration printed before its continue is dropped.
  EXPECT_EQ(R("{% for x in xs %}<{{ x }}{% if x == 2 %}{% continue %}{% endif %}>{% endfor %}", J(R"({"xs": [1, 2, 3]})")),
            "<1><3>");
}

TEST(For, NestedLoopsKeepTheirOwnLoopObject) {
  EXPECT_EQ(R("{% for a in [1, 2] %}{% for b in [1, 2, 3] %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}"),
            "1231|1232|");
}

TEST(For, ErrorsOnNonIterable) {
  EXPECT_NE(R("{% for x in 5 %}{% endfor %}").find("ERROR"), std::string::npos);
  EXPECT_NE(R("{% for x in missing %}{% endfor %}").find("Expected iterable"), std::string::npos);
  EXPECT_NE(R("{% for a, b in [[1, 2, 3]] %}{% endfor %}").find("Too many items to unpack"), std::string::npos);
}

TEST(Set, PlainTupleAndBlock) {
  EXPECT_EQ(R("{% set x = 'v' %}{{ x }}"), "v");
  EXPECT_EQ(R("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(R("{% set a, b = 1, 2 %}{{ a + b }}"), "3");
  EXPECT_EQ(R("{% set body %}Hello {{ name }}!{% endset %}[{{ body }}]", J(R"({"name": "Bo"})")), "[Hello Bo!]");
}

TEST(Set, LoopScopeDoesNotLeakButNamespaceDoes) {
  EXPECT_EQ(R("{% set n = 0 %}{% for x in [1, 2] %}{% set n = n + x %}{% endfor %}{{ n }}"), "0");
  EXPECT_EQ(R("{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}"),
            "6");
  // Within one loop, a set is seen by later iterations (reference behaviour).
  EXPECT_EQ(R("{% for x in [1, 2, 3] %}{% if x > 1 %}{{ prev }}{% endif %}{% set prev = x %}{% endfor %}"), "12");
  // If blocks do not open a scope.
  EXPECT_EQ(R("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
}

TEST(Set, NamespaceForms) {
  EXPECT_EQ(R("{% set ns = namespace() %}{% set ns.a = 1 %}{% set ns.b = 'x' %}{{ ns.a }}{{ ns.b }}"), "1x");
  EXPECT_EQ(R("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns }}"), R"(12{"a": 1, "b": 2})");
  EXPECT_NE(R("{% set d = {'a': 1} %}{% set d.a = 2 %}").find("non-namespace"), std::string::npos);
}

TEST(Macro, DefaultsKeywordsAndCallerScope) {
  const std::string m = "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}";
  EXPECT_EQ(R(m + "{{ greet('Al') }}|{{ greet('Bo', '?') }}|{{ greet(punct='.', name='Cy') }}"), "Hi Al!|Hi Bo?|Hi Cy.");
  // Missing arguments are undefined (print nothing); free names resolve in the caller's scope.
  EXPECT_EQ(R("{% macro m(a) %}[{{ a }}{{ outer }}]{% endmacro %}{% set outer = 'O' %}{{ m() }}"), "[O]");
  EXPECT_NE(R(m + "{{ greet('a', 'b', 'c') }}").find("takes not more than 2"), std::string::npos);
  EXPECT_NE(R(m + "{{ greet('a', bogus=1) }}").find("no keyword argument 'bogus'"), std::string::npos);
}

TEST(Macro, VarargsKwargsAndRecursion) {
  EXPECT_EQ(R("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}"),
            R"(1[2, 3]{"k": "v"})");
  EXPECT_EQ(R("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
}

TEST(CallBlock, CallerWithAndWithoutArguments) {
  EXPECT_EQ(R("{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}inside{% endcall %}"), "[inside]");
  EXPECT_EQ(R("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
              "{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}"),
            "<1><2>");
}

TEST(FilterBlock, AppliesToRenderedBody) {
  EXPECT_EQ(R("{% filter upper %}abc {{ 'd' }}{% endfilter %}"), "ABC D");
  EXPECT_EQ(R("{% filter replace('a', 'o') %}banana{% endfilter %}"), "bonono");
}

}  // namespace
}  // namespace ember::jinja::testing
