// NumPy .npz writer/reader: a minimal zip implementation (local headers, central directory,
// end-of-central-directory record) on top of zlib raw deflate, plus the .npy array format.
// This file is the API (io/npz.h) and its file I/O; the .npy format is in npy_format.cpp, the zip
// directory records and the zlib codec in zip_format.cpp (shared declarations: io/npz_internal.h).
#include "io/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "io/npz_internal.h"

namespace dtnn::io {
using namespace npz_detail;

namespace {

// ---- file I/O ----
// fopen for reading, refusing what is not a regular file (a directory opens, then reads as garbage).
std::FILE* open_for_reading(const std::string& path) {
  std::string why;
  const int fd = try_open_input(path, &why);  // a FIFO without a writer must not block open()
  if (fd < 0) fail(path, why == "it is a directory" ? "is a directory, not an .npz file" : "cannot open: " + why);
  std::FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  }
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
  // The buffer grows with what inflates, from 64 KiB: `want` comes from the file (a .npy header length up
  // to 4 GiB), and allocating it up front made a 1.2 MB shard cost 1.8 GB before its header was refused.
  std::vector<uint8_t> out(std::min<size_t>(want, 1u << 16)), in;
  uint64_t consumed = 0;
  std::string err;
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  for (;;) {
    const size_t have = out.size() - z.avail_out;  // inflated so far
    if (have >= want) break;
    if (z.avail_out == 0) {
      out.resize(std::min<size_t>(want, out.size() * 2));
      z.next_out = out.data() + have;
      z.avail_out = static_cast<uInt>(out.size() - have);
    }
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
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  if (!err.empty()) fail_entry(path, e.name, err);
  return out;
}

}  // namespace

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
    if (e.method == kDeflated && e.usize > max_inflated_size(e.csize))
      fail_entry(path, e.name, "declares " + std::to_string(e.usize) + " bytes uncompressed from " +
                                   std::to_string(e.csize) + " compressed, more than deflate can produce");
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
      raw = inflate_raw(path, e.name, src, e.csize, e.usize);
    }
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION  // the fuzz build (CMakeLists.txt): reach the value checks
    if (crc_of(raw.data(), raw.size()) != e.crc) fail_entry(path, e.name, "CRC mismatch");
#endif
    out.push_back(decode_npy(path, e.name, raw));
  }
  return out;
}

}  // namespace dtnn::io
