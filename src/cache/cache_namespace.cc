#include "cache/cache_namespace.h"

#include <xxhash.h>

#include <cstring>

#include "util/sha256.h"

namespace ember {
namespace {

void AppendField(std::string& out, std::string_view field) {
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

std::string CacheNamespace::TenantOf(std::string_view api_key_id, std::string_view cache_salt) {
  if (api_key_id.empty() && cache_salt.empty()) return "";
  std::string input = "ember-tenant-v1;";  // domain separation: this digest is only ever a tenant name
  AppendField(input, api_key_id);
  AppendField(input, cache_salt);
  return Sha256Hex(input);
}

uint64_t CacheNamespace::Hash() const {
  const std::string k = Key();
  return XXH3_64bits(k.data(), k.size());
}

}  // namespace ember
