// Who may call the server: API keys (`Authorization: Bearer K` or `x-api-key: K`, as the OpenAI and
// Anthropic SDKs send them) and which browser origins get CORS headers (localhost always; others only
// when configured). HostAllowlist: which Host names a loopback server answers (DNS rebinding).
// Immutable after construction, so safe to share between threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

enum class AdminAccess {
  kAllowed,
  kNoCredentials,  // no key, or one that is neither the admin key nor an API key: 401
  kNotAdmin,       // a valid API key, not the admin key: 403
  kNoAdminKey,     // a valid API key, several API keys set and no admin key: 403
};

class AccessControl {
 public:
  AccessControl(std::vector<std::string> api_keys, std::vector<std::string> cors_origins,
                std::string admin_key = "");

  bool auth_required() const { return !api_keys_.empty(); }
  bool admin_key_set() const { return !admin_key_.empty(); }
  // Whether the headers may use the admin routes (see the file comment).
  AdminAccess Admin(std::string_view authorization_header, std::string_view x_api_key_header) const;
  // KeyIdentity of each configured API key (empty without keys): the tenants.
  const std::vector<std::string>& key_ids() const { return key_ids_; }
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
  std::string admin_key_;
};

bool IsLocalhostOrigin(std::string_view origin);

// A page on attacker.example whose DNS name is rebound to 127.0.0.1 reaches a loopback server as
// same-origin, but its requests say `Host: attacker.example`. When enforced, only loopback names are
// served (localhost, *.localhost, 127.0.0.0/8, [::1], any port) plus the `extra_hosts` (--allowed-host,
// case-insensitive, a port given with one is ignored; "*" = any). An absent Host passes: every browser
// sends one, and HTTP/1.0 tools may not.
class HostAllowlist {
 public:
  HostAllowlist(bool enforce, const std::vector<std::string>& extra_hosts);
  bool enforced() const { return enforce_; }
  bool Allowed(std::string_view host_header) const;

 private:
  bool enforce_;
  std::vector<std::string> extra_hosts_;  // lower case, without port
};

// `host[:port]` or `[v6]:port` naming the local machine: localhost, *.localhost, 127.0.0.0/8 or [::1].
bool IsLoopbackAuthority(std::string_view authority);
// An address to bind that only the local machine can reach: 127.0.0.0/8, ::1, [::1] or localhost.
bool IsLoopbackBindAddress(std::string_view host);
// `application/json`, any case, with optional parameters (`; charset=utf-8`). What a page may POST
// cross-origin without a CORS preflight (text/plain, forms, multipart) is never JSON.
bool IsJsonMediaType(std::string_view content_type);

}  // namespace ember::server
