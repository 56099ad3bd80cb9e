// JSON Schema -> GBNF. One rule per object, array and $ref target; shared rules (ws, char, string,
// number, integer, value) are emitted once. Whitespace between tokens is bounded by
// options.max_whitespace, digits by schema_numeric's limits, free JSON values by kAnyValueDepth.
// Choice for objects without `additionalProperties`: the schema allows any extra property, but only the
// declared ones are emitted, in their declared order (every such object is valid; agents want the
// declared shape). An object with neither properties nor required is a free object.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_combine.h"
#include "grammar/json_schema_formats.h"
#include "grammar/json_schema_numeric.h"
#include "grammar/json_schema_regex.h"
#include "grammar/json_schema_text.h"
#include "grammar/ordered_json_parse.h"

namespace ember::grammar {

namespace {

using json = nlohmann::ordered_json;
using schema_combine::PointerAppend;
using schema_text::Literal;

constexpr int kMaxSchemaDepth = 64;        // nesting of the schema itself (sub-schemas inside sub-schemas)
constexpr int kAnyValueDepth = 6;          // nesting of free JSON values (items / properties without a schema)
constexpr int64_t kMaxRepeat = 1024;       // grammar.h's GbnfLimits::max_repeat
constexpr size_t kMaxGrammarBytes = 256 * 1024;
constexpr size_t kMaxEnumValues = 1024;
// Sub-schemas visited plus schemas folded by allOf / oneOf checks, over one compile: folding can repeat
// work (allOf of references to allOfs), so the whole compile is bounded, not only each step.
constexpr int64_t kWorkBudget = 20000;

// Keywords that constrain values but that the compiler cannot enforce: refused, never ignored.
const std::set<std::string>& UnsupportedKeywords() {
  static const std::set<std::string> k = {
      "patternProperties", "dependentRequired", "dependentSchemas", "dependencies", "if", "then", "else", "not",
      "uniqueItems", "multipleOf", "contains", "minContains", "maxContains", "propertyNames",
      "unevaluatedProperties", "unevaluatedItems", "minProperties", "maxProperties", "$dynamicRef",
      "$recursiveRef", "contentSchema"};
  return k;
}

std::string Where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

Status Refuse(const std::string& keyword, const std::string& ptr, const std::string& why = "") {
  return InvalidArgument("unsupported JSON Schema keyword '" + keyword + "' at " + Where(ptr) +
                         (why.empty() ? "" : " (" + why + ")"));
}

Status Bad(const std::string& what, const std::string& ptr) { return InvalidArgument(what + " at " + Where(ptr)); }

// Whether a keyword with this value constrains nothing (e.g. uniqueItems: false), so it can be ignored.
bool Trivial(const std::string& k, const json& v) {
  if (k == "uniqueItems") return v == json(false);
  if (k == "minProperties" || k == "minContains") return v.is_number() && v.get<double>() <= 0;
  return false;
}

// "(inner)suffix", built by appending (GCC 12 misreports `"(" + s + ")"` chains under -Wrestrict).
std::string Group(const std::string& inner, const char* suffix = "") {
  std::string g;
  g.reserve(inner.size() + 4);
  g.append("(").append(inner).append(")").append(suffix);
  return g;
}

std::string Repeat(const std::string& unit, int64_t lo, int64_t hi /* -1: unbounded */) {
  const std::string u = Group(unit);
  if (hi == 0) return "";
  if (lo == 0 && hi == -1) return u + "*";
  if (lo == 1 && hi == -1) return u + "+";
  if (lo == 0 && hi == 1) return u + "?";
  if (lo == 1 && hi == 1) return unit;
  if (hi == -1) return u + "{" + std::to_string(lo) + ",}";
  if (lo == hi) return u + "{" + std::to_string(lo) + "}";
  return u + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

std::string Seq(std::initializer_list<std::string> parts) {
  std::string s;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    s += (s.empty() ? "" : " ") + p;
  }
  return s;
}

std::string Alt(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t i = 0; i < alts.size(); ++i) s.append(i ? " | " : "").append(alts[i]);
  return s.append(")");
}

bool ValidPrefix(const std::string& p) {
  return std::all_of(p.begin(), p.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

class Compiler {
 public:
  Compiler(const json& root, const JsonSchemaOptions& o, CompileBudget* meter)
      : root_(root), p_(o.prefix), ws_max_(o.max_whitespace), meter_(meter) {
    // The shared rules' names are taken before any schema-derived rule is named, so a property called
    // "string" or "ws" gets "string-2", never the shared rule's name.
    for (const char* n : {"ws", "char", "string", "number", "integer", "boolean", "null", "scalar", "key-rest"}) {
      names_.insert(p_ + n);
    }
    for (int d = 0; d <= kAnyValueDepth; ++d) {
      for (const char* n : {"value-", "object-", "array-"}) names_.insert(p_ + n + std::to_string(d));
    }
  }

  StatusOr<std::string> Schema() {
    const std::string root = p_ + "root";
    names_.insert(root);
    ref_names_[""] = root;
    open_heads_.insert("");
    StatusOr<std::string> body = Value(root_, "", 0);
    if (!body.ok()) return body.status();
    Define(root, *body);
    if (!meter_->status().ok()) return meter_->status();
    return Text(root);
  }

  std::string AnyObject() {
    const std::string root = p_ + "root";
    names_.insert(root);
    Define(root, AnyObjectRule(kAnyValueDepth));
    return Text(root);
  }

 private:
  // ---- rules ----
  // The first of base, base-2, base-3, ... not taken. Names are never released, so the search for a base
  // resumes where its last one ended: linear over a compile (restarting at 2 was quadratic when thousands
  // of properties share a hint such as "root-first").
  std::string Fresh(const std::string& hint) {
    std::string base = p_ + hint, name = base;
    int& next = next_suffix_.try_emplace(base, 2).first->second;
    if (names_.count(name) != 0) {
      do name = base + "-" + std::to_string(next++);
      while (names_.count(name) != 0);
    }
    names_.insert(name);
    return name;
  }
  void Define(const std::string& name, const std::string& body) {
    order_.push_back(name);
    (void)meter_->AddRule(name.size() + body.size() + 5);  // sticky: Value() and Schema() report it
    rules_[name] = body;
  }
  // A rule for `body`, shared with an identical body defined before.
  std::string Rule(const std::string& hint, const std::string& body) {
    auto it = by_body_.find(body);
    if (it != by_body_.end()) return it->second;
    const std::string name = Fresh(hint);
    Define(name, body);
    by_body_[body] = name;
    return name;
  }
  // The rules reachable from `root`, root first (a rule built for a branch later merged away is dropped).
  std::string Text(const std::string& root) const {
    std::set<std::string> used = {root};
    std::vector<std::string> todo = {root};
    while (!todo.empty()) {
      const std::string body = rules_.at(todo.back());
      todo.pop_back();
      for (const std::string& ref : References(body)) {
        if (rules_.count(ref) != 0 && used.insert(ref).second) todo.push_back(ref);
      }
    }
    std::string out = root + " ::= " + rules_.at(root) + "\n";
    for (const std::string& n : order_) {
      if (n != root && used.count(n) != 0) out += n + " ::= " + rules_.at(n) + "\n";
    }
    return out;
  }
  // Rule names in a body: the words outside "literals" and [classes].
  static std::vector<std::string> References(const std::string& body) {
    std::vector<std::string> out;
    for (size_t i = 0; i < body.size();) {
      const char c = body[i];
      if (c == '"' || c == '[') {
        const char close = c == '"' ? '"' : ']';
        for (++i; i < body.size() && body[i] != close; ++i) {
          if (body[i] == '\\') ++i;
        }
        ++i;
      } else if (c == '{') {  // a repetition count
        while (i < body.size() && body[i] != '}') ++i;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
        const size_t start = i;
        while (i < body.size() && ((body[i] >= 'a' && body[i] <= 'z') || (body[i] >= 'A' && body[i] <= 'Z') ||
                                   (body[i] >= '0' && body[i] <= '9') || body[i] == '-')) ++i;
        out.push_back(body.substr(start, i - start));
      } else {
        ++i;
      }
    }
    return out;
  }

  // ---- shared rules ----
  std::string Ws() {
    if (ws_max_ <= 0) return "";
    return Shared("ws", "[\\x20\\x09\\x0A]{0," + std::to_string(std::min(ws_max_, 64)) + "}");
  }
  std::string Shared(const std::string& name, const std::string& body) {
    const std::string full = p_ + name;
    if (rules_.count(full) == 0) {
      names_.insert(full);
      Define(full, body);
    }
    return full;
  }
  // One character of string content. \u escapes stop short of surrogates, so each unit is one code point
  // (what minLength / maxLength count) and no lone surrogate is ever emitted.
  std::string Char() {
    return Shared("char", "[^\\x00-\\x1F\\x22\\x5C] | \"\\\\\" ([\\x22\\x5C\\x2Fbfnrt] | \"u\" "
                          "([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))");
  }
  std::string String() { return Shared("string", Seq({"\"\\\"\"", Char() + "*", "\"\\\"\""})); }
  std::string Number() { return Shared("number", schema_numeric::NumberGrammar({})); }
  std::string Integer() {
    return Shared("integer", "\"-\"? (\"0\" | [1-9] [0-9]{0," + std::to_string(schema_numeric::kMaxIntegerDigits - 1) + "})");
  }
  std::string Boolean() { return Shared("boolean", "\"true\" | \"false\""); }
  std::string Null() { return Shared("null", "\"null\""); }
  std::string Scalar() { return Shared("scalar", Alt({String(), Number(), Boolean(), Null()})); }
  std::string AnyValue(int depth) {
    if (depth <= 0) return Scalar();
    return Shared("value-" + std::to_string(depth),
                  Alt({AnyObjectRule(depth), AnyArrayRule(depth), Scalar()}));
  }
  std::string AnyObjectRule(int depth) {
    const std::string w = Ws();
    const std::string kv = Seq({String(), w, "\":\"", w, AnyValue(depth - 1)});
    const std::string more = Group(Seq({w, "\",\"", w, kv}), "*");
    const std::string members = Group(Seq({kv, more, w}), "?");
    return Shared("object-" + std::to_string(depth), Seq({"\"{\"", w, members, "\"}\""}));
  }
  std::string AnyArrayRule(int depth) {
    const std::string w = Ws(), v = AnyValue(depth - 1);
    return Shared("array-" + std::to_string(depth),
                  Seq({"\"[\"", w, Group(Seq({v, Group(Seq({w, "\",\"", w, v}), "*"), w}), "?"), "\"]\""}));
  }

  // ---- schemas ----
  static std::string Hint(const std::string& ptr) {
    const size_t slash = ptr.rfind('/');
    const std::string last = slash == std::string::npos ? ptr : ptr.substr(slash + 1);
    return last.empty() ? "top" : schema_text::RuleNamePart(last);
  }

  StatusOr<std::string> Value(const json& s, const std::string& ptr, int depth) {
    if (Status st = meter_->Step(); !st.ok()) return st;
    if (depth > kMaxSchemaDepth) return Bad("schema nested deeper than " + std::to_string(kMaxSchemaDepth), ptr);
    if (--budget_ < 0) return Bad(TooLarge(), ptr);
    if (s.is_boolean()) {
      if (s.get<bool>()) return AnyValue(kAnyValueDepth);
      return Bad("schema 'false' admits no value", ptr);
    }
    if (!s.is_object()) return Bad("a schema must be an object or a boolean", ptr);
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (UnsupportedKeywords().count(it.key()) != 0 && !Trivial(it.key(), it.value())) {
        return Refuse(it.key(), PointerAppend(ptr, it.key()));
      }
    }
    if (s.contains("$ref") || s.contains("allOf")) {
      if (s.contains("$ref") && !HasConstraintsBesides(s, {"$ref"})) return Ref(s["$ref"], PointerAppend(ptr, "$ref"), depth);
      StatusOr<json> folded = schema_combine::FoldAllOf(root_, s, ptr, &budget_, meter_);
      if (!folded.ok()) return folded.status();
      return Value(*folded, ptr, depth + 1);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) return Union(s, ptr, depth);
    if (s.contains("enum") || s.contains("const")) return Enum(s, ptr);
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array() && !t.empty() && std::all_of(t.begin(), t.end(), [](const json& e) { return e.is_string(); }))
        for (const json& e : t) types.push_back(e.get<std::string>());
      else return Bad("'type' must be a type name or a non-empty array of them", PointerAppend(ptr, "type"));
    } else {
      types = schema_combine::TypesOf(s);
      if (types.empty()) return AnyValue(kAnyValueDepth);
    }
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<std::string> alts;
    std::set<std::string> seen;
    for (const std::string& t : types) {
      if (!seen.insert(t).second || (t == "integer" && has_number)) continue;
      StatusOr<std::string> a = Typed(t, s, ptr, depth);
      if (!a.ok()) return a.status();
      alts.push_back(*a);
    }
    return Alt(alts);
  }

