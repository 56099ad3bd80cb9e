// The global names every template sees: true/false/none (and True/False/None), namespace(), range(),
// raise_exception() and strftime_now(). Like the reference renderer, these are ordinary variables, and a
// render context that tries to define one of them is rejected.
#pragma once

#include <string_view>

#include "template/evaluator.h"

namespace ember::jinja {

void AddGlobals(Env* env);
bool IsGlobalName(std::string_view name);

// strftime for the directives the reference supports (%Y %m %d %b %B %H %M %%), in UTC; any other
// `%x` is copied through unchanged.
std::string FormatTime(const std::string& format, std::chrono::system_clock::time_point t);

}  // namespace ember::jinja
