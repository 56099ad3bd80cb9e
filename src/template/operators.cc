// Binary operators with the reference renderer's type rules: arithmetic only between numbers, `+` also
// concatenates lists and (when either side is a string) strings, `~` always concatenates, comparisons
// other than ==/!= only between numbers, `in` over lists, strings and dict keys.
#include <algorithm>
#include <cmath>
#include <limits>

#include "template/evaluator.h"

namespace ember::jinja {
namespace {

bool NumericLike(const Value& v) { return v.is_number() || v.is_bool(); }
double NumericOf(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_number(); }

StatusOr<Value> IntResult(int64_t value, bool overflow) {
  if (overflow) return InvalidArgument("integer overflow");
  return Value::Int(value);
}

StatusOr<Value> Power(const Value& l, const Value& r) {
  const double a = NumericOf(l), b = NumericOf(r);
  if (a == 0 && b < 0) return InvalidArgument("0.0 cannot be raised to a negative power");
  const double result = std::pow(a, b);
  if (!std::isfinite(result)) return InvalidArgument("Exponentiation result is not a finite real number");
  if (l.is_float() || r.is_float() || b < 0) return Value::Float(result);
  if (std::fabs(result) >= 9.2e18) return InvalidArgument("integer overflow");
  return Value::Int(static_cast<int64_t>(result));
}

StatusOr<Value> IntArithmetic(const std::string& op, int64_t a, int64_t b) {
  int64_t out = 0;
  if (op == "+") return IntResult(out, __builtin_add_overflow(a, b, &out));
  if (op == "-") return IntResult(out, __builtin_sub_overflow(a, b, &out));
  if (op == "*") return IntResult(out, __builtin_mul_overflow(a, b, &out));
  if (op == "/") return Value::Float(static_cast<double>(a) / static_cast<double>(b));
  if (b == 0) return InvalidArgument("integer division or modulo by zero");
  if (b == -1 && a == std::numeric_limits<int64_t>::min()) return InvalidArgument("integer overflow");
  if (op == "%") return Value::Int(a % b);  // JS remainder: the sign follows the dividend
  int64_t q = a / b;                         // "//": floor division
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return Value::Int(q);
}

StatusOr<Value> Numeric(const std::string& op, const Value& l, const Value& r) {
  if (op == "<") return Value::Bool(l.as_number() < r.as_number());
  if (op == ">") return Value::Bool(l.as_number() > r.as_number());
  if (op == "<=") return Value::Bool(l.as_number() <= r.as_number());
  if (op == ">=") return Value::Bool(l.as_number() >= r.as_number());
  if (l.is_int() && r.is_int()) {
    if (op == "+" || op == "-" || op == "*" || op == "/" || op == "//" || op == "%") {
      return IntArithmetic(op, l.as_int(), r.as_int());
    }
    return Value();  // not a numeric operator: the caller reports it
  }
  const double a = l.as_number(), b = r.as_number();
  if (op == "+") return Value::Float(a + b);
  if (op == "-") return Value::Float(a - b);
  if (op == "*") return Value::Float(a * b);
  if (op == "/") return Value::Float(a / b);
  if (op == "//") return Value::Float(std::floor(a / b));
  if (op == "%") return Value::Float(std::fmod(a, b));
  return Value();
}

// `needle in haystack`, charged up front: one step per item, plus the bytes of a string needle per item
// (every item may be an equally long string sharing all but its last byte).
StatusOr<bool> Contains(const Array& haystack, const Value& needle, Budget& budget) {
  const uint64_t per_item = 1 + (needle.is_string() ? needle.as_string().size() / kBytesPerStep : 0);
  EMBER_RETURN_IF_ERROR(budget.Charge(haystack.size() * per_item));
  for (const Value& v : haystack) {
    if (StrictEquals(v, needle)) return true;
  }
  return false;
}

// `~`, and `+` with a string operand: both sides' string forms, size-checked before joining.
StatusOr<Value> Concat(const Value& l, const Value& r, Budget& budget) {
  const Limits& limits = budget.limits();
  std::string out;
  if (l.is_string()) {
    out = l.as_string();
  } else {
    EMBER_ASSIGN_OR_RETURN(out, ToConcatString(l, limits));
  }
  if (r.is_string()) {
    EMBER_RETURN_IF_ERROR(budget.CheckString(out.size() + r.as_string().size()));
    out += r.as_string();
  } else {
    EMBER_ASSIGN_OR_RETURN(std::string rs, ToConcatString(r, limits));
    EMBER_RETURN_IF_ERROR(budget.CheckString(out.size() + rs.size()));
    out += rs;
  }
  EMBER_RETURN_IF_ERROR(budget.ChargeBytes(out.size()));
  return Value::String(std::move(out));
}

}  // namespace

StatusOr<Value> ApplyBinary(const std::string& op, const Value& l, const Value& r, Budget& budget) {
  if (op == "==" || op == "!=") {
    if (l.is_string() && r.is_string()) {
      EMBER_RETURN_IF_ERROR(budget.ChargeBytes(std::min(l.as_string().size(), r.as_string().size())));
    }
    EMBER_ASSIGN_OR_RETURN(bool eq, LooseEquals(l, r, budget.limits()));
    return Value::Bool(eq == (op == "=="));
  }
  const bool membership = op == "in" || op == "not in";
  if (l.is_undefined() || r.is_undefined()) {
    // `x in undefined` is false (and `not in` true); every other use of undefined is an error.
    if (r.is_undefined() && membership) return Value::Bool(op == "not in");
    return InvalidArgument("Cannot perform operation " + op + " on undefined values");
  }
  if (l.is_none() || r.is_none()) return InvalidArgument("Cannot perform operation " + op + " on null values");
  if (op == "~") return Concat(l, r, budget);
  if (op == "**" && NumericLike(l) && NumericLike(r)) return Power(l, r);
  if (l.is_number() && r.is_number()) {
    EMBER_ASSIGN_OR_RETURN(Value v, Numeric(op, l, r));
    if (!v.is_undefined()) return v;
  } else if (l.is_array() && r.is_array() && op == "+") {
    const size_t n = l.as_array().size() + r.as_array().size();
    EMBER_RETURN_IF_ERROR(budget.CheckItems(n));
    EMBER_RETURN_IF_ERROR(budget.Charge(n));
    Array joined;
    joined.reserve(n);
    joined.insert(joined.end(), l.as_array().begin(), l.as_array().end());
    joined.insert(joined.end(), r.as_array().begin(), r.as_array().end());
    return Value::MakeArray(std::move(joined));
  } else if (r.is_array() && !l.is_array() && membership) {
    // (a list inside a list is not searched: the reference rejects `[1] in [[1]]`)
    EMBER_ASSIGN_OR_RETURN(bool found, Contains(r.as_array(), l, budget));
    return Value::Bool(found == (op == "in"));
  }
  if (op == "+" && (l.is_string() || r.is_string())) return Concat(l, r, budget);
  if (l.is_string() && r.is_string() && membership) {
    EMBER_RETURN_IF_ERROR(budget.ChargeSearch(r.as_string().size(), l.as_string().size()));
    return Value::Bool((r.as_string().find(l.as_string()) != std::string::npos) == (op == "in"));
  }
  if (l.is_string() && r.is_object() && membership) {
    EMBER_RETURN_IF_ERROR(budget.ChargeBytes(l.as_string().size()));
    return Value::Bool((r.as_object().Find(l.as_string()) != nullptr) == (op == "in"));
  }
  return InvalidArgument("Unknown operator \"" + op + "\" between " + l.TypeName() + " and " + r.TypeName());
}

}  // namespace ember::jinja
