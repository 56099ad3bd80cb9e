#include "util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace ember {

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  // Fails only when libcrypto cannot allocate its context; there is no digest to fall back to.
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1 || n != 32) {
    std::fprintf(stderr, "ember: fatal: SHA-256 from libcrypto failed\n");
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (unsigned int i = 0; i < n; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

}  // namespace ember