  static std::string TooLarge() {
    std::string m = "schema too large to compile (more than ";
    return m.append(std::to_string(kWorkBudget)).append(" sub-schemas)");
  }

  // Whether `s` has keywords other than annotations and `except` (so it must be merged, not referenced).
  static bool HasConstraintsBesides(const json& s, std::initializer_list<const char*> except) {
    static const std::set<std::string> kAnn = {"title", "description", "default", "examples", "$schema", "$id",
                                               "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                               "definitions", "$anchor", "discriminator", "nullable"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (kAnn.count(it.key()) != 0) continue;
      if (std::any_of(except.begin(), except.end(), [&](const char* e) { return it.key() == e; })) continue;
      return true;
    }
    return false;
  }

  StatusOr<std::string> Typed(const std::string& t, const json& s, const std::string& ptr, int depth) {
    if (t == "object") return Object(s, ptr, depth);
    if (t == "array") return Array(s, ptr, depth);
    if (t == "string") return StringSchema(s, ptr);
    if (t == "number" || t == "integer") return NumberSchema(s, ptr, t == "integer");
    if (t == "boolean") return Boolean();
    if (t == "null") return Null();
    return Bad("unknown type '" + t + "'", PointerAppend(ptr, "type"));
  }

  // $ref: one rule per target, so recursive schemas become recursive rules. A cycle that returns to a
  // target before any '{' or '[' (e.g. a: {$ref: b}, b: {anyOf: [{$ref: a}]}) would be left recursion.
  StatusOr<std::string> Ref(const json& ref, const std::string& where, int depth) {
    // A target seen before is not resolved again (resolving walks objects key by key).
    if (ref.is_string() && ref.get_ref<const std::string&>().rfind('#', 0) == 0) {  // only local refs resolve
      const std::string seen = ref.get<std::string>().substr(1);
      if (open_heads_.count(seen) != 0) return Bad("'$ref' cycle that consumes no input", where);
      auto it = ref_names_.find(seen);
      if (it != ref_names_.end()) return it->second;
    }
    StatusOr<const json*> target = schema_combine::ResolveRef(root_, ref, where);
    if (!target.ok()) return target.status();
    const std::string key = ref.get<std::string>().substr(1);
    const std::string name = Fresh("ref-" + Hint(key));
    ref_names_[key] = name;
    open_heads_.insert(key);
    StatusOr<std::string> body = Value(**target, key, depth + 1);
    open_heads_.erase(key);
    if (!body.ok()) return body.status();
    Define(name, *body);
    return name;
  }

