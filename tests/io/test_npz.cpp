// Tests for engine/io/npz: round trips, interop with real numpy (/usr/bin/python3), corrupt input.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "io/npz.h"
#include "skip.h"

namespace fs = std::filesystem;
using dtnn::io::NpyArray;
using dtnn::io::NpyDType;
using dtnn::io::NpzError;

namespace {

// A unique path under the temp directory, removed (with any leftovers of an atomic write) on scope exit.
struct TempPath {
  std::string path;
  explicit TempPath(const std::string& suffix) {
    static int counter = 0;
    path = (fs::temp_directory_path() /
            ("dtnn_test_npz_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + suffix))
               .string();
  }
  ~TempPath() {
    std::error_code ec;
    fs::remove(path, ec);
    fs::remove(path + ".tmp." + std::to_string(::getpid()), ec);
  }
};

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
void spit(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

uint32_t rd32(const std::vector<uint8_t>& b, size_t p) {
  return b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (static_cast<uint32_t>(b[p + 3]) << 24);
}
uint16_t rd16(const std::vector<uint8_t>& b, size_t p) { return static_cast<uint16_t>(b[p] | (b[p + 1] << 8)); }
void wr32(std::vector<uint8_t>& b, size_t p, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[p + i] = static_cast<uint8_t>(v >> (8 * i));
}

// Offset of the first entry's data in an archive we wrote (local header at offset 0).
size_t first_data_offset(const std::vector<uint8_t>& b) { return 30 + rd16(b, 26) + rd16(b, 28); }

uint32_t lcg_state = 12345;
uint32_t lcg() { return lcg_state = lcg_state * 1664525u + 1013904223u; }

std::vector<float> ramp(int64_t n) {  // exactly representable values, reproducible in numpy
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  return v;
}

NpyArray make_raw(std::string name, NpyDType t, std::vector<int64_t> shape, const void* data, size_t nbytes) {
  NpyArray a;
  a.name = std::move(name);
  a.dtype = t;
  a.shape = std::move(shape);
  a.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  return a;
}

const NpyArray& find(const std::vector<NpyArray>& v, const std::string& name) {
  for (const auto& a : v)
    if (a.name == name) return a;
  FAIL("array '" << name << "' not found");
  throw 0;
}

template <typename T>
std::vector<T> values(const NpyArray& a) {
  std::vector<T> v(a.bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), a.bytes.data(), a.bytes.size());
  return v;
}

// Runs a python script with /usr/bin/python3; returns true when it exits with status 0.
bool run_python(const std::string& script, const std::string& args) {
  TempPath py(".py");
  {
    std::ofstream f(py.path);
    f << script;
  }
  return std::system(("/usr/bin/python3 " + py.path + " " + args).c_str()) == 0;
}

// Calls read_npz expecting NpzError; returns its message.
std::string read_error(const std::string& path) {
  try {
    dtnn::io::read_npz(path);
  } catch (const NpzError& e) {
    return e.what();
  }
  FAIL("read_npz(" << path << ") did not throw NpzError");
  return "";
}

// Applies an equal-length text substitution inside the (single, stored) entry of `b` and fixes
// the CRC in the local header and central directory, so only the .npy-level content is wrong.
std::vector<uint8_t> patch_stored(std::vector<uint8_t> b, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  std::string s(b.begin(), b.end());
  size_t pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  std::copy(to.begin(), to.end(), b.begin() + static_cast<long>(pos));
  size_t data = first_data_offset(b), size = rd32(b, 18);
  uint32_t crc = static_cast<uint32_t>(crc32(0L, b.data() + data, static_cast<uInt>(size)));
  size_t eocd = b.size() - 22;
  size_t cd = rd32(b, eocd + 16);
  wr32(b, 14, crc);
  wr32(b, cd + 16, crc);
  return b;
}

// Checks the zip structure of an archive we wrote: every local header must carry the same
// CRC, sizes, method and name as its central-directory record (no data descriptors), as other
// zip readers may trust either copy.
void check_zip_structure(const std::vector<uint8_t>& b, size_t entries) {
  REQUIRE(b.size() >= 22);
  size_t eocd = b.size() - 22;
  REQUIRE(rd32(b, eocd) == 0x06054b50u);
  CHECK(rd16(b, eocd + 20) == 0);  // no comment
  REQUIRE(rd16(b, eocd + 10) == entries);
  size_t cd = rd32(b, eocd + 16);
  CHECK(cd + rd32(b, eocd + 12) == eocd);
  for (size_t k = 0; k < entries; ++k) {
    REQUIRE(rd32(b, cd) == 0x02014b50u);
    size_t local = rd32(b, cd + 42), nlen = rd16(b, cd + 28);
    REQUIRE(rd32(b, local) == 0x04034b50u);
    CHECK((rd16(b, local + 6) & 8) == 0);            // no data descriptor
    CHECK(rd16(b, local + 8) == rd16(b, cd + 10));   // method
    CHECK(rd32(b, local + 14) == rd32(b, cd + 16));  // crc
    CHECK(rd32(b, local + 18) == rd32(b, cd + 20));  // compressed size
    CHECK(rd32(b, local + 22) == rd32(b, cd + 24));  // uncompressed size
    CHECK(rd16(b, local + 26) == nlen);
    CHECK(std::equal(b.begin() + static_cast<long>(local + 30), b.begin() + static_cast<long>(local + 30 + nlen),
                     b.begin() + static_cast<long>(cd + 46)));
    size_t data = local + 30 + nlen + rd16(b, local + 28);
    uint32_t crc = 0;
    if (rd16(b, cd + 10) == 0) {
      crc = static_cast<uint32_t>(crc32(0L, b.data() + data, static_cast<uInt>(rd32(b, cd + 20))));
      CHECK((10 + rd16(b, data + 8)) % 64 == 0);  // .npy v1 header padded like numpy's
    } else
      crc = rd32(b, cd + 16);  // deflated: the reader's CRC check covers it
    CHECK(crc == rd32(b, cd + 16));
    cd += 46 + nlen + rd16(b, cd + 30) + rd16(b, cd + 32);
  }
}

}  // namespace

TEST_CASE("npz: f32 arrays round trip, compressed and stored", "[io][npz]") {
  std::vector<float> w = ramp(2 * 3 * 4 * 5), bias(7), fc(10 * 3), big(300000);
  for (auto& x : bias) x = static_cast<float>(static_cast<int32_t>(lcg())) / 1e6f;
  for (auto& x : fc) x = static_cast<float>(lcg() % 1000) * 1e-3f;
  for (auto& x : big) x = static_cast<float>(lcg()) / 3.0f;  // incompressible: output spans many chunks
  fc[0] = -0.0f;
  fc[1] = std::numeric_limits<float>::infinity();
  fc[2] = std::numeric_limits<float>::quiet_NaN();
  fc[3] = std::numeric_limits<float>::denorm_min();
  const float scalar = 3.25f;
  std::vector<NpyArray> in = {
      dtnn::io::make_f32("1_Conv2D_weights", {2, 3, 4, 5}, w.data()),
      dtnn::io::make_f32("1_Conv2D_biases", {7}, bias.data()),
      dtnn::io::make_f32("7_FC_weights", {10, 3}, fc.data()),
      dtnn::io::make_f32("scalar", {}, &scalar),
      dtnn::io::make_f32("empty", {0, 4}, nullptr),
      dtnn::io::make_f32("big", {300000}, big.data()),
  };
  REQUIRE(in[0].numel() == 120);
  REQUIRE(in[3].numel() == 1);
  REQUIRE(in[3].bytes.size() == 4);
  REQUIRE(in[4].numel() == 0);

  for (bool compress : {true, false}) {
    INFO("compress=" << compress);
    TempPath p(".npz");
    dtnn::io::write_npz(p.path, in, compress);
    CHECK_FALSE(fs::exists(p.path + ".tmp." + std::to_string(::getpid())));
    check_zip_structure(slurp(p.path), in.size());
    auto out = dtnn::io::read_npz(p.path);
    REQUIRE(out.size() == in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("array " << in[i].name);
      CHECK(out[i].name == in[i].name);
      CHECK(out[i].dtype == NpyDType::f32);
      CHECK(out[i].shape == in[i].shape);
      CHECK(out[i].bytes == in[i].bytes);
    }
    CHECK(out[3].to_float() == std::vector<float>{3.25f});
    CHECK(out[0].to_float() == w);
    auto file_size = fs::file_size(p.path);
    if (compress) CHECK(file_size < 1300000);  // the ramp/fc arrays compress; 'big' mostly not
    else CHECK(file_size > 1200000);
  }
}

TEST_CASE("npz: every dtype round trips and converts to float", "[io][npz]") {
  const double f64[] = {1.5, -2.25, 1e10, -0.0};
  const uint8_t u8[] = {0, 1, 127, 128, 255, 42};
  const int8_t i8[] = {-128, -1, 0, 127};
  const int32_t i32[] = {-2147483647 - 1, -5, 0, 2147483647};
  const int64_t i64[] = {-(int64_t(1) << 40), -1, 0, int64_t(1) << 40, 7, 8};
  std::vector<NpyArray> in = {
      make_raw("d", NpyDType::f64, {2, 2}, f64, sizeof f64),
      make_raw("x", NpyDType::u8, {1, 2, 3}, u8, sizeof u8),
      make_raw("c", NpyDType::i8, {4}, i8, sizeof i8),
      make_raw("i", NpyDType::i32, {2, 1, 2}, i32, sizeof i32),
      make_raw("y", NpyDType::i64, {6}, i64, sizeof i64),
  };
  TempPath p(".npz");
  dtnn::io::write_npz(p.path, in);
  auto out = dtnn::io::read_npz(p.path);
  REQUIRE(out.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    CHECK(out[i].dtype == in[i].dtype);
    CHECK(out[i].shape == in[i].shape);
    CHECK(out[i].bytes == in[i].bytes);
  }
  CHECK(out[0].itemsize() == 8);
  CHECK(out[1].itemsize() == 1);
  CHECK(out[3].itemsize() == 4);
  CHECK(out[0].to_float() == std::vector<float>{1.5f, -2.25f, 1e10f, -0.0f});
  CHECK(out[1].to_float() == std::vector<float>{0, 1, 127, 128, 255, 42});
  CHECK(out[2].to_float() == std::vector<float>{-128, -1, 0, 127});
  CHECK(out[3].to_float() == std::vector<float>{-2147483648.0f, -5, 0, 2147483648.0f});
  CHECK(out[4].to_float() == std::vector<float>{-1099511627776.0f, -1, 0, 1099511627776.0f, 7, 8});
}

TEST_CASE("npz: write failures throw and leave no file behind", "[io][npz]") {
  TempPath p(".npz");
  const float one = 1.0f;
  dtnn::io::write_npz(p.path, {dtnn::io::make_f32("old", {1}, &one)});
  const auto before = slurp(p.path);

  NpyArray bad = dtnn::io::make_f32("w", {2, 2}, ramp(4).data());
  bad.bytes.pop_back();  // byte count no longer matches the shape
  CHECK_THROWS_AS(dtnn::io::write_npz(p.path, {bad}), NpzError);
  CHECK(slurp(p.path) == before);  // atomic: the old file is untouched
  CHECK_FALSE(fs::exists(p.path + ".tmp." + std::to_string(::getpid())));

  auto dup = dtnn::io::make_f32("w", {1}, &one);
  CHECK_THROWS_AS(dtnn::io::write_npz(p.path, {dup, dup}), NpzError);
  CHECK(slurp(p.path) == before);

  std::string nodir = (fs::temp_directory_path() / "dtnn_no_such_dir_xyz" / "w.npz").string();
  try {
    dtnn::io::write_npz(nodir, {dup});
    FAIL("write_npz into a missing directory did not throw");
  } catch (const NpzError& e) {
    CHECK_THAT(e.what(), Catch::Contains("dtnn_no_such_dir_xyz/w.npz"));
  }
}

TEST_CASE("npz: files written by dtnn load in numpy", "[io][npz][numpy]") {
  if (!dtnn::test::numpy_available()) DTNN_SKIP(dtnn::test::kNoNumpy);
  const int64_t n4 = 2 * 3 * 4 * 5;
  auto w = ramp(n4), b = ramp(7);
  const float scalar = -1.5f;
  const uint8_t u8[] = {0, 200, 255};
  const int64_t i64[] = {-3, 1099511627776};
  std::vector<NpyArray> arrays = {
      dtnn::io::make_f32("1_Conv2D_weights", {2, 3, 4, 5}, w.data()),
      dtnn::io::make_f32("1_Conv2D_biases", {7}, b.data()),
      dtnn::io::make_f32("s", {}, &scalar),
      dtnn::io::make_f32("e", {0, 3}, nullptr),
      make_raw("x", NpyDType::u8, {3}, u8, sizeof u8),
      make_raw("y", NpyDType::i64, {2, 1}, i64, sizeof i64),
  };
  const std::string check = R"PY(
import sys, numpy as np
def ramp(n):
    return (np.arange(n) % 17).astype(np.float32) * np.float32(0.25) - np.float32(2)
with np.load(sys.argv[1]) as d:
    assert sorted(d.files) == sorted(['1_Conv2D_weights', '1_Conv2D_biases', 's', 'e', 'x', 'y']), d.files
    w = d['1_Conv2D_weights']
    assert w.dtype == np.float32 and w.shape == (2, 3, 4, 5), (w.dtype, w.shape)
    assert np.array_equal(w, ramp(120).reshape(2, 3, 4, 5))
    b = d['1_Conv2D_biases']
    assert b.dtype == np.float32 and b.shape == (7,) and np.array_equal(b, ramp(7))
    s = d['s']
    assert s.dtype == np.float32 and s.shape == () and s == np.float32(-1.5)
    e = d['e']
    assert e.dtype == np.float32 and e.shape == (0, 3)
    x = d['x']
    assert x.dtype == np.uint8 and x.tolist() == [0, 200, 255]
    y = d['y']
    assert y.dtype == np.int64 and y.shape == (2, 1) and y.tolist() == [[-3], [1099511627776]]
)PY";
  for (bool compress : {true, false}) {
    INFO("compress=" << compress);
    TempPath p(".npz");
    dtnn::io::write_npz(p.path, arrays, compress);
    CHECK(run_python(check, p.path));
  }
}

TEST_CASE("npz: files written by numpy load in dtnn", "[io][npz][numpy]") {
  if (!dtnn::test::numpy_available()) DTNN_SKIP(dtnn::test::kNoNumpy);
  TempPath stored(".npz"), compressed(".npz"), zip64(".npz"), commented(".npz"), fortran(".npz"),
      bigendian(".npz");
  const std::string make = R"PY(
import sys, shutil, zipfile, numpy as np
stored, compressed, zip64, commented, fortran, bigendian = sys.argv[1:7]
arrays = dict(
    w=(np.arange(120, dtype=np.float32) * np.float32(0.5) - np.float32(7)).reshape(2, 3, 4, 5),
    d=np.array([[1.5, -2.25], [1e300, -0.0]]),
    x=np.arange(256, dtype=np.uint8).reshape(16, 16),
    y=np.array([-5, 0, 2**40, 7], dtype=np.int64),
    i=np.array([[-1, 2], [3, -4]], dtype=np.int32),
    c=np.array([-128, 127, 0], dtype=np.int8),
    s=np.float32(3.5),
    e=np.zeros((0, 3), np.float32))
np.savez(stored, **arrays)
np.savez_compressed(compressed, **arrays)
shutil.copy(compressed, commented)
with zipfile.ZipFile(commented, 'a') as z:
    z.comment = b'comment with a fake PK\x05\x06 record inside'
# Force zip64 central-directory extras and end records (normally only used above 2 GiB).
zipfile.ZIP64_LIMIT = 0
zipfile.ZIP_FILECOUNT_LIMIT = 0
np.savez_compressed(zip64, **arrays)
zipfile.ZIP64_LIMIT = (1 << 31) - 1
zipfile.ZIP_FILECOUNT_LIMIT = (1 << 16) - 1
np.savez(fortran, f=np.asfortranarray(np.ones((2, 3), np.float32)))
np.savez(bigendian, b=np.arange(3, dtype='>f4'))
)PY";
  REQUIRE(run_python(make, stored.path + " " + compressed.path + " " + zip64.path + " " + commented.path +
                               " " + fortran.path + " " + bigendian.path));

