// Prompt-cache namespaces (docs/cache-spec.md §1): reuse never crosses one. A namespace is the adapter stack
// (ids AND a hash of each adapter's weights, plus its scale; order-sensitive; empty = base model) and
// the tenant: TenantOf(the identity of the API key that authenticated the request, its cache_salt), so
// two keys never share an entry, nor two salts under one key.
//
// Key() is an injective text encoding (length-prefixed fields, scales by their bit pattern), so two
// namespaces share a key only if every field is equal; the cache compares keys, never hashes.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

struct AdapterRef {
  std::string id;             // the adapter's name or path as the request names it
  uint64_t weights_hash = 0;  // hash of its tensors: two adapters published under one name differ here
  float scale = 1.0f;
};

struct CacheNamespace {
  std::vector<AdapterRef> adapters;  // in application order
  std::string tenant;                // TenantOf(...); "" = the shared default namespace

  // "" when the request has neither an API key identity (AccessControl::KeyIdentity) nor a cache_salt
  // (so key-less, unsalted traffic keeps sharing one namespace); otherwise a SHA-256 over both fields,
  // length-prefixed so ("ab", "c") and ("a", "bc") differ. One-way because the SSD tier writes the
  // namespace into every entry file: neither a key identity nor a salt may be read back from a cache dir.
  static std::string TenantOf(std::string_view api_key_id, std::string_view cache_salt);

  std::string Key() const;
  // 64-bit digest of Key() (for directory names of the cold tier; never used to decide reuse).
  uint64_t Hash() const;
};

}  // namespace ember
