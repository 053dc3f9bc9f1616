// FNV-1a (64-bit): a fast fingerprint of bytes, for comparing what ranks hold (batch shares, data samples,
// weights). Not a cryptographic digest (core/sha256.h is, for files).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtnn {

inline constexpr uint64_t kFnv1aOffset = 1469598103934665603ull;

// Continues the hash `h` over `bytes` bytes at `data` (start with kFnv1aOffset; chain calls for several
// buffers).
inline uint64_t fnv1a(const void* data, std::size_t bytes, uint64_t h = kFnv1aOffset) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace dtnn
