#include "template/builtins.h"

#include <cstdio>
#include <ctime>

namespace ember::jinja {
namespace {

Value Builtin(std::string name, std::function<StatusOr<Value>(Evaluator&, CallArgs&)> body) {
  Function f;
  f.name = std::move(name);
  f.call = [body = std::move(body)](Evaluator& ev, CallArgs& args, const std::shared_ptr<Env>&) {
    return body(ev, args);
  };
  return Value::MakeFunction(std::move(f));
}

// One (key, value) entry of namespace()'s positional argument: a 2-item list or a 2-character string.
Status AddNamespaceEntry(const Value& pair, Object* out) {
  Array kv;
  if (pair.is_array()) kv = pair.as_array();
  if (pair.is_string()) {
    for (char c : pair.as_string()) kv.push_back(Value::String(std::string(1, c)));
  }
  if (kv.size() != 2) return InvalidArgument("namespace expected an object or an iterable of [key, value] pairs");
  if (!kv[0].is_string()) return InvalidArgument("namespace keys must be strings");
  out->Set(kv[0].as_string(), kv[1]);
  return Status::Ok();
}

StatusOr<Value> MakeNamespace(Evaluator& ev, CallArgs& args) {
  if (args.positional.size() > 1) {
    return InvalidArgument("namespace expected at most 1 argument, got " + std::to_string(args.positional.size()));
  }
  Object entries;
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_object()) {
      EMBER_RETURN_IF_ERROR(ev.budget().Charge(src.as_object().size()));
      entries = src.as_object();  // a copy: assigning to the namespace must not change the dict
    } else if (src.is_array()) {
      EMBER_RETURN_IF_ERROR(ev.budget().Charge(src.as_array().size()));
      for (const Value& pair : src.as_array()) EMBER_RETURN_IF_ERROR(AddNamespaceEntry(pair, &entries));
    } else {
      return InvalidArgument(std::string("'") + src.TypeName() + "' object is not iterable");
    }
  }
  for (auto& [k, v] : args.keywords) entries.Set(k, v);
  EMBER_RETURN_IF_ERROR(ev.budget().CheckItems(entries.size()));
  return ev.NewNamespace(std::move(entries));
}

StatusOr<Value> Range(Budget& budget, CallArgs& args) {
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) return InvalidArgument("range() takes 1 to 3 integer arguments");
  for (const Value& v : p) {
    if (!v.is_int()) return InvalidArgument(std::string("range() arguments must be integers, got ") + v.TypeName());
  }
  int64_t start = 0, stop = p[0].as_int(), step = 1;
  if (p.size() >= 2) {
    start = p[0].as_int();
    stop = p[1].as_int();
  }
  if (p.size() == 3) step = p[2].as_int();
  if (step == 0) return InvalidArgument("range() step must not be zero");
  // The length first (in 128 bits: stop - start can overflow int64), so nothing is built past the limit.
  const __int128 span = step > 0 ? __int128{stop} - start : __int128{start} - stop;
  const __int128 magnitude = step > 0 ? __int128{step} : -__int128{step};
  const __int128 len = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  if (len > static_cast<__int128>(budget.limits().max_items)) {
    return ResourceExhausted("max_items exceeded: range() of " + std::to_string(static_cast<uint64_t>(len)) +
                             " items is longer than the limit of " + std::to_string(budget.limits().max_items));
  }
  EMBER_RETURN_IF_ERROR(budget.Charge(static_cast<uint64_t>(len)));
  Array out;
  out.reserve(static_cast<size_t>(len));
  for (__int128 k = 0; k < len; ++k) out.push_back(Value::Int(static_cast<int64_t>(start + k * step)));
  return Value::MakeArray(std::move(out));
}

}  // namespace

std::string FormatTime(const std::string& format, std::chrono::system_clock::time_point t) {
  static const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                        "July",    "August",   "September", "October", "November", "December"};
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  const auto pad2 = [](int v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%02d", v);
    return std::string(buf);
  };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    const char next = i + 1 < format.size() ? format[i + 1] : '\0';
    if (format[i] != '%' || std::string("YmdbBHM%").find(next) == std::string::npos || next == '\0') {
      out += format[i];
      continue;
    }
    switch (next) {
      case 'Y': out += std::to_string(tm.tm_year + 1900); break;
      case 'm': out += pad2(tm.tm_mon + 1); break;
      case 'd': out += pad2(tm.tm_mday); break;
      case 'b': out += std::string(kMonths[tm.tm_mon]).substr(0, 3); break;
      case 'B': out += kMonths[tm.tm_mon]; break;
      case 'H': out += pad2(tm.tm_hour); break;
      case 'M': out += pad2(tm.tm_min); break;
      default: out += '%'; break;
    }
    ++i;
  }
  return out;
}

bool IsGlobalName(std::string_view name) {
  static const char* const kNames[] = {"true", "false", "none", "True", "False", "None",
                                       "namespace", "range", "raise_exception", "strftime_now"};
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

void AddGlobals(Env* env) {
  env->Set("namespace", Builtin("namespace", [](Evaluator& ev, CallArgs& a) { return MakeNamespace(ev, a); }));
  env->Set("true", Value::Bool(true));
  env->Set("false", Value::Bool(false));
  env->Set("none", Value::None());
  env->Set("True", Value::Bool(true));
  env->Set("False", Value::Bool(false));
  env->Set("None", Value::None());
  env->Set("range", Builtin("range", [](Evaluator& ev, CallArgs& a) { return Range(ev.budget(), a); }));
  env->Set("raise_exception", Builtin("raise_exception", [](Evaluator& ev, CallArgs& a) -> StatusOr<Value> {
    std::string msg;
    if (!a.positional.empty()) {
      EMBER_ASSIGN_OR_RETURN(msg, ToConcatString(a.positional[0], ev.limits()));
    }
    return InvalidArgument("raise_exception: " + msg);
  }));
  env->Set("strftime_now", Builtin("strftime_now", [](Evaluator& ev, CallArgs& a) -> StatusOr<Value> {
    if (a.positional.empty() || !a.positional[0].is_string()) {
      return InvalidArgument("strftime_now() expects a format string");
    }
    EMBER_RETURN_IF_ERROR(ev.budget().ChargeBytes(a.positional[0].as_string().size()));
    ::ember::Env* clock = ev.options().env != nullptr ? ev.options().env : ::ember::Env::Default();
    const std::chrono::system_clock::time_point now{std::chrono::microseconds(clock->WallMicros())};
    return Value::String(FormatTime(a.positional[0].as_string(), now));
  }));
}

}  // namespace ember::jinja
