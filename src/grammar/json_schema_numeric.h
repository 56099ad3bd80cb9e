// Number and integer grammars for the JSON Schema compiler (internal to grammar/): exact integer ranges
// as digit patterns, and bounded numbers. Digit counts are always bounded (kMaxIntegerDigits integer
// digits, kMaxFractionDigits after the point), so a model cannot emit digits for ever.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ember::grammar::schema_numeric {

inline constexpr int kMaxIntegerDigits = 15;   // |integer part| <= 999,999,999,999,999 (exact in a double)
inline constexpr int kMaxFractionDigits = 15;
inline constexpr int64_t kMaxMagnitude = 999'999'999'999'999;

// GBNF alternatives matching exactly the JSON integers in [lo, hi] (no leading zeros, no "-0").
// Requires -kMaxMagnitude <= lo <= hi <= kMaxMagnitude.
std::string IntegerRange(int64_t lo, int64_t hi);

// Bounds as a schema states them (draft 4's boolean exclusive* already folded in by the caller).
struct Bounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
};

// The integers allowed by `b` within the digit bound: false when none is.
bool IntegerBounds(const Bounds& b, int64_t* lo, int64_t* hi);

// GBNF for a JSON number satisfying `b`. Unbounded: any number with bounded digits and exponent. Bounded:
// no exponent, and a fraction only where the whole interval [I, I+1) fits the bounds, or (a non-zero one)
// next to an exclusive integral bound, as in (0, 1). A bound may so exclude some valid numbers near it
// (3.75 under maximum 3.8), never admit an invalid one. Empty when nothing fits.
std::string NumberGrammar(const Bounds& b);

}  // namespace ember::grammar::schema_numeric