  for (const TempPath* p : {&stored, &compressed, &zip64, &commented}) {
    INFO("file " << p->path);
    std::vector<NpyArray> out;
    REQUIRE_NOTHROW(out = dtnn::io::read_npz(p->path));
    REQUIRE(out.size() == 8);

    const NpyArray& w = find(out, "w");
    CHECK(w.dtype == NpyDType::f32);
    CHECK(w.shape == std::vector<int64_t>{2, 3, 4, 5});
    auto wf = w.to_float();
    REQUIRE(wf.size() == 120);
    for (size_t k = 0; k < wf.size(); ++k) CHECK(wf[k] == static_cast<float>(k) * 0.5f - 7.0f);

    const NpyArray& d = find(out, "d");
    CHECK(d.dtype == NpyDType::f64);
    CHECK(d.shape == std::vector<int64_t>{2, 2});
    auto dv = values<double>(d);
    CHECK(dv == std::vector<double>{1.5, -2.25, 1e300, -0.0});
    CHECK(std::signbit(dv[3]));

    const NpyArray& x = find(out, "x");
    CHECK(x.dtype == NpyDType::u8);
    CHECK(x.shape == std::vector<int64_t>{16, 16});
    REQUIRE(x.bytes.size() == 256);
    for (size_t k = 0; k < 256; ++k) CHECK(x.bytes[k] == k);

    const NpyArray& y = find(out, "y");
    CHECK(y.dtype == NpyDType::i64);
    CHECK(values<int64_t>(y) == std::vector<int64_t>{-5, 0, int64_t(1) << 40, 7});

    const NpyArray& i = find(out, "i");
    CHECK(i.dtype == NpyDType::i32);
    CHECK(i.shape == std::vector<int64_t>{2, 2});
    CHECK(values<int32_t>(i) == std::vector<int32_t>{-1, 2, 3, -4});

    const NpyArray& c = find(out, "c");
    CHECK(c.dtype == NpyDType::i8);
    CHECK(values<int8_t>(c) == std::vector<int8_t>{-128, 127, 0});

    const NpyArray& s = find(out, "s");
    CHECK(s.dtype == NpyDType::f32);
    CHECK(s.shape.empty());
    CHECK(s.to_float() == std::vector<float>{3.5f});

    const NpyArray& e = find(out, "e");
    CHECK(e.shape == std::vector<int64_t>{0, 3});
    CHECK(e.bytes.empty());
  }

