// IDX files (the MNIST format), plain or gzip-compressed: big-endian header [0, 0, type, rank], rank
// big-endian uint32 dimensions, then the elements. Only unsigned-byte data (type 0x08) is used by the
// datasets dtnn reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // prod(dims) bytes, row-major
};

// Reads an unsigned-byte IDX file of the given rank. `inner`, when not empty, is what dimensions 1.. must be
// (28, 28 for MNIST images), checked before any data is read: a 1 MB gzip declaring 1 x 32768 x 32768 was
// inflated to 1 GiB first. Throws dtnn::Error naming the file for: a missing or unreadable file, a bad magic
// number, a wrong rank, zero, absurd or unexpected dimensions, a truncated or corrupt (gzip) body, and
// trailing bytes after the declared data.
IdxArray read_idx_u8(const std::string& path, int expected_rank, const std::vector<int64_t>& inner = {});

}  // namespace dtnn