  StatusOr<std::string> Union(const json& s, const std::string& ptr, int depth) {
    if (s.contains("anyOf") && s.contains("oneOf")) return Refuse("oneOf", PointerAppend(ptr, "oneOf"), "together with anyOf");
    const std::string kw = s.contains("anyOf") ? "anyOf" : "oneOf";
    const json& list = s[kw];
    const std::string lptr = PointerAppend(ptr, kw);
    if (!list.is_array() || list.empty()) return Bad("'" + kw + "' must be a non-empty array", lptr);
    json base = s;
    base.erase(kw);
    const bool merge = HasConstraintsBesides(base, {});
    std::vector<json> branches;
    for (const json& b : list) {
      // Each merged branch copies `base`: a large base times many branches is timed branch by branch.
      if (Status st = merge ? meter_->Poll() : meter_->Step(); !st.ok()) return st;
      branches.push_back(merge ? json{{"allOf", json::array({base, b})}} : b);
    }
    if (kw == "oneOf") {
      Status d = schema_combine::CheckDisjoint(root_, branches, lptr, &budget_, meter_);
      if (!d.ok()) return d;
    }
    std::vector<std::string> alts;
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < branches.size(); ++i) {
      StatusOr<std::string> a = Value(branches[i], PointerAppend(lptr, std::to_string(i)), depth + 1);
      if (!a.ok()) return a.status();
      if (seen.insert(*a).second) alts.push_back(*a);
    }
    return Alt(alts);
  }

  static bool MatchesType(const json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "number") return v.is_number();
    if (t == "integer") {
      return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    }
    return false;
  }

  StatusOr<std::string> Enum(const json& s, const std::string& ptr) {
    std::vector<json> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) return Bad("'enum' must be a non-empty array", PointerAppend(ptr, "enum"));
      if (e.size() > kMaxEnumValues) return Bad("'enum' with more than " + std::to_string(kMaxEnumValues) + " values", PointerAppend(ptr, "enum"));
      if (values.empty()) values.assign(e.begin(), e.end());
      else if (std::find(e.begin(), e.end(), values[0]) == e.end()) return Bad("'const' is not one of 'enum'", ptr);
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "enum" || k == "const" || k == "type" || !HasConstraintsBesides(json{{k, it.value()}}, {})) continue;
      return Refuse(k, PointerAppend(ptr, k), "together with enum / const");
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array()) for (const json& e : t) if (e.is_string()) types.push_back(e.get<std::string>());
    }
    std::vector<std::string> alts;
    std::unordered_set<std::string> seen;
    for (const json& v : values) {
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) { return MatchesType(v, t); })) continue;
      std::string lit = Literal(v.dump(-1, ' ', false, json::error_handler_t::replace));
      if (seen.insert(lit).second) alts.push_back(std::move(lit));
    }
    if (alts.empty()) return Bad("no 'enum' / 'const' value has the schema's 'type'", ptr);
    return Alt(alts);
  }

  // A non-negative integer keyword (minItems, maxLength, ...); -1 when absent.
  static StatusOr<int64_t> Count(const json& s, const char* key, const std::string& ptr) {
    if (!s.contains(key)) return int64_t{-1};
    const json& v = s[key];
    const double d = v.is_number() ? v.get<double>() : -1;
    if (!v.is_number() || d < 0 || d > 1e12 || d != std::floor(d)) {
      return Bad(std::string("'") + key + "' must be a non-negative integer", PointerAppend(ptr, key));
    }
    return static_cast<int64_t>(d);
  }

  // unit{lo,hi} (hi -1: unbounded). Small counts as GBNF's own {m,n}, which the parser expands into about
  // one rule per count; large ones from doubling blocks (b1 = unit, b2 = b1 b1, b4 = b2 b2, ...): exactly
  // lo blocks' worth, then up to hi - lo more, in O(log hi) rules, so several maxLength 1000 strings stay
  // far below GbnfLimits::max_rules.
  std::string Counted(const std::string& unit, int64_t lo, int64_t hi, const std::string& hint) {
    constexpr int64_t kSmall = 16;
    if (lo <= kSmall && hi >= 0 && hi <= kSmall) return Repeat(unit, lo, hi);
    std::vector<std::string> block = {Rule(hint + "-x1", unit)};
    auto get = [&](size_t i) {
      while (block.size() <= i) {
        block.push_back(Rule(hint + "-x" + std::to_string(int64_t{1} << block.size()), Seq({block.back(), block.back()})));
      }
      return block[i];
    };
    std::string exact;  // lo units: the blocks of lo's set bits
    for (int i = 62; i >= 0; --i) {
      if ((lo >> i) & 1) exact = Seq({exact, get(static_cast<size_t>(i))});
    }
    if (hi < 0) return Seq({exact, Group(block[0], "*")});
    return Seq({exact, UpTo(hi - lo, get, hint)});
  }
  // 0..n units. n = 2^k - 1: each of the blocks 1, 2, ..., 2^(k-1) present or not. Otherwise, with 2^t the
  // largest power of two <= n: fewer than 2^t units (blocks below 2^t), or block 2^t then 0..n-2^t more.
  template <typename Get>
  std::string UpTo(int64_t n, Get& get, const std::string& hint) {
    if (n == 0) return "";
    int t = 0;
    while ((int64_t{2} << t) <= n) ++t;
    auto below = [&](int k) {
      std::string s;
      for (int i = 0; i < k; ++i) s = Seq({s, Group(get(static_cast<size_t>(i)), "?")});
      return s;
    };
    if (n == (int64_t{2} << t) - 1) return below(t + 1);
    const std::string rest = UpTo(n - (int64_t{1} << t), get, hint);
    const std::string with_top = Seq({get(static_cast<size_t>(t)), rest});
    if (t == 0) return Group(with_top, "?");
    return Rule(hint + "-upto-" + std::to_string(n), Alt({below(t), with_top}));
  }

  StatusOr<std::string> Object(const json& s, const std::string& ptr, int depth);
  std::string ExcludedKey(const std::vector<std::string>& names);
  StatusOr<std::string> Array(const json& s, const std::string& ptr, int depth);
  StatusOr<std::string> StringSchema(const json& s, const std::string& ptr);
  StatusOr<std::string> NumberSchema(const json& s, const std::string& ptr, bool integer);

  const json& root_;
  std::string p_;
  int ws_max_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> by_body_;
  std::set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;  // Fresh's base name -> the next suffix to try
  std::map<std::string, std::string> ref_names_;  // JSON pointer of a $ref target -> its rule
  std::set<std::string> open_heads_;              // targets entered since the last consumed '{' or '['
  int64_t budget_ = kWorkBudget;
  CompileBudget* meter_;  // bytes, rules, time, cancellation
};

