// Who may call the server: API keys (`Authorization: Bearer K` or `x-api-key: K`, as the OpenAI and
// Anthropic SDKs send them) and which browser origins get CORS headers (localhost always; others only
// when configured). Immutable after construction, so safe to share between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

class AccessControl {
 public:
  AccessControl(std::vector<std::string> api_keys, std::vector<std::string> cors_origins);

  bool auth_required() const { return !api_keys_.empty(); }
  // True when no key is configured or either header carries a configured key.
  bool Authorized(std::string_view authorization_header, std::string_view x_api_key_header) const;
  // Who the headers authenticate as: the identity of the configured key they carry (a SHA-256 of it, never
  // the key, so it can travel into the prompt cache's namespace), or "" when no key is configured or none
  // matches. With both headers, Bearer wins, as in Authorized(). Stable across restarts and key order.
  std::string KeyIdentity(std::string_view authorization_header, std::string_view x_api_key_header) const;
  // True for http(s)://localhost, 127.0.0.1 and [::1] (any port), and for configured origins.
  bool OriginAllowed(std::string_view origin) const;

 private:
  // Index of the configured key equal to `candidate`, or -1.
  int MatchingKey(std::string_view candidate) const;
  int MatchingKey(std::string_view authorization, std::string_view x_api_key) const;

  std::vector<std::string> api_keys_;
  std::vector<std::string> key_ids_;  // KeyIdentity of api_keys_[i]
  std::vector<std::string> cors_origins_;
};

bool IsLocalhostOrigin(std::string_view origin);

}  // namespace ember::server
