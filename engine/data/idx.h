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

// Reads an unsigned-byte IDX file of the given rank. Throws dtnn::Error naming the file for: a missing
// or unreadable file, a bad magic number, a wrong rank, zero or absurd dimensions, a truncated or
// corrupt (gzip) body, and trailing bytes after the declared data.
IdxArray read_idx_u8(const std::string& path, int expected_rank);

}  // namespace dtnn
