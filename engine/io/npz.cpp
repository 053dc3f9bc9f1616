// NumPy .npz writer/reader: a minimal zip implementation (local headers, central directory,
// end-of-central-directory record) on top of zlib raw deflate, plus the .npy array format.
// Zip layout reference: PKWARE APPNOTE.TXT; .npy: numpy/lib/format.py.
#include "io/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npz.cpp stores array data as raw bytes and assumes a little-endian host"
#endif

namespace dtnn::io {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kEocd64Sig = 0x06064b50, kEocd64LocSig = 0x07064b50;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // fixed timestamp: reproducible files
constexpr size_t kZChunk = 1u << 30;                         // zlib counters are 32-bit (uInt)

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw NpzError("dtnn: " + path + ": " + what);
}
[[noreturn]] void fail_entry(const std::string& path, const std::string& entry, const std::string& what) {
  fail(path, "entry '" + entry + "': " + what);
}

struct DTypeInfo { NpyDType dtype; const char* descr; size_t size; };
constexpr DTypeInfo kDTypes[] = {
    {NpyDType::f32, "<f4", 4}, {NpyDType::f64, "<f8", 8}, {NpyDType::u8, "|u1", 1},
    {NpyDType::i8, "|i1", 1},  {NpyDType::i32, "<i4", 4}, {NpyDType::i64, "<i8", 8}};

const DTypeInfo& info(NpyDType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d;
  throw NpzError("dtnn: npz: invalid NpyDType value");
}

// Returns -1 when the product overflows or a dimension is negative.
int64_t checked_numel(const std::vector<int64_t>& shape, size_t itemsize) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / static_cast<int64_t>(itemsize) / d) return -1;
    n *= d;
  }
  return n;
}

uint32_t crc_of(const uint8_t* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t off = 0; off < n; off += kZChunk)
    crc = crc32(crc, p + off, static_cast<uInt>(std::min(kZChunk, n - off)));
  return static_cast<uint32_t>(crc);
}

// ---- little-endian byte helpers ----
void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v)); b.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v)); put16(b, static_cast<uint16_t>(v >> 16));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) { return get16(p) | (static_cast<uint32_t>(get16(p + 2)) << 16); }
uint64_t get64(const uint8_t* p) { return get32(p) | (static_cast<uint64_t>(get32(p + 4)) << 32); }

// ---- .npy encoding ----
std::vector<uint8_t> encode_npy(const NpyArray& a) {
  std::string dict = std::string("{'descr': '") + info(a.dtype).descr +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(a.shape[i]);
  dict += a.shape.size() == 1 ? ",), }" : "), }";
  // numpy pads the header with spaces and a final '\n' so the data starts 64-byte aligned.
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(v2 ? 2 : 1), 0};
  if (v2) put32(out, static_cast<uint32_t>(dict.size()));
  else put16(out, static_cast<uint16_t>(dict.size()));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), a.bytes.begin(), a.bytes.end());
  return out;
}

// Minimal parser for the Python dict literal in a .npy header.
struct HeaderParser {
  const std::string& s;
  size_t i = 0;
  void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  bool eat(char c) { ws(); if (i < s.size() && s[i] == c) { ++i; return true; } return false; }
  void expect(char c) { if (!eat(c)) throw std::string("expected '") + c + "'"; }
  std::string str() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) throw std::string("expected a string");
    char q = s[i++];
    size_t end = s.find(q, i);
    if (end == std::string::npos) throw std::string("unterminated string");
    std::string r = s.substr(i, end - i);
    i = end + 1;
    return r;
  }
  std::string word() {
    ws();
    size_t b = i;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(b, i - b);
  }
  int64_t integer() {
    ws();
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) throw std::string("bad shape");
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (v > (INT64_MAX - 9) / 10) throw std::string("shape dimension too large");
      v = v * 10 + (s[i++] - '0');
    }
    if (i < s.size() && s[i] == 'L') ++i;  // Python 2 long suffix
    return v;
  }
  std::vector<int64_t> shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (!eat(')')) {
      dims.push_back(integer());
      if (!eat(',')) { expect(')'); break; }
    }
    return dims;
  }
};

