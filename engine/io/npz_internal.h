// Internals of the .npz reader/writer (io/npz.h), shared by its three files and by nothing else:
//   npy_format.cpp  the .npy array format (numpy/lib/format.py): header encoding and parsing, dtypes
//   zip_format.cpp  the zip records dtnn reads (PKWARE APPNOTE.TXT) and the zlib raw-deflate codec
//   npz.cpp         the public API: file I/O, write_npz, read_npz, read_npz_info
// Every function here that can fail throws NpzError with the one-line "dtnn: <file>: ..." message of
// npz.h (naming the entry when one is involved); `path` is only used in those messages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/npz.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npz code stores array data as raw bytes and assumes a little-endian host"
#endif

namespace dtnn::io::npz_detail {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kEocd64Sig = 0x06064b50, kEocd64LocSig = 0x07064b50;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // fixed timestamp: reproducible files

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw NpzError("dtnn: " + path + ": " + what);
}
[[noreturn]] inline void fail_entry(const std::string& path, const std::string& entry, const std::string& what) {
  fail(path, "entry '" + entry + "': " + what);
}

// ---- little-endian byte helpers ----
inline void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v)); b.push_back(static_cast<uint8_t>(v >> 8));
}
inline void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v)); put16(b, static_cast<uint16_t>(v >> 16));
}
inline uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get32(const uint8_t* p) { return get16(p) | (static_cast<uint32_t>(get16(p + 2)) << 16); }
inline uint64_t get64(const uint8_t* p) { return get32(p) | (static_cast<uint64_t>(get32(p + 4)) << 32); }

// ---- .npy (npy_format.cpp) ----

// Number of elements of shape with itemsize-byte elements; -1 when the product (or its size in bytes)
// overflows or a dimension is negative.
int64_t checked_numel(const std::vector<int64_t>& shape, size_t itemsize);

// The whole .npy file of a (header padded so the data starts 64-byte aligned, then a.bytes).
std::vector<uint8_t> encode_npy(const NpyArray& a);

// Size of the .npy prefix (magic, version, header length) plus the header, from the first bytes of an
// entry (at least 12 of them, or all when the entry is shorter).
size_t npy_header_size(const std::string& path, const std::string& entry, const uint8_t* b, size_t n);

// Parses the .npy header at b (n bytes, at least npy_header_size of them): name (entry without ".npy"),
// dtype and shape of the array, whose data starts at *data_off. The caller checks the data size.
NpyArray parse_npy_header(const std::string& path, const std::string& entry, const uint8_t* b, size_t n,
                          size_t* data_off);

// Checks that an entry of `total` bytes whose data starts at data_off holds exactly the array's data.
void check_npy_size(const std::string& path, const std::string& entry, const NpyArray& a, size_t data_off,
                    uint64_t total);

// The array of a whole .npy file b: header parsed, size checked, data copied.
NpyArray decode_npy(const std::string& path, const std::string& entry, const std::vector<uint8_t>& b);

// ---- zip and zlib (zip_format.cpp) ----

// One central-directory entry; sizes and offset already widened from the zip64 extra field.
struct Entry { std::string name; uint16_t method, flags; uint32_t crc; uint64_t csize, usize, offset; };
// Where the central directory is: entry count, file offset and size in bytes.
struct Directory { uint64_t count, offset, size; };

// CRC-32 of n bytes (any n: fed to zlib in chunks its 32-bit counters can take).
uint32_t crc_of(const uint8_t* p, size_t n);

// Raw deflate stream of in (no zlib header/trailer, as zip entries carry), default compression.
std::vector<uint8_t> deflate_raw(const std::string& path, const std::string& entry,
                                 const std::vector<uint8_t>& in);

// The most bytes a raw deflate stream of in_size bytes can inflate to: deflate's maximum ratio is 1032:1
// (a 258-byte match per ~2 bits; zlib's doc/algorithm notes), plus slack for a tiny stream. A declared
// uncompressed size above it is a lie, refused before anything is allocated.
inline uint64_t max_inflated_size(uint64_t in_size) { return in_size * 1032 + 1024; }

// Inflates a raw deflate stream of in_size bytes that must give exactly out_size bytes. Refuses an
// out_size above max_inflated_size(in_size), and allocates as the data inflates, never out_size up front.
std::vector<uint8_t> inflate_raw(const std::string& path, const std::string& entry,
                                 const uint8_t* in, size_t in_size, size_t out_size);

// Finds the central directory from the last tail_size bytes of a file of file_size bytes (the whole
// file for read_npz; its end for read_npz_info). looks_zip: the file starts with a local header. The
// directory it returns lies within the file.
Directory find_directory(const std::string& path, const uint8_t* tail, size_t tail_size, uint64_t file_size,
                         bool looks_zip);

// Parses the central directory (cd_size bytes at d) into its `count` entries, refusing an archive in which
// two entries share a name.
std::vector<Entry> parse_directory(const std::string& path, const uint8_t* d, uint64_t cd_size, uint64_t count);

// The checks every array entry must pass before its data is read. Returns false for a directory entry.
bool check_entry(const std::string& path, const Entry& e);

}  // namespace dtnn::io::npz_detail
