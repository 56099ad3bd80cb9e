// Render limits (template/limits.h): every way a template or its context can ask for unbounded work,
// memory or recursion fails with a ResourceExhausted error that names the limit, and real templates stay
// far inside the defaults.
#include <pthread.h>

#include <functional>

#include "reference_util.h"
#include "render_util.h"

namespace ember::jinja::testing {
namespace {

// Renders with `opts` (default limits unless the test changes them).
StatusOr<std::string> RenderWith(const std::string& tmpl, const EvalOptions& opts,
                                 const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto t = Template::Parse(tmpl);
  if (!t.ok()) return t.status();
  return t->Render(ctx, opts);
}

void ExpectLimit(const StatusOr<std::string>& r, const std::string& limit) {
  ASSERT_FALSE(r.ok()) << "rendered " << r->size() << " bytes; expected " << limit;
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find(limit + " exceeded"), std::string::npos) << r.status().ToString();
}

void ExpectLimit(const std::string& tmpl, const std::string& limit,
                 const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  SCOPED_TRACE(tmpl.substr(0, 200));
  ExpectLimit(Render(tmpl, ctx), limit);
}

// A namespace `ns` whose `s` is a string of 2^20 'x' (1 MiB), built by doubling.
const std::string kMegabyte =
    "{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}";

TEST(StepBudget, NestedRangesStop) {
  // 10^12 iterations without a budget; the default budget stops it after 10^7 steps.
  ExpectLimit("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}", "max_steps");
}

TEST(StepBudget, CountsNodesAndIterations) {
  EvalOptions opts;
  RenderStats stats;
  opts.stats = &stats;
  ASSERT_TRUE(RenderWith("{% for i in range(1000) %}{{ i }}{% endfor %}", opts).ok());
  EXPECT_GE(stats.steps, 2000u);  // at least one step per iteration and one per printed node
  EXPECT_LT(stats.steps, 20000u);
  opts.limits.max_steps = 1000;
  ExpectLimit(RenderWith("{% for i in range(1000) %}{{ i }}{% endfor %}", opts), "max_steps");
  EXPECT_EQ(stats.steps, 1000u);  // stats are filled in on failure too
}

TEST(StepBudget, AppendingInALoopIsQuadraticAndStops) {
  // Each `+` copies the list: 10^5 appends copy ~5 * 10^9 items.
  ExpectLimit("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
              "max_steps");
}

TEST(StepBudget, ChargesWorkInsideOperations) {
  // One node each, but each scans a million items or a megabyte, a hundred thousand times.
  ExpectLimit("{% set xs = range(1000000) %}{% for i in range(100000) %}{% if -1 in xs %}{% endif %}{% endfor %}",
              "max_steps");
  ExpectLimit(kMegabyte + "{% for i in range(100000) %}{% if 'y' in ns.s %}{% endif %}{% endfor %}", "max_steps");
  ExpectLimit(kMegabyte + "{% for i in range(100000) %}{% set t = ns.s | trim %}{% endfor %}", "max_steps");
  ExpectLimit("{{ range(1000000) | unique | length }}", "max_steps");  // 5 * 10^11 comparisons
}

TEST(SizeCaps, StringDoublingStops) {
  ExpectLimit("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
              "{{ ns.s | length }}",
              "max_string_bytes");
  ExpectLimit("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
              "max_string_bytes");
}

TEST(SizeCaps, ListDoublingStops) {
  ExpectLimit("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
              "max_items");
  ExpectLimit("{{ range(2000000) | length }}", "max_items");
  ExpectLimit("{{ range(-9223372036854775807, 9223372036854775807) | length }}", "max_items");
}

TEST(SizeCaps, OperationsThatMultiplyTheirInput) {
  ExpectLimit("{{ 'a\nb' | indent(1000000000000) }}", "max_string_bytes");
  // There is no string repetition (the reference has none either): `'x' * 10**9` is a type error at once.
  const auto r = Render("{{ 'x' * 10**9 }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Unknown operator \"*\" between StringValue and IntegerValue"),
            std::string::npos) << r.status().ToString();
}

TEST(SizeCaps, JoinReplaceAndIndentCheckTheirOutput) {
  ExpectLimit(kMegabyte + "{{ range(100000) | join(ns.s) }}", "max_string_bytes");
  ExpectLimit(kMegabyte + "{{ ns.s.replace('x', ns.s) }}", "max_string_bytes");
  ExpectLimit(kMegabyte + "{{ ns.s | replace('', ns.s) }}", "max_string_bytes");
  ExpectLimit(kMegabyte + "{{ ns.s | join(ns.s) }}", "max_string_bytes");
  ExpectLimit(kMegabyte + "{{ ns.s.replace('x', '\n') | indent(100) }}", "max_string_bytes");
}