  CHECK_THAT(read_error(fortran.path), Catch::Contains("fortran_order") && Catch::Contains("'f.npy'"));
  CHECK_THAT(read_error(bigendian.path), Catch::Contains("unsupported dtype '>f4'"));
}

TEST_CASE("npz: corrupt or missing input throws NpzError", "[io][npz]") {
  auto w = ramp(64 * 9);
  for (auto& x : w) x += static_cast<float>(lcg() % 8);
  const std::vector<NpyArray> arrays = {dtnn::io::make_f32("1_Conv2D_weights", {64, 9}, w.data())};

  TempPath good(".npz"), stored(".npz"), bad(".npz");
  dtnn::io::write_npz(good.path, arrays, true);
  dtnn::io::write_npz(stored.path, arrays, false);
  const auto gbytes = slurp(good.path), sbytes = slurp(stored.path);

  SECTION("missing file") {
    std::string msg = read_error(bad.path);
    CHECK_THAT(msg, Catch::StartsWith("dtnn: " + bad.path + ": ") && Catch::Contains("cannot open"));
  }
  SECTION("a directory is refused by name (it opens, then read as garbage or exhausted memory)") {
    fs::create_directories(bad.path);
    CHECK_THAT(read_error(bad.path), Catch::StartsWith("dtnn: " + bad.path + ": ") && Catch::Contains("is a directory"));
    CHECK_THROWS_WITH(dtnn::io::read_npz_info(bad.path), Catch::Contains("is a directory"));
    fs::remove(bad.path);
  }
  SECTION("random bytes are not a zip archive") {
    std::vector<uint8_t> junk(4096);
    for (auto& c : junk) c = static_cast<uint8_t>(lcg() >> 24);
    spit(bad.path, junk);
    CHECK_THAT(read_error(bad.path), Catch::Contains("not a zip archive"));
    spit(bad.path, {});
    CHECK_THAT(read_error(bad.path), Catch::Contains("not a zip archive"));
  }
  SECTION("truncated files") {
    spit(bad.path, std::vector<uint8_t>(gbytes.begin(), gbytes.begin() + static_cast<long>(gbytes.size() / 2)));
    CHECK_THAT(read_error(bad.path), Catch::Contains("truncated"));
    for (size_t len = 0; len < gbytes.size(); len += 7) {
      INFO("cut at " << len);
      spit(bad.path, std::vector<uint8_t>(gbytes.begin(), gbytes.begin() + static_cast<long>(len)));
      CHECK_THROWS_AS(dtnn::io::read_npz(bad.path), NpzError);
    }
  }
  SECTION("flipped byte inside the compressed data") {
    size_t data = first_data_offset(gbytes), csize = rd32(gbytes, 18);
    REQUIRE(csize > 100);
    auto b = gbytes;
    b[data + csize / 2] ^= 0x55;
    spit(bad.path, b);
    CHECK_THAT(read_error(bad.path), Catch::Contains("entry '1_Conv2D_weights.npy'"));
    for (size_t k = data; k < data + csize; ++k) {  // every single-byte corruption is detected
      INFO("flip at " << k);
      b = gbytes;
      b[k] ^= 0xff;
      spit(bad.path, b);
      CHECK_THROWS_AS(dtnn::io::read_npz(bad.path), NpzError);
    }
  }
  SECTION("flipped byte inside stored data is a CRC mismatch") {
    auto b = sbytes;
    b[b.size() / 2] ^= 0x01;
    spit(bad.path, b);
    CHECK(read_error(bad.path) == "dtnn: " + bad.path + ": entry '1_Conv2D_weights.npy': CRC mismatch");
  }
  SECTION("any flipped byte anywhere never crashes") {
    for (const auto* src : {&gbytes, &sbytes}) {
      for (size_t k = 0; k < src->size(); k += (src->size() > 3000 ? 3 : 1)) {
        auto b = *src;
        b[k] ^= 0xa5;
        spit(bad.path, b);
        try {
          dtnn::io::read_npz(bad.path);  // harmless fields (e.g. timestamps) may still read fine
        } catch (const NpzError&) {
        }
      }
    }
  }
  SECTION("unsupported compression method") {
    auto b = gbytes;
    size_t cd = rd32(b, b.size() - 22 + 16);
    b[8] = 12;  // bzip2, in the local header and the central directory
    b[cd + 10] = 12;
    spit(bad.path, b);
    CHECK_THAT(read_error(bad.path), Catch::Contains("unsupported compression method 12"));
  }
  SECTION("bad .npy headers") {
    spit(bad.path, patch_stored(sbytes, "'descr'", "'dascr'"));
    CHECK_THAT(read_error(bad.path), Catch::Contains("bad .npy header"));
    spit(bad.path, patch_stored(sbytes, "'<f4'", "'<c8'"));
    CHECK_THAT(read_error(bad.path), Catch::Contains("unsupported dtype '<c8'"));
    spit(bad.path, patch_stored(sbytes, "(64, 9)", "(64, 8)"));
    CHECK_THAT(read_error(bad.path), Catch::Contains("does not match"));
    spit(bad.path, patch_stored(sbytes, "False", "True "));
    CHECK_THAT(read_error(bad.path), Catch::Contains("fortran_order=True"));
    spit(bad.path, patch_stored(sbytes, "NUMPY", "NUMPX"));
    CHECK_THAT(read_error(bad.path), Catch::Contains("bad .npy header"));
    spit(bad.path, patch_stored(sbytes, "(64, 9)", "(64, 9("));
    CHECK_THAT(read_error(bad.path), Catch::Contains("bad .npy header"));
  }
}
