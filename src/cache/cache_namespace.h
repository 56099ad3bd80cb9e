// Prompt-cache namespaces (spec/cache.md §1): reuse never crosses one. A namespace is the adapter stack
// (ids AND a hash of each adapter's weights, plus its scale; order-sensitive; empty = base model) and
// the tenant salt (a request's cache_salt, or the API key's identity when keys are configured).
//
// Key() is an injective text encoding (length-prefixed fields, scales by their bit pattern), so two
// namespaces share a key only if every field is equal; the cache compares keys, never hashes.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

struct AdapterRef {
  std::string id;             // the adapter's name or path as the request names it
  uint64_t weights_hash = 0;  // hash of its tensors: two adapters published under one name differ here
  float scale = 1.0f;
};

struct CacheNamespace {
  std::vector<AdapterRef> adapters;  // in application order
  std::string tenant;                // "" = no salt

  std::string Key() const;
  // 64-bit digest of Key() (for directory names of the cold tier; never used to decide reuse).
  uint64_t Hash() const;
};

}  // namespace ember