// Size of the .npy prefix (magic, version, header length) plus the header, from the first bytes of an
// entry (at least 12 of them, or all when the entry is shorter).
size_t npy_header_size(const std::string& path, const std::string& entry, const uint8_t* b, size_t n) {
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (n < 10 || std::memcmp(b, magic, 6) != 0)
    fail_entry(path, entry, "bad .npy header (missing \\x93NUMPY magic)");
  uint8_t major = b[6];
  if (major == 1) return 10 + static_cast<size_t>(get16(&b[8]));
  if (major == 2 || major == 3) {
    if (n < 12) fail_entry(path, entry, "bad .npy header (truncated)");
    return 12 + static_cast<size_t>(get32(&b[8]));
  }
  fail_entry(path, entry, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(b[7]));
}

// Parses the .npy header at b (n bytes, at least npy_header_size of them): name, dtype and shape of the
// array, whose data starts at *data_off. The caller checks the data size.
NpyArray parse_npy_header(const std::string& path, const std::string& entry, const uint8_t* b, size_t n,
                          size_t* data_off) {
  const size_t end = npy_header_size(path, entry, b, n);
  const size_t prefix = b[6] == 1 ? 10 : 12;
  if (end > n) fail_entry(path, entry, "bad .npy header (truncated)");
  std::string header(reinterpret_cast<const char*>(b + prefix), end - prefix);
  *data_off = end;

  NpyArray a;
  a.name = entry.substr(0, entry.size() - 4);
  std::string descr;
  bool have_descr = false, have_fortran = false, have_shape = false, fortran = false;
  try {
    HeaderParser p{header};
    p.expect('{');
    while (!p.eat('}')) {
      std::string key = p.str();
      p.expect(':');
      if (key == "descr") {
        p.ws();
        if (p.i < header.size() && header[p.i] == '[') throw std::string("structured dtypes are not supported");
        descr = p.str(); have_descr = true;
      } else if (key == "fortran_order") {
        std::string w = p.word();
        if (w != "True" && w != "False") throw std::string("fortran_order must be True or False");
        fortran = w == "True"; have_fortran = true;
      } else if (key == "shape") {
        a.shape = p.shape(); have_shape = true;
      } else {
        throw "unexpected key '" + key + "'";
      }
      if (!p.eat(',')) { p.expect('}'); break; }
    }
    if (!have_descr || !have_fortran || !have_shape) throw std::string("missing descr, fortran_order or shape");
  } catch (const std::string& why) {
    fail_entry(path, entry, "bad .npy header: " + why);
  }
  if (fortran) fail_entry(path, entry, "fortran_order=True arrays are not supported (save a C-contiguous array)");

  // numpy writes '|' for one-byte types, but '<' / '=' are equivalent there.
  std::string norm = descr;
  if (norm == "<u1" || norm == "=u1" || norm == "u1") norm = "|u1";
  if (norm == "<i1" || norm == "=i1" || norm == "i1") norm = "|i1";
  const DTypeInfo* dt = nullptr;
  for (const auto& d : kDTypes)
    if (norm == d.descr) dt = &d;
  if (!dt)
    fail_entry(path, entry, "unsupported dtype '" + descr + "' (supported: <f4 <f8 |u1 |i1 <i4 <i8)");
  a.dtype = dt->dtype;
  if (checked_numel(a.shape, dt->size) < 0) fail_entry(path, entry, "bad .npy header: invalid shape");
  return a;
}

// Checks that an entry of `total` bytes whose data starts at data_off holds exactly the array's data.
void check_npy_size(const std::string& path, const std::string& entry, const NpyArray& a, size_t data_off,
                    uint64_t total) {
  const uint64_t expected = static_cast<uint64_t>(a.numel()) * a.itemsize();
  if (total - data_off != expected)
    fail_entry(path, entry, "data size " + std::to_string(total - data_off) +
                                " bytes does not match shape and dtype '" + info(a.dtype).descr + "' (expected " +
                                std::to_string(expected) + " bytes)");
}

