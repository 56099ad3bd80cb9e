#include "template/methods.h"

#include <algorithm>
#include <cmath>

#include "template/evaluator.h"
#include "template/js_string.h"

namespace ember::jinja {
namespace {

// A bound method. Bodies get the render's budget: a method call is one node, whatever its work.
Value Method(std::string name, std::function<StatusOr<Value>(Budget&, CallArgs&)> body) {
  Function f;
  f.name = std::move(name);
  f.call = [body = std::move(body)](Evaluator& ev, CallArgs& args, const std::shared_ptr<Env>&) {
    return body(ev.budget(), args);
  };
  return Value::MakeFunction(std::move(f));
}

const Value* Arg(const CallArgs& args, size_t i) { return i < args.positional.size() ? &args.positional[i] : nullptr; }

// startswith/endswith accept a string or a list/tuple of strings.
StatusOr<Value> AffixTest(const std::string& s, const CallArgs& args, bool prefix, Budget& budget) {
  const char* name = prefix ? "startswith()" : "endswith()";
  const Value* p = Arg(args, 0);
  if (!p) return InvalidArgument(std::string(name) + " requires at least one argument");
  if (p->is_array()) EMBER_RETURN_IF_ERROR(budget.Charge(p->as_array().size()));
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
StatusOr<Value> Split(const std::string& s, const CallArgs& args, Budget& budget) {
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
      EMBER_RETURN_IF_ERROR(budget.CheckItems(parts.size() + 1));
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
  EMBER_RETURN_IF_ERROR(budget.ChargeSearch(s.size(), d.size()));
  size_t start = 0;
  while (true) {
    const size_t hit = s.find(d, start);
    if (hit == std::string::npos || (maxsplit != -1 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    EMBER_RETURN_IF_ERROR(budget.CheckItems(parts.size() + 1));
    EMBER_RETURN_IF_ERROR(budget.Charge(1));
    parts.push_back(Value::String(s.substr(start, hit - start)));
    start = hit + d.size();
  }
  return Value::MakeArray(std::move(parts));
}

// Bound string methods hold the string value (shared, not copied). The evaluator has already charged
// one read of the string for the member access; methods that build a new string are linear in it.
Value StringMethod(const Value& str, const std::string& name) {
  using R = StatusOr<Value>;
  const std::string& s = str.as_string();
  if (name == "length") return Value::Int(Utf16Length(s));
  // strip/lstrip/rstrip ignore their argument and strip all whitespace, exactly like the reference
  // (so Qwen3's `.strip('\n')` renders identically).
  const auto unary = [&](std::string (*fn)(std::string_view)) {
    return Method(name, [str, fn](Budget&, CallArgs&) -> R { return Value::String(fn(str.as_string())); });
  };
  if (name == "upper") return unary(AsciiUpper);
  if (name == "lower") return unary(AsciiLower);
  if (name == "strip") return unary(JsTrim);
  if (name == "lstrip") return unary(JsTrimStart);
  if (name == "rstrip") return unary(JsTrimEnd);
  if (name == "title") return unary(JsTitle);
  if (name == "capitalize") {
    // JS charAt(0).toUpperCase() + rest: the rest keeps its case (Python would lower it).
    return Method(name, [str](Budget&, CallArgs&) -> R {
      const std::string& t = str.as_string();
      return Value::String(AsciiUpper(t.substr(0, 1)) + t.substr(std::min<size_t>(1, t.size())));
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return Method(name, [str, prefix](Budget& b, CallArgs& a) { return AffixTest(str.as_string(), a, prefix, b); });
  }
  if (name == "split") return Method(name, [str](Budget& b, CallArgs& a) { return Split(str.as_string(), a, b); });
  if (name == "replace") {
    return Method(name, [str](Budget& b, CallArgs& a) { return StringReplace(str.as_string(), a, b); });
  }
  return Value();
}

}  // namespace

Value DictMethod(const Value& obj, const std::string& name) {
  using R = StatusOr<Value>;
  if (name == "get") {
    return Method(name, [obj](Budget&, CallArgs& a) -> R {
      const Value* key = Arg(a, 0);
      if (!key || !key->is_string()) {
        return InvalidArgument(std::string("Object key must be a string: got ") + (key ? key->TypeName() : "UndefinedValue"));
      }
      if (const Value* v = obj.as_object().Find(key->as_string())) return *v;
      if (const Value* d = Arg(a, 1)) return *d;
      return Value::None();
    });
  }
  if (name == "items") {
    return Method(name, [obj](Budget& b, CallArgs&) -> R {
      EMBER_RETURN_IF_ERROR(b.Charge(obj.as_object().size()));
      return DictItems(obj);
    });
  }
  if (name == "keys" || name == "values") {
    const bool keys = name == "keys";
    return Method(name, [obj, keys](Budget& b, CallArgs&) -> R {
      EMBER_RETURN_IF_ERROR(b.Charge(obj.as_object().size()));
      Array out;
      out.reserve(obj.as_object().size());
      for (const auto& [k, v] : obj.as_object().items()) out.push_back(keys ? Value::String(k) : v);
      return Value::MakeArray(std::move(out));
    });
  }
  if (name == "dictsort") return Method(name, [obj](Budget& b, CallArgs& a) { return DictSort(obj, a, b); });
  return Value();
}

namespace {

// JS String.prototype.at on code points (the reference uses UTF-16 units; they differ only for
// characters outside the BMP, which a UTF-8 string cannot split). Walks the string: no copy per code point.
Value StringAt(const std::string& s, int64_t i) {
  if (i < 0) {
    int64_t n = 0;
    for (size_t pos = 0; pos < s.size(); ++n) NextCodePoint(s, &pos);
    i += n;
    if (i < 0) return Value();
  }
  size_t pos = 0;
  for (int64_t k = 0; k < i && pos < s.size(); ++k) NextCodePoint(s, &pos);
  if (pos >= s.size()) return Value();
  const size_t start = pos;
  NextCodePoint(s, &pos);
  return Value::String(s.substr(start, pos - start));
}

// Byte offset where each code point starts, plus s.size() at the end.
std::vector<size_t> CodePointStarts(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < s.size();) {
    starts.push_back(pos);
    NextCodePoint(s, &pos);
  }
  starts.push_back(s.size());
  return starts;
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
      if (obj.is_string()) return StringMethod(obj, property.as_string());
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
  std::vector<size_t> cps;  // code point starts (strings are sliced by code point)
  if (obj.is_string()) cps = CodePointStarts(obj.as_string());
  const int64_t n = obj.is_string() ? static_cast<int64_t>(cps.size()) - 1 : static_cast<int64_t>(obj.as_array().size());
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
    const auto k = static_cast<size_t>(i);
    if (obj.is_string()) text.append(obj.as_string(), cps[k], cps[k + 1] - cps[k]);
    else out.push_back(obj.as_array()[k]);
  }
  return obj.is_string() ? Value::String(std::move(text)) : Value::MakeArray(std::move(out));
}

Value DictItems(const Value& obj) {
  Array out;
  out.reserve(obj.as_object().size());
  for (const auto& [k, v] : obj.as_object().items()) out.push_back(Value::MakeArray({Value::String(k), v}));
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
  const std::string& x = a.as_string();
  const std::string& y = b.as_string();
  if (case_sensitive) return x < y ? -1 : (x > y ? 1 : 0);
  // ASCII-lowered comparison without building lowered copies (a sort compares n log n times).
  const auto lower = [](char c) { return static_cast<unsigned char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    const unsigned char cx = lower(x[i]), cy = lower(y[i]);
    if (cx != cy) return cx < cy ? -1 : 1;
  }
  return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
}

Status ChargeSort(const Array& keys, Budget& budget) {
  size_t longest = 0;
  for (const Value& k : keys) {
    if (k.is_string()) longest = std::max(longest, k.as_string().size());
  }
  uint64_t log2n = 1;
  while ((uint64_t{1} << log2n) < keys.size()) ++log2n;
  return budget.Charge(keys.size() * log2n * (1 + longest / kBytesPerStep));
}

StatusOr<Value> DictSort(const Value& obj, const CallArgs& args, Budget& budget) {
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
  Array keys;
  keys.reserve(items.size());
  for (const Value& item : items) keys.push_back(item.as_array()[index]);
  EMBER_RETURN_IF_ERROR(ChargeSort(keys, budget));
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

StatusOr<Value> StringReplace(const std::string& s, const CallArgs& args, Budget& budget) {
  if (args.positional.size() < 2) return InvalidArgument("replace() requires at least two arguments");
  const Value& from = args.positional[0];
  const Value& to = args.positional[1];
  if (!from.is_string() || !to.is_string()) return InvalidArgument("replace() arguments must be strings");
  Value count = args.positional.size() > 2 ? args.positional[2] : Value::None();
  if (const Value* kw = args.Keyword("count")) count = *kw;
  if (!count.is_int() && !count.is_none()) return InvalidArgument("replace() count argument must be a number or null");
  int64_t remaining = count.is_int() && count.as_int() >= 0 ? count.as_int() : INT64_MAX;
  if (count.is_int() && count.as_int() == 0) return Value::String(s);
  const std::string& f = from.as_string();
  const std::string& t = to.as_string();
  EMBER_RETURN_IF_ERROR(budget.ChargeSearch(s.size(), f.size()));
  // The output can be far longer than the input (every match may become a long string): check as it grows.
  std::string out;
  const auto add = [&](const char* p, size_t n) -> Status {
    EMBER_RETURN_IF_ERROR(budget.CheckString(out.size() + n));
    EMBER_RETURN_IF_ERROR(budget.ChargeBytes(n));
    out.append(p, n);
    return Status::Ok();
  };
  if (f.empty()) {
    // An empty pattern matches before every code point and at the end.
    for (size_t pos = 0; pos < s.size();) {
      const size_t start = pos;
      NextCodePoint(s, &pos);
      if (remaining > 0) {
        EMBER_RETURN_IF_ERROR(add(t.data(), t.size()));
        --remaining;
      }
      EMBER_RETURN_IF_ERROR(add(s.data() + start, pos - start));
    }
    if (remaining > 0) EMBER_RETURN_IF_ERROR(add(t.data(), t.size()));
    return Value::String(std::move(out));
  }
  size_t pos = 0;
  while (true) {
    const size_t hit = remaining > 0 ? s.find(f, pos) : std::string::npos;
    if (hit == std::string::npos) break;
    EMBER_RETURN_IF_ERROR(add(s.data() + pos, hit - pos));
    EMBER_RETURN_IF_ERROR(add(t.data(), t.size()));
    pos = hit + f.size();
    --remaining;
  }
  EMBER_RETURN_IF_ERROR(add(s.data() + pos, s.size() - pos));
  return Value::String(std::move(out));
}

}  // namespace ember::jinja
