#include "grammar/json_schema_combine.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ember::grammar::schema_combine {

namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxFoldDepth = 32;  // allOf inside allOf / $ref chains folded into one schema

Status Unsupported(const std::string& what, const std::string& ptr) {
  return InvalidArgument(what + " at " + (ptr.empty() ? "/" : ptr));
}

bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> kAnn = {"title", "description", "default", "examples", "$schema", "$id",
                                             "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                             "definitions", "$anchor"};
  return kAnn.count(k) != 0;
}

std::vector<std::string> TypeList(const json& t) {
  std::vector<std::string> out;
  if (t.is_string()) out.push_back(t.get<std::string>());
  if (t.is_array()) {
    for (const json& e : t) if (e.is_string()) out.push_back(e.get<std::string>());
  }
  return out;
}

// The intersection of two type lists, "integer" being a subset of "number".
json IntersectTypes(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  json out = json::array();
  auto has = [](const std::vector<std::string>& v, const std::string& t) {
    return std::find(v.begin(), v.end(), t) != v.end();
  };
  for (const std::string& t : a) {
    if (has(b, t)) out.push_back(t);
    else if (t == "integer" && has(b, "number")) out.push_back(t);
    else if (t == "number" && has(b, "integer")) out.push_back("integer");
  }
  return out;
}

// Resolves a top-level $ref (repeatedly) and folds nested allOf, so `Merge` sees plain keyword maps.
StatusOr<json> Flatten(const json& root, const json& s, const std::string& ptr, int depth, int64_t* budget,
                       CompileBudget* meter);

// a's properties merged with b's: by a hash index, since ordered_json finds keys by scanning (a lookup per
// property made merging two large objects quadratic).
Status MergeProperties(json* cur, const json& v, CompileBudget* meter) {
  // ordered_json's object is a vector of pairs underneath: index it and append to it directly.
  json::object_t::Container& obj = cur->get_ref<json::object_t&>();
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < obj.size(); ++i) index.emplace(obj[i].first, i);
  for (auto p = v.begin(); p != v.end(); ++p) {
    if (Status st = meter->Step(); !st.ok()) return st;
    auto it = index.find(p.key());
    if (it == index.end()) {
      index.emplace(p.key(), obj.size());
      obj.emplace_back(p.key(), p.value());  // not a duplicate: no scan
    } else if (obj[it->second].second != p.value()) {
      json& slot = obj[it->second].second;
      slot = json{{"allOf", json::array({slot, p.value()})}};
    }
  }
  return Status::Ok();
}

