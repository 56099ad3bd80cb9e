#include "grammar/json_schema_numeric.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ember::grammar::schema_numeric {

namespace {

std::string Digit(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  if (lo == '0' && hi == '9') return "[0-9]";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Alternatives for the digit strings of equal length between lo and hi (inclusive).
void SameLength(const std::string& lo, const std::string& hi, const std::string& head,
                std::vector<std::string>* out) {
  const size_t n = lo.size();
  if (n == 0) {
    out->push_back(head.empty() ? "\"\"" : head);
    return;
  }
  if (lo[0] == hi[0]) {
    SameLength(lo.substr(1), hi.substr(1), Join(head, Digit(lo[0], lo[0])), out);
    return;
  }
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  const bool lo_min = lo_rest.find_first_not_of('0') == std::string::npos;
  const bool hi_max = hi_rest.find_first_not_of('9') == std::string::npos;
  char first = lo[0], last = hi[0];
  if (!lo_min) {
    SameLength(lo_rest, std::string(n - 1, '9'), Join(head, Digit(lo[0], lo[0])), out);
    ++first;
  }
  if (!hi_max) --last;
  if (first <= last) out->push_back(Join(Join(head, Digit(first, last)), AnyDigits(n - 1)));
  if (!hi_max) SameLength(std::string(n - 1, '0'), hi_rest, Join(head, Digit(hi[0], hi[0])), out);
}

// Alternatives for the non-negative integers in [lo, hi].
void NonNegative(int64_t lo, int64_t hi, std::vector<std::string>* out) {
  if (lo > hi) return;
  const std::string hs = std::to_string(hi);
  for (size_t len = std::to_string(lo).size(); len <= hs.size(); ++len) {
    const int64_t len_lo = len == 1 ? 0 : static_cast<int64_t>(std::pow(10, len - 1));
    const int64_t len_hi = static_cast<int64_t>(std::pow(10, len)) - 1;
    const int64_t a = std::max(lo, len_lo), b = std::min(hi, len_hi);
    if (a <= b) SameLength(std::to_string(a), std::to_string(b), "", out);
  }
}

std::string Alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return s + ")";
}

std::string Fraction() { return "\".\" [0-9]{1," + std::to_string(kMaxFractionDigits) + "}"; }

}  // namespace

std::string IntegerRange(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) {
    std::vector<std::string> neg;
    NonNegative(std::max<int64_t>(1, -std::min<int64_t>(hi, -1)), -lo, &neg);
    if (!neg.empty()) alts.push_back("\"-\" " + Alternatives(neg));
  }
  NonNegative(std::max<int64_t>(lo, 0), hi, &alts);
  return alts.empty() ? "" : Alternatives(alts);
}

bool IntegerBounds(const Bounds& b, int64_t* lo, int64_t* hi) {
  double l = -static_cast<double>(kMaxMagnitude), h = static_cast<double>(kMaxMagnitude);
  if (b.minimum) l = std::max(l, b.exclusive_minimum ? std::floor(*b.minimum) + 1 : std::ceil(*b.minimum));
  if (b.maximum) h = std::min(h, b.exclusive_maximum ? std::ceil(*b.maximum) - 1 : std::floor(*b.maximum));
  if (!(l <= h)) return false;  // also catches NaN
  *lo = static_cast<int64_t>(l);
  *hi = static_cast<int64_t>(h);
  return true;
}

std::string NumberGrammar(const Bounds& b) {
  const std::string exponent = "([eE] [-+]? [0-9]{1,2})?";
  if (!b.minimum && !b.maximum) {
    return "\"-\"? (\"0\" | [1-9] [0-9]{0," + std::to_string(kMaxIntegerDigits - 1) + "}) (" + Fraction() +
           ")? " + exponent;
  }
  std::vector<std::string> alts;
  int64_t lo = 0, hi = 0;
  if (IntegerBounds(b, &lo, &hi)) alts.push_back(IntegerRange(lo, hi));
  // "I.ddd" for I >= 0 lies in [I, I+1): allowed when I satisfies the lower bound and I+1 <= maximum.
  const double mag = static_cast<double>(kMaxMagnitude);
  double pl = 0, ph = mag;
  if (b.minimum) pl = std::max(pl, b.exclusive_minimum ? std::floor(*b.minimum) + 1 : std::ceil(*b.minimum));
  if (b.maximum) ph = std::min(ph, std::floor(*b.maximum) - 1);
  if (pl <= ph) alts.push_back(IntegerRange(static_cast<int64_t>(pl), static_cast<int64_t>(ph)) + " " + Fraction());
  // An exclusive integral minimum L >= 0: "L.ddd" with a non-zero fraction lies in (L, L+1).
  const std::string nonzero = "\".\" [0-9]{0," + std::to_string(kMaxFractionDigits - 1) + "} [1-9]";
  if (b.minimum && b.exclusive_minimum && *b.minimum >= 0 && *b.minimum == std::floor(*b.minimum) &&
      *b.minimum < mag && (!b.maximum || *b.minimum + 1 <= *b.maximum)) {
    alts.push_back(IntegerRange(static_cast<int64_t>(*b.minimum), static_cast<int64_t>(*b.minimum)) + " " + nonzero);
  }
  // "-A.ddd" for A >= 0 lies in (-(A+1), -A]: allowed when -A satisfies the upper bound and -(A+1) >= minimum.
  double nl = 0, nh = mag;
  if (b.maximum) nl = std::max(nl, b.exclusive_maximum ? std::floor(-*b.maximum) + 1 : std::ceil(-*b.maximum));
  if (b.minimum) nh = std::min(nh, std::floor(-*b.minimum) - 1);
  if (nl <= nh) {
    alts.push_back("\"-\" " + IntegerRange(static_cast<int64_t>(nl), static_cast<int64_t>(nh)) + " " + Fraction());
  }
  // An exclusive integral maximum H <= 0: "-(-H).ddd" with a non-zero fraction lies in (H-1, H).
  if (b.maximum && b.exclusive_maximum && *b.maximum <= 0 && *b.maximum == std::floor(*b.maximum) &&
      -*b.maximum < mag && (!b.minimum || *b.maximum - 1 >= *b.minimum)) {
    const auto a = static_cast<int64_t>(-*b.maximum);
    alts.push_back("\"-\" " + IntegerRange(a, a) + " " + nonzero);
  }
  alts.erase(std::remove(alts.begin(), alts.end(), std::string()), alts.end());
  return alts.empty() ? "" : Alternatives(alts);
}

}  // namespace ember::grammar::schema_numeric
