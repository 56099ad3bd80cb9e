#include "template/methods.h"

#include <algorithm>
#include <cmath>

#include "template/js_string.h"

namespace ember::jinja {
namespace {

Value Method(std::string name, std::function<StatusOr<Value>(CallArgs&)> body) {
  Function f;
  f.name = std::move(name);
  f.call = [body = std::move(body)](Evaluator&, CallArgs& args, const std::shared_ptr<Env>&) { return body(args); };
  return Value::MakeFunction(std::move(f));
}

const Value* Arg(const CallArgs& args, size_t i) { return i < args.positional.size() ? &args.positional[i] : nullptr; }

// startswith/endswith accept a string or a list/tuple of strings.
StatusOr<Value> AffixTest(const std::string& s, const CallArgs& args, bool prefix) {
  const char* name = prefix ? "startswith()" : "endswith()";
  const Value* p = Arg(args, 0);
  if (!p) return InvalidArgument(std::string(name) + " requires at least one argument");
  auto test = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (p->is_string()) return Value::Bool(test(p->as_string()));
  if (p->is_array()) {
    for (const Value& item : p->as_array()) {
      if (!item.is_string()) return InvalidArgument(std::string(name) + " tuple elements must be strings");
      if (test(item.as_string())) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return InvalidArgument(std::string(name) + " argument must be a string or tuple of strings");
}

// Python's str.split(sep=None, maxsplit=-1).
StatusOr<Value> Split(const std::string& s, const CallArgs& args) {
  const Value* sep = Arg(args, 0);
  const Value* max = Arg(args, 1);
  if (sep && !sep->is_string() && !sep->is_none()) return InvalidArgument("sep argument must be a string or null");
  if (max && !max->is_int()) return InvalidArgument("maxsplit argument must be a number");
  const int64_t maxsplit = max ? max->as_int() : -1;
  Array parts;
  if (!sep || sep->is_none()) {
    // Runs of whitespace separate; no empty strings at either end.
    const std::string text = JsTrimStart(s);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t start = pos, end = pos;
      while (end < text.size()) {
        size_t next = end;
        if (IsJsSpace(NextCodePoint(text, &next))) break;
        end = next;
      }
      if (maxsplit != -1 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(Value::String(text.substr(start)));
        break;
      }
      parts.push_back(Value::String(text.substr(start, end - start)));
      pos = end;
      while (pos < text.size()) {
        size_t next = pos;
        if (!IsJsSpace(NextCodePoint(text, &next))) break;
        pos = next;
      }
    }
    return Value::MakeArray(std::move(parts));
  }
  const std::string& d = sep->as_string();
  if (d.empty()) return InvalidArgument("empty separator");
  size_t start = 0;
  while (true) {
    const size_t hit = s.find(d, start);
    if (hit == std::string::npos || (maxsplit != -1 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    parts.push_back(Value::String(s.substr(start, hit - start)));
    start = hit + d.size();
  }
  return Value::MakeArray(std::move(parts));
}

Value StringMethod(const std::string& s, const std::string& name) {
  using R = StatusOr<Value>;
  if (name == "length") return Value::Int(Utf16Length(s));
  // strip/lstrip/rstrip ignore their argument and strip all whitespace, exactly like the reference
  // (so Qwen3's `.strip('\n')` renders identically).
  if (name == "upper") return Method(name, [s](CallArgs&) -> R { return Value::String(AsciiUpper(s)); });
  if (name == "lower") return Method(name, [s](CallArgs&) -> R { return Value::String(AsciiLower(s)); });
  if (name == "strip") return Method(name, [s](CallArgs&) -> R { return Value::String(JsTrim(s)); });
  if (name == "lstrip") return Method(name, [s](CallArgs&) -> R { return Value::String(JsTrimStart(s)); });
  if (name == "rstrip") return Method(name, [s](CallArgs&) -> R { return Value::String(JsTrimEnd(s)); });
  if (name == "title") return Method(name, [s](CallArgs&) -> R { return Value::String(JsTitle(s)); });
  if (name == "capitalize") {
    // JS charAt(0).toUpperCase() + rest: the rest keeps its case (Python would lower it).
    return Method(name, [s](CallArgs&) -> R { return Value::String(AsciiUpper(s.substr(0, 1)) + s.substr(std::min<size_t>(1, s.size()))); });
  }
  if (name == "startswith") return Method(name, [s](CallArgs& a) { return AffixTest(s, a, true); });
  if (name == "endswith") return Method(name, [s](CallArgs& a) { return AffixTest(s, a, false); });
  if (name == "split") return Method(name, [s](CallArgs& a) { return Split(s, a); });
  if (name == "replace") return Method(name, [s](CallArgs& a) { return StringReplace(s, a); });
  return Value();
}

}  // namespace

Value DictMethod(const Value& obj, const std::string& name) {
  using R = StatusOr<Value>;
  if (name == "get") {
    return Method(name, [obj](CallArgs& a) -> R {
      const Value* key = Arg(a, 0);
      if (!key || !key->is_string()) {
        return InvalidArgument(std::string("Object key must be a string: got ") + (key ? key->TypeName() : "UndefinedValue"));
      }
      if (const Value* v = obj.as_object().Find(key->as_string())) return *v;
      if (const Value* d = Arg(a, 1)) return *d;
      return Value::None();
    });
  }
  if (name == "items") return Method(name, [obj](CallArgs&) -> R { return DictItems(obj); });
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return Method(name, [obj, keys](CallArgs&) -> R {
      Array out;
      for (const auto& [k, v] : obj.as_object().items) out.push_back(keys ? Value::String(k) : v);
      return Value::MakeArray(std::move(out));
    });
  }
  if (name == "dictsort") return Method(name, [obj](CallArgs& a) { return DictSort(obj, a); });
  return Value();
}

namespace {

// JS String.prototype.at on code points (the reference uses UTF-16 units; they differ only for
// characters outside the BMP, which a UTF-8 string cannot split).
Value StringAt(const std::string& s, int64_t i) {
  std::vector<std::string> cps = SplitCodePoints(s);
  const int64_t n = static_cast<int64_t>(cps.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) return Value();
  return Value::String(cps[static_cast<size_t>(i)]);
}

}  // namespace

StatusOr<Value> GetAttribute(const Value& obj, const Value& property) {
  if (obj.has_attributes()) {
    if (!property.is_string()) {
      return InvalidArgument(std::string("Cannot access property with non-string: got ") + property.TypeName());
    }
    if (const Value* v = obj.as_object().Find(property.as_string())) return *v;
    return obj.is_object() ? DictMethod(obj, property.as_string()) : Value();
  }
  if (obj.is_array() || obj.is_string()) {
    if (property.is_int()) {
      if (obj.is_string()) return StringAt(obj.as_string(), property.as_int());
      const Array& a = obj.as_array();
      int64_t i = property.as_int();
      if (i < 0) i += static_cast<int64_t>(a.size());
      if (i < 0 || i >= static_cast<int64_t>(a.size())) return Value();
      return a[static_cast<size_t>(i)];
    }
    if (property.is_string()) {
      if (obj.is_string()) return StringMethod(obj.as_string(), property.as_string());
      return property.as_string() == "length" ? Value::Int(static_cast<int64_t>(obj.as_array().size())) : Value();
    }
    return InvalidArgument(std::string("Cannot access property with non-string/non-number: got ") + property.TypeName());
  }
  if (!property.is_string()) {
    return InvalidArgument(std::string("Cannot access property with non-string: got ") + property.TypeName());
  }
  return Value();  // numbers, booleans, none, undefined have no attributes
}

StatusOr<Value> SliceValue(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (!obj.is_array() && !obj.is_string()) return InvalidArgument("Slice object must be an array or string");
  for (const Value* v : {&start_v, &stop_v, &step_v}) {
    if (!v->is_int() && !v->is_undefined()) return InvalidArgument("Slice indices must be integers or omitted");
  }
  std::vector<std::string> cps;
  if (obj.is_string()) cps = SplitCodePoints(obj.as_string());
  const int64_t n = obj.is_string() ? static_cast<int64_t>(cps.size()) : static_cast<int64_t>(obj.as_array().size());
  const int64_t step = step_v.is_int() ? step_v.as_int() : 1;
  const int64_t dir = step > 0 ? 1 : (step < 0 ? -1 : 0);
  int64_t start, stop;
  if (dir >= 0) {
    start = start_v.is_int() ? start_v.as_int() : 0;
    stop = stop_v.is_int() ? stop_v.as_int() : n;
    start = start < 0 ? std::max<int64_t>(n + start, 0) : std::min(start, n);
    stop = stop < 0 ? std::max<int64_t>(n + stop, 0) : std::min(stop, n);
  } else {
    start = start_v.is_int() ? start_v.as_int() : n - 1;
    stop = stop_v.is_int() ? stop_v.as_int() : -1;
    start = start < 0 ? std::max<int64_t>(n + start, -1) : std::min(start, n - 1);
    stop = stop < -1 ? std::max<int64_t>(n + stop, -1) : std::min(stop, n - 1);
  }
  Array out;
  std::string text;
  for (int64_t i = start; dir != 0 && dir * i < dir * stop; i += step) {
    if (obj.is_string()) text += cps[static_cast<size_t>(i)];
    else out.push_back(obj.as_array()[static_cast<size_t>(i)]);
  }
  return obj.is_string() ? Value::String(std::move(text)) : Value::MakeArray(std::move(out));
}

Value DictItems(const Value& obj) {
  Array out;
  for (const auto& [k, v] : obj.as_object().items) out.push_back(Value::MakeArray({Value::String(k), v}));
  return Value::MakeArray(std::move(out));
}

StatusOr<int> CompareValues(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_none() && b.is_none()) return 0;
  if (a.is_undefined() && b.is_undefined()) return 0;
  if (a.is_none() || b.is_none() || a.is_undefined() || b.is_undefined()) {
    return InvalidArgument(std::string("Cannot compare ") + a.TypeName() + " with " + b.TypeName());
  }
  const auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
  if (numeric(a) && numeric(b)) {
    const double x = a.is_bool() ? a.as_bool() : a.as_number();
    const double y = b.is_bool() ? b.as_bool() : b.as_number();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.kind() != b.kind()) {
    return InvalidArgument(std::string("Cannot compare different types: ") + a.TypeName() + " and " + b.TypeName());
  }
  if (!a.is_string()) return InvalidArgument(std::string("Cannot compare type: ") + a.TypeName());
  const std::string x = case_sensitive ? a.as_string() : AsciiLower(a.as_string());
  const std::string y = case_sensitive ? b.as_string() : AsciiLower(b.as_string());
  return x < y ? -1 : (x > y ? 1 : 0);
}

StatusOr<Value> DictSort(const Value& obj, const CallArgs& args) {
  const auto pick = [&](size_t i, const char* name, Value fallback) {
    if (const Value* v = Arg(args, i)) return *v;
    if (const Value* v = args.Keyword(name)) return *v;
    return fallback;
  };
  const Value case_sensitive = pick(0, "case_sensitive", Value::Bool(false));
  const Value by = pick(1, "by", Value::String("key"));
  const Value reverse = pick(2, "reverse", Value::Bool(false));
  if (!case_sensitive.is_bool()) return InvalidArgument("case_sensitive must be a boolean");
  if (!by.is_string() || (by.as_string() != "key" && by.as_string() != "value")) {
    return InvalidArgument("by must be either 'key' or 'value'");
  }
  if (!reverse.is_bool()) return InvalidArgument("reverse must be a boolean");
  Array items = DictItems(obj).as_array();
  const size_t index = by.as_string() == "key" ? 0 : 1;
  Status error;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto c = CompareValues(x.as_array()[index], y.as_array()[index], case_sensitive.as_bool());
    if (!c.ok()) {
      if (error.ok()) error = c.status();
      return false;
    }
    return reverse.as_bool() ? *c > 0 : *c < 0;
  });
  EMBER_RETURN_IF_ERROR(error);
  return Value::MakeArray(std::move(items));
}