NpyArray decode_npy(const std::string& path, const std::string& entry, const std::vector<uint8_t>& b) {
  size_t data_off = 0;
  NpyArray a = parse_npy_header(path, entry, b.data(), b.size(), &data_off);
  check_npy_size(path, entry, a, data_off, b.size());
  a.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(data_off), b.end());
  return a;
}

// ---- zlib ----
std::vector<uint8_t> deflate_raw(const std::string& path, const std::string& entry,
                                 const std::vector<uint8_t>& in) {
  z_stream z{};
  // windowBits -15: raw deflate stream, as zip entries carry no zlib header/trailer.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail_entry(path, entry, "zlib deflateInit2 failed");
  std::vector<uint8_t> out, buf(1u << 20);
  size_t pos = 0;
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    size_t n = std::min(kZChunk, in.size() - pos);
    z.next_in = const_cast<Bytef*>(in.data() + pos);
    z.avail_in = static_cast<uInt>(n);
    int flush = pos + n == in.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      ret = deflate(&z, flush);
      if (ret == Z_STREAM_ERROR) { deflateEnd(&z); fail_entry(path, entry, "zlib deflate failed"); }
      out.insert(out.end(), buf.data(), buf.data() + (buf.size() - z.avail_out));
    } while (z.avail_out == 0);
    pos += n;
  }
  deflateEnd(&z);
  return out;
}

std::vector<uint8_t> inflate_raw(const std::string& path, const std::string& entry,
                                 const uint8_t* in, size_t in_size, size_t out_size) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) fail_entry(path, entry, "zlib inflateInit2 failed");
  // One spare byte: zlib needs a non-null output buffer, and it lets us detect oversized output.
  std::vector<uint8_t> out(out_size + 1);
  size_t in_pos = 0, out_pos = 0;
  int ret = Z_OK;
  std::string err;
  while (ret != Z_STREAM_END) {
    z.next_in = const_cast<Bytef*>(in + in_pos);
    z.avail_in = static_cast<uInt>(std::min(kZChunk, in_size - in_pos));
    z.next_out = out.data() + out_pos;
    z.avail_out = static_cast<uInt>(std::min(kZChunk, out.size() - out_pos));
    uInt avail_in = z.avail_in, avail_out = z.avail_out;
    ret = inflate(&z, Z_NO_FLUSH);
    in_pos += avail_in - z.avail_in;
    out_pos += avail_out - z.avail_out;
    if (ret == Z_STREAM_END) break;
    if (ret != Z_OK && ret != Z_BUF_ERROR) { err = std::string("inflate failed: ") + (z.msg ? z.msg : "corrupt data"); break; }
    if (out_pos > out_size) { err = "inflated data larger than the declared size"; break; }
    if (avail_in == z.avail_in && avail_out == z.avail_out) {  // no progress possible
      err = in_pos == in_size ? "compressed data truncated" : "inflate made no progress";
      break;
    }
  }
  inflateEnd(&z);
  if (err.empty() && out_pos != out_size)
    err = "inflated size " + std::to_string(out_pos) + " does not match the declared " + std::to_string(out_size);
  if (!err.empty()) fail_entry(path, entry, err);
  out.resize(out_size);
  return out;
}

// ---- file I/O ----
// fopen for reading, refusing what is not a regular file (a directory opens, then reads as garbage).
std::FILE* open_for_reading(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    fail(path, S_ISDIR(st.st_mode) ? "is a directory, not an .npz file" : "is not a regular file");
  }
  return f;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::FILE* f = open_for_reading(path);
  std::vector<uint8_t> data;
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long end = std::ftell(f);
    if (end > 0) data.reserve(static_cast<size_t>(end));
    std::rewind(f);
  }
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) fail(path, "read error");
  return data;
}

struct Entry { std::string name; uint16_t method, flags; uint32_t crc; uint64_t csize, usize, offset; };

}  // namespace