// Inside '{' or '[' the input has advanced, so a $ref back to an open target is no longer left recursion.
class ConsumedScope {
 public:
  explicit ConsumedScope(std::set<std::string>* heads) : heads_(heads), saved_(std::exchange(*heads, {})) {}
  ~ConsumedScope() { *heads_ = std::move(saved_); }
  ConsumedScope(const ConsumedScope&) = delete;
  ConsumedScope& operator=(const ConsumedScope&) = delete;

 private:
  std::set<std::string>* heads_;
  std::set<std::string> saved_;
};

// Properties in declared order, then extras when additionalProperties is a schema. first(i): properties
// i.. where none was written yet (no leading comma), never empty; after(i): the rest once one was.
StatusOr<std::string> Compiler::Object(const json& s, const std::string& ptr, int depth) {
  ConsumedScope scope(&open_heads_);
  const std::string w = Ws();
  static const json kAnySchema = true;
  struct Prop {
    std::string name;
    const json* schema;  // into the schema (copies of every property's schema added up to its size again)
    std::string ptr;
    bool required = false;
  };
  std::vector<Prop> props;
  const std::string pptr = PointerAppend(ptr, "properties");
  if (s.contains("properties")) {
    const json& p = s["properties"];
    if (!p.is_object()) return Bad("'properties' must be an object", pptr);
    for (auto it = p.begin(); it != p.end(); ++it) props.push_back({it.key(), &it.value(), PointerAppend(pptr, it.key())});
  }
  const json* addl = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
  const std::string aptr = PointerAppend(ptr, "additionalProperties");
  if (addl != nullptr && !addl->is_boolean() && !addl->is_object()) {
    return Bad("'additionalProperties' must be a schema or a boolean", aptr);
  }
  const bool closed = addl != nullptr && *addl == json(false);
  const bool extra_schema = addl != nullptr && addl->is_object() && HasConstraintsBesides(*addl, {});
  if (s.contains("required")) {
    const json& r = s["required"];
    const std::string rptr = PointerAppend(ptr, "required");
    if (!r.is_array()) return Bad("'required' must be an array of property names", rptr);
    std::unordered_map<std::string, size_t> index;  // a search of props per name was quadratic
    for (size_t i = 0; i < props.size(); ++i) index.emplace(props[i].name, i);
    for (const json& name : r) {
      if (!name.is_string()) return Bad("'required' must be an array of property names", rptr);
      if (Status st = meter_->Step(); !st.ok()) return st;
      auto it = index.find(name.get_ref<const std::string&>());
      if (it != index.end()) {
        props[it->second].required = true;
        continue;
      }
      if (closed) {
        return Bad("required property '" + name.get<std::string>() + "' is not in 'properties' and additionalProperties is false", rptr);
      }
      index.emplace(name.get<std::string>(), props.size());
      props.push_back({name.get<std::string>(), addl != nullptr ? addl : &kAnySchema, aptr, true});
    }
  }
  if (props.empty() && !closed && !extra_schema) return AnyObjectRule(kAnyValueDepth);

  std::string after, first;  // after(n), first(n): the extras, if any
  if (extra_schema) {
    StatusOr<std::string> v = Value(*addl, aptr, depth + 1);
    if (!v.ok()) return v.status();
    std::vector<std::string> names;
    for (const Prop& p : props) names.push_back(p.name);
    const std::string key = names.empty() ? String() : ExcludedKey(names);
    const std::string xkv = Rule(Hint(ptr) + "-extra", Seq({key, w, "\":\"", w, *v}));
    after = Group(Seq({w, "\",\"", w, xkv}), "*");
    first = Seq({xkv, after});
  }
  bool any_required = false;
  for (size_t i = props.size(); i-- > 0;) {
    const Prop& p = props[i];
    any_required = any_required || p.required;
    StatusOr<std::string> v = Value(*p.schema, p.ptr, depth + 1);
    if (!v.ok()) return v.status();
    const std::string key = json(p.name).dump(-1, ' ', false, json::error_handler_t::replace);
    const std::string kv = Rule(Hint(ptr) + "-" + schema_text::RuleNamePart(p.name) + "-kv",
                                Seq({Literal(key), w, "\":\"", w, *v}));
    std::string f = Seq({kv, after});
    if (!p.required && !first.empty()) f = Alt({f, first});
    const std::string comma_kv = Seq({w, "\",\"", w, kv});
    const std::string a = Seq({p.required ? comma_kv : Group(comma_kv, "?"), after});
    first = Rule(Hint(ptr) + "-first", f);
    after = Rule(Hint(ptr) + "-after", a);
  }
  std::string body;
  if (first.empty()) body = Seq({"\"{\"", w, "\"}\""});
  else if (any_required) body = Seq({"\"{\"", w, first, w, "\"}\""});
  else body = Seq({"\"{\"", w, Group(Seq({first, w}), "?"), "\"}\""});
  return Rule(Hint(ptr), body);
}

