// SHA-256 (FIPS 180-4), as a fingerprint of text: matrices are identified by the hash of their file.
#pragma once

#include <string>
#include <string_view>

namespace dtnn {

// The digest of `data` as 64 lowercase hex digits. sha256_hex("abc") ==
// "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad". Computed by OpenSSL's libcrypto.
std::string sha256_hex(std::string_view data);
// The digest of a file's bytes, read in chunks (a checkpoint of gigabytes is not held twice). Throws
// dtnn::Error "<path>: cannot read the file (...)".
std::string sha256_file_hex(const std::string& path);

}  // namespace dtnn
