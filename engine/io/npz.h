// NumPy .npz archive writer/reader (the format of np.savez / np.savez_compressed).
//
// - Arrays own their data: NpyArray::bytes holds the raw little-endian element data in C order
//   (size = numel() * itemsize() bytes); shape is in elements, an empty shape is a 0-d scalar.
// - Supported dtypes: <f4, <f8 and the little-endian integers |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8; .npy header versions 1.0, 2.0 (and 3.0).
//   Fortran-ordered and big-endian arrays are rejected.
// - Reading handles STORED and DEFLATE entries, archive comments and zip64 archives; writing
//   produces plain (non-zip64) archives, so each entry and the whole file must stay below 4 GiB.
// - Each name appears once in an archive: reading one with two same-named entries throws.
// - Every failure throws NpzError with a one-line message "dtnn: <file>: ..." naming the file
//   (and the entry, when one is involved).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtnn::io {

enum class NpyDType { f32, f64, u8, i8, i32, i64, i16, u16, u32, u64 };

struct NpyArray {
  std::string name;            // key inside the archive, without ".npy"
  NpyDType dtype = NpyDType::f32;
  std::vector<int64_t> shape;  // C order
  std::vector<uint8_t> bytes;  // raw little-endian element data, size = numel * itemsize
  int64_t numel() const;
  size_t itemsize() const;
  std::vector<float> to_float() const;   // converts any dtype to float32
};

// Writes all arrays into `path` as a numpy-readable .npz (DEFLATE-compressed when compress is true,
// STORED otherwise). Atomic: writes `path.tmp.<pid>` then renames, so a failure never leaves a
// half-written file at `path`. Throws dtnn::io::NpzError (derived from std::runtime_error) with a
// one-line message naming the file on any I/O or zlib failure.
void write_npz(const std::string& path, const std::vector<NpyArray>& arrays, bool compress = true);

// Reads every array of an .npz archive. Throws NpzError naming the file and what is wrong:
// not a zip archive, truncated, CRC mismatch, unsupported compression method, bad .npy header,
// unsupported dtype, data size not matching the shape.
std::vector<NpyArray> read_npz(const std::string& path);

// What read_npz_info reports of one array: everything but the data.
struct NpyInfo {
  std::string name;
  NpyDType dtype = NpyDType::f32;
  std::vector<int64_t> shape;
};

// Names, dtypes and shapes of the arrays of an .npz archive, in archive order, without reading their
// data: only the zip directory and the first bytes of each entry (its .npy header; deflated entries are
// inflated only that far) are read, so it costs a few KiB of I/O whatever the archive's size. Checks
// the header and that each entry's size matches its shape and dtype; CRCs are not checked (that needs
// the data). Throws NpzError like read_npz.
std::vector<NpyInfo> read_npz_info(const std::string& path);

// Helper to build an f32 array (copies numel(shape) floats from `data`).
NpyArray make_f32(std::string name, std::vector<int64_t> shape, const float* data);

struct NpzError : std::runtime_error { using std::runtime_error::runtime_error; };

}  // namespace dtnn::io