// A quoted key that is none of `names`: a trie of the names, leaving it at the first differing character.
// Such keys are written without escapes, so "\u0061" can never smuggle in a declared name "a".
std::string Compiler::ExcludedKey(const std::vector<std::string>& names) {
  struct Node {
    std::map<uint32_t, size_t> next;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& n : names) {
    size_t at = 0;
    for (uint32_t c : schema_text::DecodeUtf8(n)) {
      auto it = trie[at].next.find(c);
      if (it == trie[at].next.end()) {
        trie.push_back({});
        it = trie[at].next.emplace(c, trie.size() - 1).first;
      }
      at = it->second;
    }
    trie[at].terminal = true;
  }
  const std::string plain = "[^\\x00-\\x1F\\x22\\x5C]";
  const std::string rest = Shared("key-rest", Seq({plain + "*", "\"\\\"\""}));
  std::vector<std::string> node_rule(trie.size());
  for (size_t i = trie.size(); i-- > 0;) {  // children were pushed after their parents
    if (!meter_->status().ok()) return "";     // the caller's next Value() reports it
    std::vector<std::string> alts;
    if (!trie[i].terminal) alts.push_back("\"\\\"\"");
    std::string other = "[^\\x00-\\x1F\\x22\\x5C";
    for (const auto& [c, child] : trie[i].next) {
      if (c < 0x20 || c == '"' || c == '\\') continue;  // never written raw, so never matched
      alts.push_back(Seq({Literal(schema_text::EncodeUtf8(c)), node_rule[child]}));
      other += schema_text::ClassChar(c);
    }
    alts.push_back(Seq({other + "]", rest}));
    node_rule[i] = Rule("key-not-declared", Alt(alts));
  }
  return Seq({"\"\\\"\"", node_rule[0]});
}

