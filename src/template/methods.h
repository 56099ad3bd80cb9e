// Member access (`x.y`, `x[i]`) and the methods strings and dicts carry (`s.split(...)`, `d.items()`),
// with the reference renderer's rules: a missing key or attribute is undefined, not an error; indexing
// lists and strings takes negative indices from the end; `.length` is a property, not a method.
#pragma once

#include "template/limits.h"
#include "template/value.h"
#include "util/status.h"

namespace ember::jinja {

// obj[property] / obj.property. Errors only for key types the container cannot be indexed by.
StatusOr<Value> GetAttribute(const Value& obj, const Value& property);

// Python-style slice obj[start:stop:step] on a list or a string (by code point); undefined = omitted.
StatusOr<Value> SliceValue(const Value& obj, const Value& start, const Value& stop, const Value& step);

// A dict's builtin method `name` (get, items, keys, values, dictsort) bound to `obj`, or undefined.
Value DictMethod(const Value& obj, const std::string& name);

// The dict methods, shared with the filters of the same names (`d | items`, `d | dictsort`).
Value DictItems(const Value& obj);
StatusOr<Value> DictSort(const Value& obj, const CallArgs& args, Budget& budget);

// String methods shared with filters.
StatusOr<Value> StringReplace(const std::string& s, const CallArgs& args, Budget& budget);

// Orders two values for sort/dictsort: numbers (and booleans) with numbers, strings with strings
// (case-insensitively unless asked), none with none; anything else is an error.
StatusOr<int> CompareValues(const Value& a, const Value& b, bool case_sensitive);
// Charges what sorting values with these keys costs: n log n comparisons of up to the longest string.
Status ChargeSort(const Array& keys, Budget& budget);

}  // namespace ember::jinja