TEST(SizeCaps, CapturedBlocksAndMacroOutputAreStrings) {
  EvalOptions opts;
  opts.limits.max_string_bytes = 1000;
  ExpectLimit(RenderWith("{% set x %}{% for i in range(1000) %}ab{% endfor %}{% endset %}", opts), "max_string_bytes");
  ExpectLimit(RenderWith("{% macro m() %}{% for i in range(1000) %}ab{% endfor %}{% endmacro %}{{ m() | length }}",
                         opts),
              "max_string_bytes");
}

TEST(SizeCaps, OutputCapCoversCallBlocksAndFilterBlocks) {
  EvalOptions opts;
  opts.limits.max_output_bytes = 1000;
  opts.limits.max_string_bytes = 1 << 20;
  ExpectLimit(RenderWith("{% macro m() %}{{ caller() }}{% endmacro %}"
                         "{% for i in range(100) %}{% call m() %}0123456789ab{% endcall %}{% endfor %}",
                         opts),
              "max_output_bytes");
  ExpectLimit(RenderWith("{% for i in range(100) %}{% filter upper %}0123456789ab{% endfilter %}{% endfor %}", opts),
              "max_output_bytes");
}

TEST(SizeCaps, SharedSublistsCannotPrintExponentially) {
  // 40 levels of [l, l]: a small value whose JSON text would be 2^40 times longer.
  const std::string dag =
      "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}";
  ExpectLimit(dag + "{{ ns.l }}", "max_string_bytes");
  ExpectLimit(dag + "{{ ns.l | tojson }}", "max_string_bytes");
  ExpectLimit(dag + "{{ ns.l ~ '' }}", "max_string_bytes");
  ExpectLimit(dag + "{{ ns.l == 'x' }}", "max_string_bytes");
}

TEST(Cycles, SelfReferencingNamespaceFailsToPrint) {
  const std::string self = "{% set ns = namespace(a=1) %}{% set ns.me = ns %}";
  for (const char* use : {"{{ ns }}", "{{ ns | tojson }}", "{{ [ns] ~ '' }}", "{{ [ns] == 'x' }}",
                          "{{ {'k': [ns]} | tojson(indent=2) }}"}) {
    SCOPED_TRACE(use);
    const auto r = Render(self + use);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("contains itself"), std::string::npos) << r.status().ToString();
  }
  // Reading through the cycle is fine: only printing it is infinite.
  EXPECT_EQ(R(self + "{{ ns.me.me.me.a }}"), "1");
  EXPECT_EQ(R(self + "{{ ns.me == ns }}"), "true");
  EXPECT_EQ(R(self + "{{ [ns] | join(',') }}"), "[object Map]");  // JS String(map): no recursion
}

TEST(Cycles, MutuallyReferencingNamespaces) {
  const auto r = Render("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ a }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("contains itself"), std::string::npos) << r.status().ToString();
}

TEST(Depth, BuiltValuesCannotNestPastTheLimit) {
  ExpectLimit("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}"
              "{{ ns.l }}",
              "max_depth");
  ExpectLimit("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = {'a': ns.l} %}{% endfor %}",
              "max_depth");
  // 60 levels are fine.
  EXPECT_EQ(R("{% set ns = namespace(l=1) %}{% for i in range(60) %}{% set ns.l = [ns.l] %}{% endfor %}"
              "{{ ns.l | tojson | length }}"),
            "121");
}

TEST(Depth, NamespaceChainsFailToPrintAndAreFreedWithoutRecursion) {
  // 100,000 namespaces each holding the previous: printing is too deep, and ending the render must not
  // free the chain recursively (that would overflow the stack).
  const std::string chain =
      "{% set ns = namespace(c=none) %}{% for i in range(100000) %}{% set ns.c = namespace(c=ns.c) %}{% endfor %}";
  ExpectLimit(chain + "{{ ns.c }}", "max_depth");
  EXPECT_EQ(R(chain + "done"), "done");
}

TEST(Depth, ContextJsonIsDepthLimited) {
  const auto nested = [](int depth) {
    return nlohmann::ordered_json::parse(std::string(depth, '[') + std::string(depth, ']'));
  };
  nlohmann::ordered_json ctx;
  ctx["x"] = nested(64);
  EXPECT_EQ(R("{{ x | tojson | length }}", ctx), "128");
  ctx["x"] = nested(65);
  const auto r = Render("{{ x }}", ctx);
  ExpectLimit(r, "max_depth");
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos) << r.status().ToString();  // names the key
  ctx["x"] = nested(100000);  // parses (nlohmann is iterative) but must not recurse in the conversion
  ExpectLimit(Render("{{ x }}", ctx), "max_depth");
}