// ---- NpyArray ----
size_t NpyArray::itemsize() const { return info(dtype).size; }

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> NpyArray::to_float() const {
  size_t n = bytes.size() / itemsize();
  std::vector<float> out(n);
  auto conv = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<float>(v);
    }
  };
  switch (dtype) {
    case NpyDType::f32: if (n) std::memcpy(out.data(), bytes.data(), n * 4); break;
    case NpyDType::f64: conv(double{}); break;
    case NpyDType::u8: conv(uint8_t{}); break;
    case NpyDType::i8: conv(int8_t{}); break;
    case NpyDType::i32: conv(int32_t{}); break;
    case NpyDType::i64: conv(int64_t{}); break;
  }
  return out;
}

NpyArray make_f32(std::string name, std::vector<int64_t> shape, const float* data) {
  NpyArray a;
  a.name = std::move(name);
  a.dtype = NpyDType::f32;
  a.shape = std::move(shape);
  int64_t n = checked_numel(a.shape, 4);
  if (n < 0) throw NpzError("dtnn: make_f32 '" + a.name + "': invalid shape");
  if (n > 0) a.bytes.assign(reinterpret_cast<const uint8_t*>(data), reinterpret_cast<const uint8_t*>(data + n));
  return a;
}

// ---- writer ----
void write_npz(const std::string& path, const std::vector<NpyArray>& arrays, bool compress) {
  std::vector<uint8_t> central;
  std::set<std::string> names;
  try {
    AtomicFile file(path);
    uint64_t offset = 0;
    auto write = [&](const std::vector<uint8_t>& b) {
      file.write(b.data(), b.size());
      offset += b.size();
    };
    if (arrays.size() > 0xffff) fail(path, "too many arrays for a non-zip64 archive");
    for (const NpyArray& a : arrays) {
      std::string entry = a.name + ".npy";
      if (a.name.empty() || entry.size() > 0xffff) fail(path, "invalid array name '" + a.name + "'");
      if (!names.insert(a.name).second) fail_entry(path, entry, "duplicate array name");
      int64_t n = checked_numel(a.shape, a.itemsize());
      if (n < 0 || a.bytes.size() != static_cast<uint64_t>(n) * a.itemsize())
        fail_entry(path, entry, "byte size " + std::to_string(a.bytes.size()) + " does not match shape and dtype");
      std::vector<uint8_t> npy = encode_npy(a);
      uint32_t crc = crc_of(npy.data(), npy.size());
      std::vector<uint8_t> packed = compress ? deflate_raw(path, entry, npy) : std::vector<uint8_t>();
      const std::vector<uint8_t>& data = compress ? packed : npy;
      if (npy.size() >= 0xffffffffu || data.size() >= 0xffffffffu || offset >= 0xffffffffu)
        fail_entry(path, entry, "too large for a non-zip64 archive (4 GiB limit)");
      uint16_t method = compress ? kDeflated : kStored;
      bool utf8 = std::any_of(entry.begin(), entry.end(), [](char c) { return c & 0x80; });
      uint16_t flags = utf8 ? (1u << 11) : 0;  // bit 11: name is UTF-8

      // Sizes and CRC go in the local header itself (no data descriptor); numpy's reader checks them.
      std::vector<uint8_t> local;
      put32(local, kLocalSig); put16(local, 20); put16(local, flags); put16(local, method);
      put16(local, 0); put16(local, kDosDate1980); put32(local, crc);
      put32(local, static_cast<uint32_t>(data.size())); put32(local, static_cast<uint32_t>(npy.size()));
      put16(local, static_cast<uint16_t>(entry.size())); put16(local, 0);
      local.insert(local.end(), entry.begin(), entry.end());

      put32(central, kCentralSig); put16(central, 20); put16(central, 20); put16(central, flags);
      put16(central, method); put16(central, 0); put16(central, kDosDate1980); put32(central, crc);
      put32(central, static_cast<uint32_t>(data.size())); put32(central, static_cast<uint32_t>(npy.size()));
      put16(central, static_cast<uint16_t>(entry.size())); put16(central, 0); put16(central, 0);
      put16(central, 0); put16(central, 0); put32(central, 0); put32(central, static_cast<uint32_t>(offset));
      central.insert(central.end(), entry.begin(), entry.end());

      write(local);
      write(data);
    }
    uint64_t cd_offset = offset;
    if (cd_offset + central.size() >= 0xffffffffu) fail(path, "too large for a non-zip64 archive (4 GiB limit)");
    std::vector<uint8_t> eocd;
    put32(eocd, kEocdSig); put16(eocd, 0); put16(eocd, 0);
    put16(eocd, static_cast<uint16_t>(arrays.size())); put16(eocd, static_cast<uint16_t>(arrays.size()));
    put32(eocd, static_cast<uint32_t>(central.size())); put32(eocd, static_cast<uint32_t>(cd_offset));
    put16(eocd, 0);
    write(central);
    write(eocd);
    file.commit();
  } catch (const Error& e) {  // the file's own I/O errors, in this module's error type
    throw NpzError(std::string("dtnn: ") + e.what());
  }
}

