// SHA-256 (OpenSSL libcrypto) as lower-case hex. For identities that must be one-way: the prompt cache
// names tenants by a digest of the API key identity and the client's cache_salt (never either in clear),
// and the SSD tier writes that name into every entry file.
#pragma once

#include <string>
#include <string_view>

namespace ember {

// 64 hex digits.
std::string Sha256Hex(std::string_view data);

}  // namespace ember
