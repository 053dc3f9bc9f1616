// See sha256.h.
#include "core/sha256.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/file_io.h"

namespace dtnn {

namespace {

std::string hex_of(const unsigned char* digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * SHA256_DIGEST_LENGTH, '0');
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  // SHA256() is the one-shot form; it cannot fail for in-memory input.
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return hex_of(digest);
}

std::string sha256_file_hex(const std::string& path) {
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } file{open_input(path)};
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  DTNN_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, path, ": cannot start a SHA-256 digest");
  std::vector<char> chunk(std::size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(file.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, ": cannot read the file (", std::strerror(errno), ")");
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), chunk.data(), static_cast<std::size_t>(n));
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  unsigned int length = 0;
  DTNN_CHECK(EVP_DigestFinal_ex(ctx.get(), digest, &length) == 1 && length == SHA256_DIGEST_LENGTH, path,
             ": SHA-256 digest failed");
  return hex_of(digest);
}

}  // namespace dtnn
