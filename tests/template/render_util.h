// Shared helpers for the template tests: render a template string against a JSON context.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "support/sim_env.h"
#include "template/template.h"

namespace ember::jinja::testing {

// A clock standing at 2024-07-26T10:30:00Z, so strftime_now() is deterministic.
inline ::ember::Env* FixedTime() {
  static ::ember::testing::SimEnv* const env = [] {
    auto* e = new ::ember::testing::SimEnv();
    e->SetWallMicros(int64_t{1721989800} * 1'000'000);
    return e;
  }();
  return env;
}

inline StatusOr<std::string> Render(const std::string& tmpl, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto t = Template::Parse(tmpl);
  if (!t.ok()) return t.status();
  EvalOptions opts;
  opts.env = FixedTime();
  return t->Render(ctx, opts);
}

// Renders and returns the output, or "ERROR: <status>" so a failure shows up in the EXPECT_EQ diff.
inline std::string R(const std::string& tmpl, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto r = Render(tmpl, ctx);
  return r.ok() ? *r : "ERROR: " + r.status().ToString();
}

inline nlohmann::ordered_json J(const char* text) { return nlohmann::ordered_json::parse(text); }

}  // namespace ember::jinja::testing
