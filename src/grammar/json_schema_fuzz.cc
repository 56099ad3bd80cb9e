// libFuzzer target for the JSON Schema -> GBNF compiler (json_schema.h): the input is a schema's JSON
// text. Every input must compile or fail with InvalidArgument (never crash, never another code), within
// the compile budget; what compiles must fit the budget's bytes and be a grammar ParseGbnf accepts or
// refuses with InvalidArgument (a schema whose required properties recurse for ever has no finite
// value). A second compile with a rule prefix must agree on success (prefixes only rename rules).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "grammar/compile_budget.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "util/check.h"

namespace {

// Request schemas are a few KiB; bigger inputs only slow each run down (the server's limits are
// exercised by tests/grammar/json_schema_budget_test.cc).
constexpr size_t kMaxSchemaBytes = 16 << 10;

ember::grammar::CompileLimits FuzzLimits() {
  ember::grammar::CompileLimits l;
  l.max_bytes = 64 << 10;
  l.max_rules = 1024;
  l.max_time = std::chrono::milliseconds(5000);  // under the sanitizers; the run's -timeout is 10 s
  return l;
}

// Nesting the caller must bound (the server's util/json_limited.h): deeper inputs are not requests.
bool TooDeep(std::string_view text) {
  int depth = 0;
  for (char c : text) {
    if (c == '{' || c == '[') ++depth;
    if (depth > 64) return true;
    if (c == '}' || c == ']') --depth;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxSchemaBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (TooDeep(text)) return 0;
  ember::grammar::CompileBudget budget(FuzzLimits());
  ember::grammar::JsonSchemaOptions options;
  options.budget = &budget;
  auto gbnf = ember::grammar::JsonSchemaTextToGbnf(text, options);
  if (!gbnf.ok()) {
    EMBER_CHECK(gbnf.status().code() == ember::StatusCode::kInvalidArgument);
    EMBER_CHECK(!gbnf.status().message().empty());
    return 0;
  }
  EMBER_CHECK(gbnf->size() <= FuzzLimits().max_bytes);
  auto g = ember::grammar::ParseGbnf(*gbnf);
  EMBER_CHECK(g.ok() || g.status().code() == ember::StatusCode::kInvalidArgument);

  ember::grammar::CompileBudget again(FuzzLimits());
  options.budget = &again;
  options.prefix = "t0-";
  auto prefixed = ember::grammar::JsonSchemaTextToGbnf(text, options);
  // The prefix lengthens every rule name, so only the byte limit may tell the two apart.
  EMBER_CHECK(prefixed.ok() || prefixed.status().message().find("bytes") != std::string::npos);
  return 0;
}