Status MergeInto(const json& root, json* a, const json& b, const std::string& ptr, CompileBudget* meter) {
  if (b.is_boolean()) {
    if (b.get<bool>()) return Status::Ok();
    return Unsupported("schema 'false' in allOf admits no value", ptr);
  }
  if (!b.is_object()) return Unsupported("an allOf branch must be a schema (an object or a boolean)", ptr);
  const bool a_closed = a->contains("additionalProperties") && (*a)["additionalProperties"] == json(false);
  const bool b_closed = b.contains("additionalProperties") && b["additionalProperties"] == json(false);
  const json a_props = a->value("properties", json::object());
  const json b_props = b.value("properties", json::object());
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (!a->contains(k)) {
      (*a)[k] = v;
      continue;
    }
    json& cur = (*a)[k];
    if (cur == v || IsAnnotation(k)) continue;
    if (k == "properties" && cur.is_object() && v.is_object()) {
      if (Status st = MergeProperties(&cur, v, meter); !st.ok()) return st;
    } else if (k == "required" && cur.is_array() && v.is_array()) {
      std::unordered_set<std::string> have;
      for (const json& r : cur) if (r.is_string()) have.insert(r.get<std::string>());
      for (const json& r : v) {
        if (Status st = meter->Step(); !st.ok()) return st;
        if (r.is_string() ? have.insert(r.get<std::string>()).second : std::find(cur.begin(), cur.end(), r) == cur.end()) {
          cur.push_back(r);
        }
      }
    } else if (k == "type") {
      json t = IntersectTypes(TypeList(cur), TypeList(v));
      if (t.empty()) return Unsupported("allOf branches whose 'type's do not intersect", ptr);
      cur = t;
    } else if ((k == "minimum" || k == "minLength" || k == "minItems") && cur.is_number() && v.is_number()) {
      cur = std::max(cur.get<double>(), v.get<double>());
    } else if ((k == "maximum" || k == "maxLength" || k == "maxItems") && cur.is_number() && v.is_number()) {
      cur = std::min(cur.get<double>(), v.get<double>());
    } else if (k == "exclusiveMinimum" && cur.is_number() && v.is_number()) {
      cur = std::max(cur.get<double>(), v.get<double>());
    } else if (k == "exclusiveMaximum" && cur.is_number() && v.is_number()) {
      cur = std::min(cur.get<double>(), v.get<double>());
    } else if (k == "items" && cur.is_object() && v.is_object()) {
      cur = json{{"allOf", json::array({cur, v})}};
    } else if (k == "enum" && cur.is_array() && v.is_array()) {
      json both = json::array();
      for (const json& e : cur) {
        for (const json& x : v) {  // small in practice (the compiler refuses enums over 1024 values)
          if (Status st = meter->Step(); !st.ok()) return st;
          if (x == e) {
            both.push_back(e);
            break;
          }
        }
      }
      if (both.empty()) return Unsupported("allOf branches whose 'enum's share no value", ptr);
      cur = both;
    } else if (k == "additionalProperties" && (cur == json(false) || v == json(false))) {
      cur = false;
    } else {
      return Unsupported("unsupported JSON Schema keyword '" + k + "' (different in two allOf branches)", ptr);
    }
  }
  // A closed branch admits only its own properties: drop the others' (or fail if one of them is required).
  auto restrict_to = [&](const json& allowed) -> Status {
    if (!a->contains("properties") || !(*a)["properties"].is_object()) return Status::Ok();
    json kept = json::object();
    std::unordered_set<std::string> allowed_keys;
    for (auto p = allowed.begin(); p != allowed.end(); ++p) allowed_keys.insert(p.key());
    for (auto p = (*a)["properties"].begin(); p != (*a)["properties"].end(); ++p) {
      if (allowed_keys.count(p.key()) == 0) continue;
      json::object_t::Container& kept_obj = kept.get_ref<json::object_t&>();
      kept_obj.emplace_back(p.key(), p.value());  // keys of an object: unique, no scan
    }
    (*a)["properties"] = kept;
    for (const json& r : a->value("required", json::array())) {
      if (r.is_string() && allowed_keys.count(r.get<std::string>()) == 0) {
        return Unsupported("allOf requires property '" + r.get<std::string>() +
                           "' that another branch forbids (additionalProperties false)", ptr);
      }
    }
    return Status::Ok();
  };
  if (a_closed) {
    Status s = restrict_to(a_props);
    if (!s.ok()) return s;
  }
  if (b_closed) {
    Status s = restrict_to(b_props);
    if (!s.ok()) return s;
  }
  (void)root;
  return Status::Ok();
}

StatusOr<json> Flatten(const json& root, const json& s, const std::string& ptr, int depth, int64_t* budget,
                       CompileBudget* meter) {
  if (Status st = meter->Poll(); !st.ok()) return st;  // each fold copies a schema: time it every one
  if (depth > kMaxFoldDepth) return Unsupported("allOf / $ref chain deeper than " + std::to_string(kMaxFoldDepth), ptr);
  // allOf of references to allOfs doubles the work per level: the budget bounds the whole compile.
  if (--*budget < 0) return Unsupported("schema too large to compile (allOf / $ref folding)", ptr);
  if (!s.is_object()) return s;
  json out = s;
  json parts = json::array();
  if (out.contains("$ref")) {
    StatusOr<const json*> target = ResolveRef(root, out["$ref"], PointerAppend(ptr, "$ref"));
    if (!target.ok()) return target.status();
    parts.push_back(**target);
    out.erase("$ref");
  }
  if (out.contains("allOf")) {
    if (!out["allOf"].is_array() || out["allOf"].empty()) {
      return Unsupported("'allOf' must be a non-empty array", PointerAppend(ptr, "allOf"));
    }
    for (const json& b : out["allOf"]) parts.push_back(b);
    out.erase("allOf");
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    StatusOr<json> flat = Flatten(root, parts[i], PointerAppend(PointerAppend(ptr, "allOf"), std::to_string(i)), depth + 1,
                                  budget, meter);
    if (!flat.ok()) return flat.status();
    Status st = MergeInto(root, &out, *flat, ptr, meter);
    if (!st.ok()) return st;
  }
  return out;
}