StatusOr<std::string> Compiler::Array(const json& s, const std::string& ptr, int depth) {
  ConsumedScope scope(&open_heads_);
  const std::string w = Ws();
  std::vector<std::string> tuple;
  const json* rest_schema = s.contains("items") ? &s["items"] : nullptr;
  std::string rest_ptr = PointerAppend(ptr, "items");
  const json* tuple_schema = nullptr;
  std::string tuple_ptr;
  if (s.contains("prefixItems")) {
    tuple_schema = &s["prefixItems"];
    tuple_ptr = PointerAppend(ptr, "prefixItems");
    if (!tuple_schema->is_array()) return Bad("'prefixItems' must be an array of schemas", tuple_ptr);
  } else if (rest_schema != nullptr && rest_schema->is_array()) {  // draft 4-7 tuples
    tuple_schema = rest_schema;
    tuple_ptr = rest_ptr;
    rest_schema = s.contains("additionalItems") ? &s["additionalItems"] : nullptr;
    rest_ptr = PointerAppend(ptr, "additionalItems");
  }
  for (size_t i = 0; tuple_schema != nullptr && i < tuple_schema->size(); ++i) {
    StatusOr<std::string> v = Value((*tuple_schema)[i], PointerAppend(tuple_ptr, std::to_string(i)), depth + 1);
    if (!v.ok()) return v.status();
    tuple.push_back(*v);
  }
  const bool rest_none = rest_schema != nullptr && *rest_schema == json(false);
  std::string rest;
  if (rest_schema == nullptr) {
    rest = AnyValue(kAnyValueDepth);
  } else if (!rest_none) {
    if (rest_schema->is_array()) return Bad("'items' must be a schema", rest_ptr);
    StatusOr<std::string> v = Value(*rest_schema, rest_ptr, depth + 1);
    if (!v.ok()) return v.status();
    rest = *v;
  }
  StatusOr<int64_t> min = Count(s, "minItems", ptr), max = Count(s, "maxItems", ptr);
  if (!min.ok()) return min.status();
  if (!max.ok()) return max.status();
  const int64_t k = static_cast<int64_t>(tuple.size());
  const int64_t lo = std::max<int64_t>(*min, 0);
  int64_t hi = *max;  // -1: unbounded
  if (rest_none) hi = hi < 0 ? k : std::min(hi, k);
  if (hi >= 0 && lo > hi) return Bad("'minItems' above what maxItems (or the tuple) allows", ptr);
  if (lo > kMaxRepeat) return Bad("'minItems' above " + std::to_string(kMaxRepeat), PointerAppend(ptr, "minItems"));
  if (hi > kMaxRepeat) hi = kMaxRepeat;  // tighter than asked: still only valid arrays
  if (hi == 0) return Rule(Hint(ptr), Seq({"\"[\"", w, "\"]\""}));
  // tail(i): what may follow once i elements are written.
  std::function<std::string(int64_t)> tail = [&](int64_t i) -> std::string {
    if (hi >= 0 && i >= hi) return "";
    if (i < k) {
      const std::string part = Seq({w, "\",\"", w, tuple[i], tail(i + 1)});
      return i >= lo ? Group(part, "?") : part;
    }
    return Counted(Seq({w, "\",\"", w, rest}), std::max<int64_t>(lo - i, 0), hi < 0 ? -1 : hi - i, Hint(ptr) + "-items");
  };
  const std::string elements = Seq({k > 0 ? tuple[0] : rest, tail(1)});
  const std::string body = lo == 0 ? Seq({"\"[\"", w, Group(Seq({elements, w}), "?"), "\"]\""})
                                   : Seq({"\"[\"", w, elements, w, "\"]\""});
  return Rule(Hint(ptr), body);
}