// ---- reader ----
namespace {

struct Directory { uint64_t count, offset, size; };

// Finds the central directory from the last tail_size bytes of a file of file_size bytes (the whole
// file for read_npz; its end for read_npz_info). looks_zip: the file starts with a local header.
Directory find_directory(const std::string& path, const uint8_t* tail, size_t tail_size, uint64_t file_size,
                         bool looks_zip) {
  const uint8_t* d = tail;
  const size_t size = tail_size;
  const uint64_t tail_pos = file_size - tail_size;
  const std::string bad_tail = looks_zip ? "truncated zip archive (no end-of-central-directory record)"
                                         : "not a zip archive (no end-of-central-directory record)";
  if (size < 22) fail(path, bad_tail);

  // EOCD is 22 bytes plus a comment of up to 65535 bytes. Prefer a record whose comment length
  // reaches exactly to the end of the file (a comment may itself contain the signature bytes).
  size_t eocd = SIZE_MAX, loose = SIZE_MAX;
  size_t lowest = size - 22 > 65535 ? size - 22 - 65535 : 0;
  for (size_t p = size - 22 + 1; p-- > lowest;) {
    if (get32(d + p) != kEocdSig) continue;
    size_t end = p + 22 + get16(d + p + 20);
    if (end == size) { eocd = p; break; }
    if (end < size && loose == SIZE_MAX) loose = p;
  }
  if (eocd == SIZE_MAX) eocd = loose;
  if (eocd == SIZE_MAX) fail(path, bad_tail);

  Directory dir{get16(d + eocd + 10), get32(d + eocd + 16), get32(d + eocd + 12)};
  if (get16(d + eocd + 4) != 0 || get16(d + eocd + 6) != 0) fail(path, "multi-disk zip archives are not supported");
  if (eocd >= 20 && get32(d + eocd - 20) == kEocd64LocSig) {
    uint64_t rec = get64(d + eocd - 20 + 8);
    if (rec < tail_pos || rec > file_size || file_size - rec < 56 || get32(d + (rec - tail_pos)) != kEocd64Sig)
      fail(path, "corrupt zip64 end-of-central-directory record");
    const uint8_t* r = d + (rec - tail_pos);
    dir.count = get64(r + 32); dir.size = get64(r + 40); dir.offset = get64(r + 48);
  }
  if (dir.offset > file_size || dir.size > file_size - dir.offset)
    fail(path, "truncated or corrupt zip archive (central directory out of range)");
  return dir;
}

// Parses the central directory (cd_size bytes at cd) into its entries.
std::vector<Entry> parse_directory(const std::string& path, const uint8_t* d, uint64_t cd_size, uint64_t count) {
  std::vector<Entry> entries;
  size_t p = 0, cd_end = cd_size;
  for (uint64_t k = 0; k < count; ++k) {
    if (cd_end - p < 46 || get32(d + p) != kCentralSig) fail(path, "corrupt zip central directory");
    Entry e;
    e.flags = get16(d + p + 8); e.method = get16(d + p + 10); e.crc = get32(d + p + 16);
    e.csize = get32(d + p + 20); e.usize = get32(d + p + 24); e.offset = get32(d + p + 42);
    size_t nlen = get16(d + p + 28), xlen = get16(d + p + 30), clen = get16(d + p + 32);
    if (cd_end - p - 46 < nlen + xlen + clen) fail(path, "corrupt zip central directory");
    e.name.assign(reinterpret_cast<const char*>(d + p + 46), nlen);
    // Zip64 extended info (tag 1) holds 64-bit values for the fields saturated at 0xffffffff, in this order.
    for (size_t x = p + 46 + nlen, xend = x + xlen; xend - x >= 4;) {
      uint16_t tag = get16(d + x), len = get16(d + x + 2);
      if (len > xend - x - 4) fail_entry(path, e.name, "corrupt zip extra field");
      if (tag == 1) {
        size_t q = x + 4, qend = q + len;
        for (uint64_t* field : {&e.usize, &e.csize, &e.offset}) {
          if (*field != 0xffffffffu) continue;
          if (qend - q < 8) fail_entry(path, e.name, "corrupt zip64 extra field");
          *field = get64(d + q);
          q += 8;
        }
      }
      x += 4 + len;
    }
    entries.push_back(e);
    p += 46 + nlen + xlen + clen;
  }
  return entries;
}

// The checks every array entry must pass before its data is read. Returns false for a directory entry.
bool check_entry(const std::string& path, const Entry& e) {
  if (!e.name.empty() && e.name.back() == '/') return false;  // directory entry
  if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
    fail_entry(path, e.name, "not a .npy file");
  if (e.flags & 1) fail_entry(path, e.name, "encrypted entries are not supported");
  if (e.method != kStored && e.method != kDeflated)
    fail_entry(path, e.name, "unsupported compression method " + std::to_string(e.method) + " (only stored and deflate)");
  return true;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads n bytes at offset (fewer only at the end of the file).
std::vector<uint8_t> read_at(const std::string& path, std::FILE* f, uint64_t offset, size_t n) {
  std::vector<uint8_t> out(n);
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0) fail(path, "seek error");
  out.resize(std::fread(out.data(), 1, n, f));
  if (std::ferror(f)) fail(path, "read error");
  return out;
}

// The first `want` bytes (fewer when the entry is shorter) of a deflated entry whose compressed data
// starts at offset: inflates only as much input as it takes.
std::vector<uint8_t> inflate_prefix(const std::string& path, const Entry& e, std::FILE* f, uint64_t offset,
                                    size_t want) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) fail_entry(path, e.name, "zlib inflateInit2 failed");
  std::vector<uint8_t> out(want), in;
  uint64_t consumed = 0;
  std::string err;
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(want);
  while (z.avail_out > 0) {
    if (z.avail_in == 0) {
      if (consumed >= e.csize) { err = "compressed data truncated"; break; }
      in = read_at(path, f, offset + consumed, static_cast<size_t>(std::min<uint64_t>(1u << 16, e.csize - consumed)));
      if (in.empty()) { err = "truncated zip archive (entry data out of range)"; break; }
      consumed += in.size();
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(in.size());
    }
    const int ret = inflate(&z, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) break;
    if (ret != Z_OK && ret != Z_BUF_ERROR) { err = std::string("inflate failed: ") + (z.msg ? z.msg : "corrupt data"); break; }
  }
  out.resize(want - z.avail_out);
  inflateEnd(&z);
  if (!err.empty()) fail_entry(path, e.name, err);
  return out;
}

}  // namespace