std::vector<json> ValuesOf(const json& s) {
  if (!s.is_object()) return {};
  if (s.contains("const")) return {s["const"]};
  if (s.contains("enum") && s["enum"].is_array()) return std::vector<json>(s["enum"].begin(), s["enum"].end());
  return {};
}

bool HasValues(const json& s) { return s.is_object() && (s.contains("const") || s.contains("enum")); }

// Types of enum / const values.
std::vector<std::string> ValueTypes(const std::vector<json>& values) {
  std::set<std::string> t;
  for (const json& v : values) {
    if (v.is_object()) t.insert("object");
    else if (v.is_array()) t.insert("array");
    else if (v.is_string()) t.insert("string");
    else if (v.is_boolean()) t.insert("boolean");
    else if (v.is_null()) t.insert("null");
    else t.insert("number");
  }
  return std::vector<std::string>(t.begin(), t.end());
}

bool TypesDisjoint(std::vector<std::string> a, std::vector<std::string> b) {
  if (a.empty() || b.empty()) return false;
  auto widen = [](std::vector<std::string>& v) {
    for (std::string& t : v) if (t == "integer") t = "number";
  };
  widen(a);
  widen(b);
  for (const std::string& t : a) {
    if (std::find(b.begin(), b.end(), t) != b.end()) return false;
  }
  return true;
}

bool ValueSetsDisjoint(const std::vector<json>& a, const std::vector<json>& b) {
  for (const json& x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return false;
  }
  return true;
}

std::vector<std::string> Required(const json& s) {
  std::vector<std::string> out;
  for (const json& r : s.value("required", json::array())) if (r.is_string()) out.push_back(r.get<std::string>());
  return out;
}

// Whether every value compiled from object schema `a` fails object schema `b`.
bool ObjectExcludes(const json& root, const json& a, const json& b, int64_t* budget, CompileBudget* meter) {
  const json a_props = a.value("properties", json::object());
  const json b_props = b.value("properties", json::object());
  const std::vector<std::string> a_req = Required(a), b_req = Required(b);
  // The compiler emits only declared properties unless additionalProperties is a schema.
  const bool a_declared_only = a.value("additionalProperties", json(true)).is_boolean() &&
                               (!a_props.empty() || !a_req.empty());
  for (const std::string& k : b_req) {
    if (a_declared_only && !a_props.contains(k) && std::find(a_req.begin(), a_req.end(), k) == a_req.end()) return true;
  }
  if (b.contains("additionalProperties") && b["additionalProperties"] == json(false)) {
    for (const std::string& k : a_req) if (!b_props.contains(k)) return true;
  }
  // A discriminator: a property both require whose const / enum values differ.
  for (const std::string& k : a_req) {
    if (std::find(b_req.begin(), b_req.end(), k) == b_req.end()) continue;
    if (!a_props.contains(k) || !b_props.contains(k)) continue;
    StatusOr<json> pa = Flatten(root, a_props[k], "", 0, budget, meter), pb = Flatten(root, b_props[k], "", 0, budget, meter);
    if (!pa.ok() || !pb.ok()) continue;
    if (HasValues(*pa) && HasValues(*pb) && ValueSetsDisjoint(ValuesOf(*pa), ValuesOf(*pb))) return true;
  }
  return false;
}

}  // namespace

