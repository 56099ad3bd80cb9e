#include "cache/cache_namespace.h"

#include <xxhash.h>

#include <cstring>

namespace ember {
namespace {

void AppendField(std::string& out, const std::string& field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

}  // namespace

std::string CacheNamespace::Key() const {
  // Built with append only: GCC 12 at -O3 warns (-Wrestrict, a false positive) on operator+ chains.
  std::string key = "a";
  key.append(std::to_string(adapters.size())).push_back(';');
  for (const AdapterRef& a : adapters) {
    uint32_t scale_bits = 0;
    std::memcpy(&scale_bits, &a.scale, sizeof scale_bits);
    AppendField(key, a.id);
    key.append(std::to_string(a.weights_hash)).push_back(',');
    key.append(std::to_string(scale_bits)).push_back(';');
  }
  key.push_back('t');
  AppendField(key, tenant);
  return key;
}

uint64_t CacheNamespace::Hash() const {
  const std::string k = Key();
  return XXH3_64bits(k.data(), k.size());
}

}  // namespace ember
