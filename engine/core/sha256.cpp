// See sha256.h.
#include "core/sha256.h"

#include <openssl/sha.h>

namespace dtnn {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  // SHA256() is the one-shot form; it cannot fail for in-memory input.
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * SHA256_DIGEST_LENGTH, '0');
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace dtnn