StatusOr<std::string> Compiler::StringSchema(const json& s, const std::string& ptr) {
  StatusOr<int64_t> min = Count(s, "minLength", ptr), max = Count(s, "maxLength", ptr);
  if (!min.ok()) return min.status();
  if (!max.ok()) return max.status();
  const bool lengths = *min >= 0 || *max >= 0;
  std::string content;
  if (s.contains("format")) {
    const std::string fptr = PointerAppend(ptr, "format");
    if (!s["format"].is_string()) return Bad("'format' must be a string", fptr);
    const std::string f = s["format"].get<std::string>();
    if (s.contains("pattern")) return Refuse("pattern", PointerAppend(ptr, "pattern"), "together with format");
    if (lengths) return Refuse(*min >= 0 ? "minLength" : "maxLength", ptr, "together with format");
    content = schema_formats::FormatContent(f);
    if (content.empty()) return Refuse("format", fptr, "format '" + f + "'");
  } else if (s.contains("pattern")) {
    const std::string pptr = PointerAppend(ptr, "pattern");
    if (!s["pattern"].is_string()) return Bad("'pattern' must be a string", pptr);
    if (lengths) return Refuse(*min >= 0 ? "minLength" : "maxLength", ptr, "together with pattern");
    StatusOr<std::string> g = schema_regex::PatternToGbnf(s["pattern"].get<std::string>(), Char());
    if (!g.ok()) return Refuse("pattern", pptr, g.status().message());
    content = *g;
  } else {
    const int64_t lo = std::max<int64_t>(*min, 0);
    int64_t hi = *max;
    if (hi >= 0 && lo > hi) return Bad("'minLength' above 'maxLength'", ptr);
    if (lo > kMaxRepeat) return Bad("'minLength' above " + std::to_string(kMaxRepeat), PointerAppend(ptr, "minLength"));
    if (hi > kMaxRepeat) hi = kMaxRepeat;  // tighter than asked: still only valid strings
    if (lo == 0 && hi < 0) return String();
    content = Counted(Char(), lo, hi, "chars");
  }
  return Rule(Hint(ptr), Seq({"\"\\\"\"", content, "\"\\\"\""}));
}

