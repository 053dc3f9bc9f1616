// The zip records the .npz reader needs (PKWARE APPNOTE.TXT: end-of-central-directory, its zip64 variant,
// the central directory) and the zlib raw-deflate codec both directions use. Contracts: io/npz_internal.h.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "io/npz_internal.h"

namespace dtnn::io::npz_detail {
namespace {

constexpr size_t kZChunk = 1u << 30;  // zlib counters are 32-bit (uInt)

}  // namespace

uint32_t crc_of(const uint8_t* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t off = 0; off < n; off += kZChunk)
    crc = crc32(crc, p + off, static_cast<uInt>(std::min(kZChunk, n - off)));
  return static_cast<uint32_t>(crc);
}

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
  if (out_size > max_inflated_size(in_size))
    fail_entry(path, entry, "declares " + std::to_string(out_size) + " bytes uncompressed from " +
                                std::to_string(in_size) + " compressed, more than deflate can produce");
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) fail_entry(path, entry, "zlib inflateInit2 failed");
  // The declared size is a claim, not a fact: the output grows (doubling, from 1 MiB) only as inflate
  // fills it, so a small file declaring a huge size fails after inflating what it holds, having
  // allocated about that much. One spare byte past out_size detects oversized output.
  std::vector<uint8_t> out;
  size_t in_pos = 0, out_pos = 0;
  int ret = Z_OK;
  std::string err;
  while (ret != Z_STREAM_END) {
    if (out_pos == out.size()) out.resize(std::min(out_size + 1, std::max<size_t>(out.size() * 2, 1u << 20)));
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

std::vector<Entry> parse_directory(const std::string& path, const uint8_t* d, uint64_t cd_size, uint64_t count) {
  std::vector<Entry> entries;
  std::set<std::string> names;
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
    // numpy keeps the last of two same-named members, other readers the first; a reader that checks one
    // and reads the other trusts a shape the data does not have. One entry per name, or no archive.
    if (!names.insert(e.name).second) fail_entry(path, e.name, "appears twice in the archive (one entry per name)");
    entries.push_back(e);
    p += 46 + nlen + xlen + clen;
  }
  return entries;
}

bool check_entry(const std::string& path, const Entry& e) {
  if (!e.name.empty() && e.name.back() == '/') return false;  // directory entry
  if (e.name.size() < 5 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0)
    fail_entry(path, e.name, "not a .npy file");
  if (e.flags & 1) fail_entry(path, e.name, "encrypted entries are not supported");
  if (e.method != kStored && e.method != kDeflated)
    fail_entry(path, e.name, "unsupported compression method " + std::to_string(e.method) + " (only stored and deflate)");
  return true;
}

}  // namespace dtnn::io::npz_detail
