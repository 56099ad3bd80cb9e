#include "server/access_control.h"

#include <algorithm>

#include "util/sha256.h"

namespace ember::server {

AccessControl::AccessControl(std::vector<std::string> api_keys, std::vector<std::string> cors_origins)
    : api_keys_(std::move(api_keys)), cors_origins_(std::move(cors_origins)) {
  std::erase(api_keys_, std::string());  // an empty key would let an empty header in
  // Domain-separated, so this digest of a key never equals a digest of the same text used elsewhere.
  for (const std::string& key : api_keys_) key_ids_.push_back(Sha256Hex("ember-api-key-v1;" + key));
}

// Compares every byte of equal-length keys, so response time does not reveal how much of a guess matched
// (nor which key it matched).
int AccessControl::MatchingKey(std::string_view candidate) const {
  int match = -1;
  for (size_t k = 0; k < api_keys_.size(); ++k) {
    const std::string& key = api_keys_[k];
    if (key.size() != candidate.size()) continue;
    unsigned char diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i] ^ candidate[i]);
    if (diff == 0 && match < 0) match = static_cast<int>(k);
  }
  return match;
}

int AccessControl::MatchingKey(std::string_view authorization, std::string_view x_api_key) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size() && authorization.substr(0, kBearer.size()) == kBearer) {
    if (const int k = MatchingKey(authorization.substr(kBearer.size())); k >= 0) return k;
  }
  return x_api_key.empty() ? -1 : MatchingKey(x_api_key);
}

bool AccessControl::Authorized(std::string_view authorization, std::string_view x_api_key) const {
  return api_keys_.empty() || MatchingKey(authorization, x_api_key) >= 0;
}

std::string AccessControl::KeyIdentity(std::string_view authorization, std::string_view x_api_key) const {
  const int k = api_keys_.empty() ? -1 : MatchingKey(authorization, x_api_key);
  return k < 0 ? std::string() : key_ids_[k];
}

bool IsLocalhostOrigin(std::string_view origin) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.substr(0, scheme.size()) != scheme) continue;
    std::string_view host = origin.substr(scheme.size());
    for (std::string_view local : {"localhost", "127.0.0.1", "[::1]"}) {
      if (host.substr(0, local.size()) != local) continue;
      const std::string_view rest = host.substr(local.size());
      if (rest.empty()) return true;
      if (rest[0] == ':' && rest.size() > 1 &&
          std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return true;
      }
    }
  }
  return false;
}

bool AccessControl::OriginAllowed(std::string_view origin) const {
  if (origin.empty()) return false;
  if (IsLocalhostOrigin(origin)) return true;
  return std::any_of(cors_origins_.begin(), cors_origins_.end(),
                     [&](const std::string& o) { return o == "*" || o == origin; });
}

}  // namespace ember::server