TEST(Depth, LargeContextObjectsStayFast) {
  // 200,000 keys: quadratic insertion or lookup would take hours; hashed it takes milliseconds.
  // (Built under nlohmann's ordered_map, whose own insert is a linear search.)
  nlohmann::ordered_json big = nlohmann::ordered_json::object();
  auto& items = static_cast<std::vector<std::pair<const std::string, nlohmann::ordered_json>>&>(
      big.get_ref<nlohmann::ordered_json::object_t&>());
  for (int i = 0; i < 200000; ++i) {
    std::string key = "k";
    key.append(std::to_string(i));
    items.emplace_back(std::move(key), i);
  }
  nlohmann::ordered_json ctx;
  ctx["d"] = big;
  EXPECT_EQ(R("{{ d.k199999 }} {{ d | length }} {{ 'k5' in d }}", ctx), "199999 200000 true");
}

TEST(Nesting, DeepTemplateSourceIsRejectedAtParse) {
  EXPECT_FALSE(Template::Parse("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 100000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(Template::Parse(ifs).ok());
  // Chains of chains: each operand a parenthesised chain, 200 x 1000 deep if not counted together.
  std::string src = "{{ ";
  for (int i = 0; i < 150; ++i) {
    src.append("(1");
    for (int k = 0; k < 900; ++k) src.append(" + 1");
    src.append(" + ");
  }
  src.append("1");
  src.append(150, ')');
  src.append(" }}");
  const auto t = Template::Parse(src);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("expression too long"), std::string::npos) << t.status().ToString();
}

TEST(Nesting, LongElifChainsAreFlat) {
  // 100,000 elifs are one level deep, not 100,000.
  std::string src = "{% if x == 0 %}zero";
  for (int i = 1; i < 100000; ++i) src += "{% elif x == " + std::to_string(i) + " %}" + std::to_string(i);
  src += "{% else %}big{% endif %}";
  EXPECT_EQ(R(src, J(R"({"x": 99999})")), "99999");
  EXPECT_EQ(R(src, J(R"({"x": 100000})")), "big");
}

// Runs `fn` on a thread with a stack of `bytes` (what a server worker thread gets by default).
void OnStack(size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t th;
  auto* f = new std::function<void()>(fn);
  ASSERT_EQ(pthread_create(&th, &attr, [](void* p) -> void* {
              auto* g = static_cast<std::function<void()>*>(p);
              (*g)();
              delete g;
              return nullptr;
            }, f), 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(Nesting, RecursionThroughMacrosHitsALimitNotTheStack) {
  // Each macro level nests an expression ~190 deep; 256 levels of calls would be ~50,000 frames.
  std::string expr = "f(n - 1)";
  for (int i = 0; i < 190; ++i) expr = "('' ~ " + expr + ")";
  const std::string tmpl = "{% macro f(n) %}{% if n > 0 %}{{ " + expr + " }}{% endif %}{% endmacro %}{{ f(1000) }}";
  OnStack(8u << 20, [&] { ExpectLimit(Render(tmpl), "max_nesting"); });
  // Plain recursion still stops at the call depth.
  OnStack(8u << 20, [] { ExpectLimit(Render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), "max_call_depth"); });
}

TEST(Nesting, MaxNestingFitsAServerThreadStack) {
  // max_nesting frames of the deepest-per-level expression must fit in 8 MiB: a chain as deep as the
  // parser allows inside macros that recurse until the evaluator stops them.
  std::string chain = "f(n - 1)";
  for (int i = 0; i < 900; ++i) chain += " ~ ''";
  const std::string tmpl = "{% macro f(n) %}{% if n > 0 %}{{ " + chain + " }}{% endif %}{% endmacro %}{{ f(100) }}";
  OnStack(8u << 20, [&] { ExpectLimit(Render(tmpl), "max_nesting"); });
}

TEST(RealTemplates, LongConversationsUseLittleOfTheBudget) {
  const auto tokens = nlohmann::ordered_json::parse(ReadFile(TemplateTestDir() + "/templates/tokens.json"));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
  for (int i = 0; i < 500; ++i) {
    messages.push_back({{"role", "user"}, {"content", "Question " + std::to_string(i) + ": " + std::string(400, 'q')}});
    messages.push_back({{"role", "assistant"}, {"content", "Answer " + std::to_string(i) + ": " + std::string(400, 'a')}});
  }
  messages.push_back({{"role", "user"}, {"content", "Last question?"}});
  for (const auto& [name, toks] : tokens.items()) {
    SCOPED_TRACE(name);
    nlohmann::ordered_json ctx = {{"messages", messages}, {"add_generation_prompt", true}};
    for (const auto& [k, v] : toks.items()) ctx[k] = v;
    EvalOptions opts;
    opts.env = FixedTime();
    RenderStats stats;
    opts.stats = &stats;
    const auto r = RenderWith(ReadFile(TemplateTestDir() + "/templates/" + name + ".jinja"), opts, ctx);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GT(r->size(), 400u * 1000u);
    EXPECT_LT(stats.steps, opts.limits.max_steps / 20) << name << " used " << stats.steps << " steps";
    std::printf("%-14s 1002 messages, %zu bytes: %llu steps\n", name.c_str(), r->size(),
                static_cast<unsigned long long>(stats.steps));
  }
}

}  // namespace
}  // namespace ember::jinja::testing
