// Runtime values of the Jinja subset. Semantics follow @huggingface/jinja (the renderer HF's own JS
// stack and llama.cpp's parity checks use), not Python Jinja, wherever the two differ: e.g. `{{ true }}`
// prints "true", `==` is JavaScript loose equality, lists and dicts compare by identity.
//
// Strings, lists and dicts are shared by reference (a template can only build new ones, never mutate
// them); namespaces are the one mutable container (`{% set ns.x = 1 %}`), so only a namespace can end up
// containing itself. A Value is cheap to copy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "template/limits.h"
#include "util/status.h"

namespace ember::jinja {

class Value;
class Evaluator;
struct Env;

using Array = std::vector<Value>;

// Insertion-ordered mapping (dict iteration and tojson order must match JS Map order). Large ones keep a
// hash index too, so a lookup costs the same in a 10-key dict and in a 100,000-key one a client sent.
class Object {
 public:
  using Item = std::pair<std::string, Value>;

  const std::vector<Item>& items() const { return items_; }
  size_t size() const;  // defined below Value: clang instantiates vector<Item>::size() eagerly
  bool empty() const;
  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value v);  // replaces in place, or appends
  void Clear();

 private:
  static constexpr size_t kIndexFrom = 16;  // below this a linear scan is faster than hashing
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
  };

  std::vector<Item> items_;
  std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> index_;  // empty below kIndexFrom
};

// Call arguments after evaluation: positional values and keyword values in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
  const Value* Keyword(std::string_view name) const;
};

// A callable: a builtin (range, namespace, raise_exception...), a macro, or a call block's `caller`.
// `callsite` is the scope the call is evaluated in (macros see their caller's variables, as in HF).
struct Function {
  std::string name;
  std::function<StatusOr<Value>(Evaluator&, CallArgs&, const std::shared_ptr<Env>& callsite)> call;
};

class Value {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction };

  Value() = default;  // undefined
  static Value None() { Value v; v.kind_ = Kind::kNone; return v; }
  static Value Bool(bool b) { Value v; v.kind_ = Kind::kBool; v.b_ = b; return v; }
  static Value Int(int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
  static Value Float(double f) { Value v; v.kind_ = Kind::kFloat; v.f_ = f; return v; }
  static Value String(std::string s);
  static Value MakeArray(Array a, bool tuple = false);
  static Value MakeObject(Object o);
  static Value MakeNamespace(Object o);
  static Value MakeFunction(Function f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kArray && tuple_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  // Object or namespace: supports attribute lookup by name.
  bool has_attributes() const { return kind_ == Kind::kObject || kind_ == Kind::kNamespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_float() const { return f_; }
  double as_number() const { return kind_ == Kind::kInt ? static_cast<double>(i_) : f_; }
  const std::string& as_string() const;
  const Array& as_array() const { return *static_cast<const Array*>(ptr_.get()); }
  const Object& as_object() const { return *static_cast<const Object*>(ptr_.get()); }  // objects and namespaces
  Object& mutable_namespace() const { return *const_cast<Object*>(&as_object()); }
  // The namespace's shared storage, so a render can empty it when it ends (see Evaluator).
  std::shared_ptr<Object> namespace_storage() const {
    return std::const_pointer_cast<Object>(std::static_pointer_cast<const Object>(ptr_));
  }
  const Function& as_function() const { return *static_cast<const Function*>(ptr_.get()); }

  // Python/HF truthiness: empty string/list/dict, 0, none and undefined are false; namespaces are true.
  bool Truthy() const;
  // "UndefinedValue"-style type names used in error messages.
  const char* TypeName() const;
  // Identity of a container (lists/dicts compare by reference, as in JS).
  const void* identity() const;
  // How deeply lists and dicts nest inside this value: 0 for scalars, 1 for [1, 2], 2 for [[1]]. A
  // namespace counts as 1 whatever it holds (it is mutable; printing checks its real depth).
  int depth() const { return depth_; }

 private:
  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  bool b_ = false;
  uint16_t depth_ = 0;  // saturates; limits are far below
  int64_t i_ = 0;
  double f_ = 0;
  // The string, Array, Object or Function, by kind. Shared: copying a value is O(1) whatever its size,
  // and one pointer keeps a Value (and the evaluator's frames, which hold several) small.
  std::shared_ptr<const void> ptr_;
};

inline size_t Object::size() const { return items_.size(); }
inline bool Object::empty() const { return items_.empty(); }

// How a value prints inside `{{ }}` (none/undefined print nothing: callers skip them). Errors for
// functions, which have no printable form, and for containers past the limits (size, depth, a namespace
// that contains itself).
StatusOr<std::string> ToOutputString(const Value& v, const Limits& limits);
// How a value converts when concatenated with `~` / `+` or joined (JavaScript's String(x.value)).
StatusOr<std::string> ToConcatString(const Value& v, const Limits& limits);
StatusOr<std::string> ToJoinString(const Value& v, const Limits& limits);  // Array.prototype.join: none/undefined -> ""

// `==` (JavaScript loose equality on the underlying values) and `in` membership (strict equality).
// Loose equality can stringify a container, hence the limits.
StatusOr<bool> LooseEquals(const Value& a, const Value& b, const Limits& limits);
bool StrictEquals(const Value& a, const Value& b);

}  // namespace ember::jinja