std::string PointerAppend(const std::string& ptr, const std::string& key) {
  std::string k;
  for (char c : key) {
    if (c == '~') k += "~0";
    else if (c == '/') k += "~1";
    else k += c;
  }
  return ptr + "/" + k;
}

StatusOr<const json*> ResolveRef(const json& root, const json& ref, const std::string& where) {
  if (!ref.is_string()) return Unsupported("'$ref' must be a string", where);
  const std::string& r = ref.get_ref<const std::string&>();
  if (r.empty() || r[0] != '#') {
    return Unsupported("unsupported JSON Schema keyword '$ref' to '" + r + "' (only local #/... references)", where);
  }
  const json* cur = &root;
  size_t i = 1;
  if (i < r.size() && r[i] != '/') {
    return Unsupported("unsupported JSON Schema keyword '$ref' to anchor '" + r + "'", where);
  }
  while (i < r.size()) {
    const size_t next = r.find('/', i + 1);
    std::string token = r.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string key;
    for (size_t k = 0; k < token.size(); ++k) {
      if (token[k] == '~' && k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
        key += token[k + 1] == '0' ? '~' : '/';
        ++k;
      } else {
        key += token[k];
      }
    }
    if (cur->is_object() && cur->contains(key)) {
      cur = &(*cur)[key];
    } else if (cur->is_array() && !key.empty() && key.size() < 9 &&
               std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
               std::stoul(key) < cur->size()) {
      cur = &(*cur)[std::stoul(key)];
    } else {
      return Unsupported("'$ref' '" + r + "' does not resolve", where);
    }
    if (next == std::string::npos) break;
    i = next;
  }
  return cur;
}

StatusOr<json> FoldAllOf(const json& root, const json& schema, const std::string& ptr, int64_t* budget,
                         CompileBudget* meter) {
  return Flatten(root, schema, ptr, 0, budget, meter);
}

std::vector<std::string> TypesOf(const json& s) {
  if (!s.is_object()) return {};
  if (HasValues(s)) return ValueTypes(ValuesOf(s));
  if (s.contains("type")) return TypeList(s["type"]);
  std::vector<std::string> t;
  auto any = [&](std::initializer_list<const char*> keys) {
    return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
  };
  if (any({"properties", "required", "additionalProperties"})) t.push_back("object");
  if (any({"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) t.push_back("array");
  if (any({"minLength", "maxLength", "pattern", "format"})) t.push_back("string");
  if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) t.push_back("number");
  return t;
}

Status CheckDisjoint(const json& root, const std::vector<json>& branches, const std::string& ptr, int64_t* budget,
                     CompileBudget* meter) {
  std::vector<json> flat;
  for (const json& b : branches) {
    StatusOr<json> f = Flatten(root, b, ptr, 0, budget, meter);
    if (!f.ok()) return f.status();
    flat.push_back(*f);
  }
  for (size_t i = 0; i < flat.size(); ++i) {
    for (size_t j = i + 1; j < flat.size(); ++j) {
      // Every pair is compared: the meter's time limit bounds a oneOf of thousands of branches.
      if (Status st = meter->Step(); !st.ok()) return st;
      const json &a = flat[i], &b = flat[j];
      if (TypesDisjoint(TypesOf(a), TypesOf(b))) continue;
      if (HasValues(a) && HasValues(b) && ValueSetsDisjoint(ValuesOf(a), ValuesOf(b))) continue;
      const std::vector<std::string> ta = TypesOf(a), tb = TypesOf(b);
      const bool objects = ta == std::vector<std::string>{"object"} && tb == std::vector<std::string>{"object"};
      if (objects && ObjectExcludes(root, a, b, budget, meter) && ObjectExcludes(root, b, a, budget, meter)) continue;
      if (*budget < 0) return Unsupported("schema too large to compile (oneOf)", ptr);
      return Unsupported("unsupported JSON Schema keyword 'oneOf' with branches " + std::to_string(i) + " and " +
                         std::to_string(j) + " that may overlap (use anyOf)", ptr);
    }
  }
  return Status::Ok();
}

}  // namespace ember::grammar::schema_combine
