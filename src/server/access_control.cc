#include "server/access_control.h"

#include <algorithm>

namespace ember::server {

AccessControl::AccessControl(std::vector<std::string> api_keys, std::vector<std::string> cors_origins)
    : api_keys_(std::move(api_keys)), cors_origins_(std::move(cors_origins)) {
  std::erase(api_keys_, std::string());  // an empty key would let an empty header in
}

// Compares every byte of equal-length keys, so response time does not reveal how much of a guess matched.
bool AccessControl::KeyMatches(std::string_view candidate) const {
  bool any = false;
  for (const std::string& key : api_keys_) {
    if (key.size() != candidate.size()) continue;
    unsigned char diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i] ^ candidate[i]);
    any |= diff == 0;
  }
  return any;
}

bool AccessControl::Authorized(std::string_view authorization, std::string_view x_api_key) const {
  if (api_keys_.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size() && authorization.substr(0, kBearer.size()) == kBearer &&
      KeyMatches(authorization.substr(kBearer.size()))) {
    return true;
  }
  return !x_api_key.empty() && KeyMatches(x_api_key);
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