StatusOr<std::string> Compiler::NumberSchema(const json& s, const std::string& ptr, bool integer) {
  schema_numeric::Bounds b;
  for (const char* key : {"minimum", "maximum"}) {
    if (!s.contains(key)) continue;
    if (!s[key].is_number()) return Bad(std::string("'") + key + "' must be a number", PointerAppend(ptr, key));
    (key[1] == 'i' ? b.minimum : b.maximum) = s[key].get<double>();
  }
  for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(key)) continue;
    const bool is_min = key[10] == 'i';  // exclusiveM(i)nimum
    const json& v = s[key];
    std::optional<double>& bound = is_min ? b.minimum : b.maximum;
    bool& exclusive = is_min ? b.exclusive_minimum : b.exclusive_maximum;
    if (v.is_boolean()) {  // draft 4: makes minimum / maximum exclusive
      exclusive = v.get<bool>() && bound.has_value();
    } else if (v.is_number()) {
      const double x = v.get<double>();
      if (!bound || (is_min ? x >= *bound : x <= *bound)) {
        bound = x;
        exclusive = true;
      }
    } else {
      return Bad(std::string("'") + key + "' must be a number", PointerAppend(ptr, key));
    }
  }
  if (!b.minimum && !b.maximum) return integer ? Integer() : Number();
  if (integer) {
    int64_t lo = 0, hi = 0;
    if (!schema_numeric::IntegerBounds(b, &lo, &hi)) {
      return Bad("no integer of at most " + std::to_string(schema_numeric::kMaxIntegerDigits) +
                 " digits satisfies the bounds", ptr);
    }
    return Rule(Hint(ptr), schema_numeric::IntegerRange(lo, hi));
  }
  const std::string g = schema_numeric::NumberGrammar(b);
  if (g.empty()) return Bad("no number satisfies the bounds", ptr);
  return Rule(Hint(ptr), g);
}

}  // namespace

static StatusOr<std::string> Compile(const json& schema, const JsonSchemaOptions& options) {
  if (!ValidPrefix(options.prefix)) return InvalidArgument("rule prefix '" + options.prefix + "' is not [a-zA-Z0-9-]*");
  CompileBudget own;
  Compiler c(schema, options, options.budget != nullptr ? options.budget : &own);
  StatusOr<std::string> text = c.Schema();
  if (!text.ok()) return text.status();
  if (text->size() > kMaxGrammarBytes) {
    return InvalidArgument("the schema compiles to a grammar of " + std::to_string(text->size()) +
                           " bytes, more than the " + std::to_string(kMaxGrammarBytes) + " allowed");
  }
  return text;
}

StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
  // nlohmann::json keeps keys sorted, so declared order is already lost here; the text overload keeps it.
  std::optional<json> ordered = ParseOrderedJson(schema.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!ordered) return InvalidArgument("the JSON schema is not valid JSON");  // dump writes valid JSON
  return Compile(*ordered, options);
}

StatusOr<std::string> JsonSchemaTextToGbnf(std::string_view schema_json, const JsonSchemaOptions& options) {
  std::optional<json> schema = ParseOrderedJson(schema_json);
  if (!schema) return InvalidArgument("the JSON schema is not valid JSON");
  return Compile(*schema, options);
}

std::string AnyJsonObjectGbnf(const JsonSchemaOptions& options) {
  CompileBudget own;  // fixed and small, but a shared budget counts it (one per tool of a request)
  return Compiler(json::object(), options, options.budget != nullptr ? options.budget : &own).AnyObject();
}

}  // namespace ember::grammar