std::vector<NpyInfo> read_npz_info(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(open_for_reading(path));
  std::FILE* f = file.get();
  if (std::fseek(f, 0, SEEK_END) != 0) fail(path, "seek error");
  const long end = std::ftell(f);
  if (end < 0) fail(path, "cannot tell the file size");
  const uint64_t file_size = static_cast<uint64_t>(end);
  const std::vector<uint8_t> head = read_at(path, f, 0, 4);
  const bool looks_zip = head.size() == 4 && get32(head.data()) == kLocalSig;
  // The EOCD record (with its comment) and a zip64 locator and record fit in the last 64 KiB + 98 bytes.
  const size_t tail_size = static_cast<size_t>(std::min<uint64_t>(file_size, 65535 + 22 + 20 + 56));
  const std::vector<uint8_t> tail = read_at(path, f, file_size - tail_size, tail_size);
  if (tail.size() != tail_size) fail(path, "read error");
  const Directory dir = find_directory(path, tail.data(), tail.size(), file_size, looks_zip);
  const std::vector<uint8_t> cd = read_at(path, f, dir.offset, static_cast<size_t>(dir.size));
  if (cd.size() != dir.size) fail(path, "truncated or corrupt zip archive (central directory out of range)");

  std::vector<NpyInfo> out;
  for (const Entry& e : parse_directory(path, cd.data(), dir.size, dir.count)) {
    if (!check_entry(path, e)) continue;
    const std::vector<uint8_t> local = read_at(path, f, e.offset, 30);
    if (local.size() < 30 || get32(local.data()) != kLocalSig)
      fail_entry(path, e.name, "truncated or corrupt zip archive (bad local header)");
    const uint64_t data_off = e.offset + 30 + get16(&local[26]) + get16(&local[28]);
    if (data_off > file_size || e.csize > file_size - data_off)
      fail_entry(path, e.name, "truncated zip archive (entry data out of range)");
    if (e.method == kStored && e.csize != e.usize) fail_entry(path, e.name, "stored entry with differing sizes");
    if (e.method == kDeflated && e.usize > e.csize * 1100 + 1024)
      fail_entry(path, e.name, "implausible uncompressed size " + std::to_string(e.usize));
    // Two reads: the fixed prefix gives the header length, then the whole header.
    auto prefix = [&](size_t want) {
      want = static_cast<size_t>(std::min<uint64_t>(want, e.usize));
      return e.method == kStored ? read_at(path, f, data_off, want) : inflate_prefix(path, e, f, data_off, want);
    };
    std::vector<uint8_t> b = prefix(12);
    b = prefix(npy_header_size(path, e.name, b.data(), b.size()));
    size_t npy_data_off = 0;
    NpyArray a = parse_npy_header(path, e.name, b.data(), b.size(), &npy_data_off);
    if (npy_data_off > e.usize) fail_entry(path, e.name, "bad .npy header (truncated)");
    check_npy_size(path, e.name, a, npy_data_off, e.usize);
    out.push_back(NpyInfo{a.name, a.dtype, a.shape});
  }
  return out;
}

