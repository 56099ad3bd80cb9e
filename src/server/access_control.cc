#include "server/access_control.h"

#include <algorithm>

#include "util/sha256.h"

namespace ember::server {

namespace {

// Compares every byte of equal-length keys, so response time does not reveal how much of a guess matched.
bool SameKey(std::string_view key, std::string_view candidate) {
  if (key.empty() || key.size() != candidate.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i] ^ candidate[i]);
  return diff == 0;
}

constexpr std::string_view kBearer = "Bearer ";

std::string_view BearerOf(std::string_view authorization) {
  if (authorization.size() > kBearer.size() && authorization.substr(0, kBearer.size()) == kBearer) {
    return authorization.substr(kBearer.size());
  }
  return {};
}

}  // namespace

AccessControl::AccessControl(std::vector<std::string> api_keys, std::vector<std::string> cors_origins,
                             std::string admin_key)
    : api_keys_(std::move(api_keys)), cors_origins_(std::move(cors_origins)), admin_key_(std::move(admin_key)) {
  std::erase(api_keys_, std::string());  // an empty key would let an empty header in
  // Domain-separated, so this digest of a key never equals a digest of the same text used elsewhere.
  for (const std::string& key : api_keys_) key_ids_.push_back(Sha256Hex("ember-api-key-v1;" + key));
}

// Every key is compared, so response time does not reveal which key a guess matched.
int AccessControl::MatchingKey(std::string_view candidate) const {
  int match = -1;
  for (size_t k = 0; k < api_keys_.size(); ++k) {
    if (SameKey(api_keys_[k], candidate) && match < 0) match = static_cast<int>(k);
  }
  return match;
}

int AccessControl::MatchingKey(std::string_view authorization, std::string_view x_api_key) const {
  if (const std::string_view bearer = BearerOf(authorization); !bearer.empty()) {
    if (const int k = MatchingKey(bearer); k >= 0) return k;
  }
  return x_api_key.empty() ? -1 : MatchingKey(x_api_key);
}

AdminAccess AccessControl::Admin(std::string_view authorization, std::string_view x_api_key) const {
  if (admin_key_.empty() && api_keys_.size() <= 1) {
    return Authorized(authorization, x_api_key) ? AdminAccess::kAllowed : AdminAccess::kNoCredentials;
  }
  if (SameKey(admin_key_, BearerOf(authorization)) || SameKey(admin_key_, x_api_key)) return AdminAccess::kAllowed;
  if (api_keys_.empty() || MatchingKey(authorization, x_api_key) < 0) return AdminAccess::kNoCredentials;
  return admin_key_.empty() ? AdminAccess::kNoAdminKey : AdminAccess::kNotAdmin;
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

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Splits `host[:port]` / `[v6][:port]` into its host; false when what follows the host is not `:digits`.
bool HostOfAuthority(std::string_view authority, std::string_view* host) {
  size_t host_len = std::min(authority.find(':'), authority.size());
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host_len = close + 1;
  }
  const std::string_view port = authority.substr(host_len);
  if (!port.empty() && (port[0] != ':' || port.size() > 6 || !AllDigits(port.substr(1)))) return false;
  *host = authority.substr(0, host_len);
  return !host->empty();
}

// Dotted-quad 127.a.b.c, each part 0..255 (no shorthand: browsers normalize before sending).
bool IsLoopbackIpv4(std::string_view s) {
  int parts = 0;
  for (size_t start = 0;; ++parts) {
    const size_t dot = std::min(s.find('.', start), s.size());
    const std::string_view part = s.substr(start, dot - start);
    if (parts > 3 || !AllDigits(part) || part.size() > 3 || std::stoi(std::string(part)) > 255) return false;
    if (parts == 0 && part != "127") return false;
    if (dot == s.size()) return parts == 3;
    start = dot + 1;
  }
}

// `host` in lower case, without port.
bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host.ends_with(".localhost") || host == "[::1]" || IsLoopbackIpv4(host);
}

}  // namespace

bool IsLoopbackAuthority(std::string_view authority) {
  std::string_view host;
  return HostOfAuthority(authority, &host) && IsLoopbackHost(Lower(host));
}

bool IsLoopbackBindAddress(std::string_view host) {
  const std::string lower = Lower(host);
  return lower == "::1" || IsLoopbackHost(lower);
}

bool IsJsonMediaType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  return Lower(type) == "application/json";
}

HostAllowlist::HostAllowlist(bool enforce, const std::vector<std::string>& extra_hosts) : enforce_(enforce) {
  for (const std::string& h : extra_hosts) {
    std::string_view host;
    const std::string lower = Lower(h);
    extra_hosts_.emplace_back(HostOfAuthority(lower, &host) ? std::string(host) : lower);
  }
}

bool HostAllowlist::Allowed(std::string_view host_header) const {
  if (!enforce_ || host_header.empty()) return true;
  std::string_view host;
  if (!HostOfAuthority(host_header, &host)) return false;
  const std::string lower = Lower(host);
  return IsLoopbackHost(lower) || std::any_of(extra_hosts_.begin(), extra_hosts_.end(), [&](const std::string& h) {
           return h == "*" || h == lower;
         });
}

}  // namespace ember::server
