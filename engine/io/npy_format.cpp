// The .npy array format (numpy/lib/format.py) for the .npz reader/writer: the dtype table, header
// writing and parsing, and NpyArray's own methods. Contracts: io/npz.h, io/npz_internal.h.
#include <cctype>
#include <climits>
#include <cstring>

#include "io/npz_internal.h"

namespace dtnn::io {
namespace npz_detail {
namespace {

struct DTypeInfo { NpyDType dtype; const char* descr; size_t size; };
constexpr DTypeInfo kDTypes[] = {
    {NpyDType::f32, "<f4", 4}, {NpyDType::f64, "<f8", 8}, {NpyDType::u8, "|u1", 1},
    {NpyDType::i8, "|i1", 1},  {NpyDType::i32, "<i4", 4}, {NpyDType::i64, "<i8", 8},
    {NpyDType::i16, "<i2", 2}, {NpyDType::u16, "<u2", 2}, {NpyDType::u32, "<u4", 4}, {NpyDType::u64, "<u8", 8}};

const DTypeInfo& info(NpyDType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t) return d;
  throw NpzError("dtnn: npz: invalid NpyDType value");
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

}  // namespace

int64_t checked_numel(const std::vector<int64_t>& shape, size_t itemsize) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / static_cast<int64_t>(itemsize) / d) return -1;
    n *= d;
  }
  return n;
}

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
    fail_entry(path, entry, "unsupported dtype '" + descr + "' (supported: <f4 <f8 |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8)");
  a.dtype = dt->dtype;
  if (checked_numel(a.shape, dt->size) < 0) fail_entry(path, entry, "bad .npy header: invalid shape");
  return a;
}

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

}  // namespace npz_detail

using namespace npz_detail;

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
    case NpyDType::i16: conv(int16_t{}); break;
    case NpyDType::u16: conv(uint16_t{}); break;
    case NpyDType::u32: conv(uint32_t{}); break;
    case NpyDType::u64: conv(uint64_t{}); break;
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

}  // namespace dtnn::io