StatusOr<Value> StringReplace(const std::string& s, const CallArgs& args) {
  if (args.positional.size() < 2) return InvalidArgument("replace() requires at least two arguments");
  const Value& from = args.positional[0];
  const Value& to = args.positional[1];
  if (!from.is_string() || !to.is_string()) return InvalidArgument("replace() arguments must be strings");
  Value count = args.positional.size() > 2 ? args.positional[2] : Value::None();
  if (const Value* kw = args.Keyword("count")) count = *kw;
  if (!count.is_int() && !count.is_none()) return InvalidArgument("replace() count argument must be a number or null");
  int64_t remaining = count.is_int() && count.as_int() >= 0 ? count.as_int() : INT64_MAX;
  if (count.is_int() && count.as_int() == 0) return Value::String(s);
  std::string out;
  const std::string& f = from.as_string();
  if (f.empty()) {
    // An empty pattern matches before every code point and at the end.
    for (const std::string& cp : SplitCodePoints(s)) {
      if (remaining > 0) { out += to.as_string(); --remaining; }
      out += cp;
    }
    if (remaining > 0) out += to.as_string();
    return Value::String(std::move(out));
  }
  size_t pos = 0;
  while (true) {
    const size_t hit = remaining > 0 ? s.find(f, pos) : std::string::npos;
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to.as_string();
    pos = hit + f.size();
    --remaining;
  }
  out.append(s, pos, std::string::npos);
  return Value::String(std::move(out));
}

}  // namespace ember::jinja