std::vector<NpyArray> read_npz(const std::string& path) {
  const std::vector<uint8_t> file = read_file(path);
  const uint8_t* d = file.data();
  const size_t size = file.size();
  const bool looks_zip = size >= 4 && get32(d) == kLocalSig;
  const Directory dir = find_directory(path, d, size, size, looks_zip);
  const std::vector<Entry> entries = parse_directory(path, d + dir.offset, dir.size, dir.count);

  std::vector<NpyArray> out;
  for (const Entry& e : entries) {
    if (!check_entry(path, e)) continue;
    // Sizes come from the central directory; the local header is only used to find the data,
    // since writers may leave its sizes zero/0xffffffff (data descriptors, numpy's force_zip64).
    if (e.offset > size || size - e.offset < 30 || get32(d + e.offset) != kLocalSig)
      fail_entry(path, e.name, "truncated or corrupt zip archive (bad local header)");
    uint64_t data_off = e.offset + 30 + get16(d + e.offset + 26) + get16(d + e.offset + 28);
    if (data_off > size || e.csize > size - data_off) fail_entry(path, e.name, "truncated zip archive (entry data out of range)");
    const uint8_t* src = d + data_off;
    std::vector<uint8_t> raw;
    if (e.method == kStored) {
      if (e.csize != e.usize) fail_entry(path, e.name, "stored entry with differing sizes");
      raw.assign(src, src + e.csize);
    } else {
      // Deflate cannot expand data by more than ~1032x; refuse absurd sizes instead of allocating them.
      if (e.usize > e.csize * 1100 + 1024) fail_entry(path, e.name, "implausible uncompressed size " + std::to_string(e.usize));
      raw = inflate_raw(path, e.name, src, e.csize, e.usize);
    }
    if (crc_of(raw.data(), raw.size()) != e.crc) fail_entry(path, e.name, "CRC mismatch");
    out.push_back(decode_npy(path, e.name, raw));
  }
  return out;
}

}  // namespace dtnn::io
