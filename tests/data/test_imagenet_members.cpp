// ImageNet shards whose members are unusual: a member name twice in one archive (refused, naming the file
// and the member), and labels stored in every integer dtype (PyDTNN stores int16), checked to 1..1000.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "data/data_helpers.h"
#include "data/dataset.h"
#include "helpers.h"
#include "io/npz.h"

using namespace dtnn;
using io::NpyArray;
using io::NpyDType;

namespace {

NpyArray images(const std::string& name, int64_t n, int64_t h, int64_t w) {
  NpyArray x;
  x.name = name;
  x.dtype = NpyDType::u8;
  x.shape = {n, 3, h, w};
  x.bytes.assign(static_cast<size_t>(n * 3 * h * w), 7);
  return x;
}

// n labels 1, 2, ..., of `dtype` (itemsize bytes each, little-endian), with `last` as the final label.
NpyArray labels(NpyDType dtype, int64_t n, int64_t last) {
  NpyArray y;
  y.name = "y";
  y.dtype = dtype;
  y.shape = {n};
  y.bytes.resize(static_cast<size_t>(n) * y.itemsize());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = static_cast<uint64_t>(i == n - 1 ? last : i + 1);
    std::memcpy(&y.bytes[static_cast<size_t>(i) * y.itemsize()], &v, y.itemsize());
  }
  return y;
}

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Renames every occurrence of the member name `from` to `to` (same length) in a stored archive.
void rename_member(const std::string& path, const std::string& from, const std::string& to) {
  std::vector<uint8_t> b = slurp(path);
  for (size_t p = 0; p + from.size() <= b.size(); ++p)
    if (std::memcmp(&b[p], from.data(), from.size()) == 0) std::memcpy(&b[p], to.data(), to.size());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()),
                                                                static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_CASE("imagenet: a shard with a member twice is refused, naming the file and the member", "[data]") {
  const test::ScratchDir dir("imagenet_duplicate");
  const std::string shard = dir / "a.npz";
  std::string member;
  SECTION("a second, smaller x.npy (the first was checked and the second read: SIGSEGV)") {
    io::write_npz(shard, {images("x", 4, 6, 6), labels(NpyDType::i64, 4, 4), images("z", 1, 6, 6)}, false);
    member = "x.npy";
  }
  SECTION("a second, shorter y.npy (labels read past their buffer)") {
    NpyArray short_y = labels(NpyDType::u8, 1, 1);
    short_y.name = "z";
    io::write_npz(shard, {images("x", 4, 6, 6), labels(NpyDType::i64, 4, 4), short_y}, false);
    member = "y.npy";
  }
  rename_member(shard, "z.npy", member);
  const std::string msg = test::message_of([&] { open_imagenet(dir.path, dir.path, 6, 6); });
  CHECK_THAT(msg, Catch::Contains(shard) && Catch::Contains("'" + member + "'") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(io::read_npz(shard), Catch::Contains(shard) && Catch::Contains("twice"));
}

TEST_CASE("imagenet: labels in any integer dtype, values checked to be 1..1000", "[data]") {
  const test::ScratchDir dir("imagenet_label_dtypes");
  const std::string shard = dir / "a.npz";
  // PyDTNN's shards store int16; the others hold 1..1000 as well, uint8/int8 only up to their maximum.
  const auto [dtype, last] = GENERATE(table<NpyDType, int64_t>({{NpyDType::i16, 1000}, {NpyDType::u16, 1000},
                                                                 {NpyDType::u32, 1000}, {NpyDType::u64, 1000},
                                                                 {NpyDType::i32, 1000}, {NpyDType::i64, 1000},
                                                                 {NpyDType::u8, 255}, {NpyDType::i8, 127}}));
  CAPTURE(static_cast<int>(dtype));
  const int64_t n = 3;
  SECTION("in range: one-hot at label - 1") {
    io::write_npz(shard, {images("x", n, 4, 4), labels(dtype, n, last)});
    const auto data = open_imagenet(dir.path, dir.path, 4, 4);
    const int64_t indices[n] = {0, 1, 2};
    std::vector<float> x(n * 3 * 16), y(n * 1000);
    data->load_batch(Pool::train, indices, n, Layout::nchw, x.data(), y.data());
    CHECK(y[0 * 1000 + 0] == 1.0f);
    CHECK(y[1 * 1000 + 1] == 1.0f);
    CHECK(y[2 * 1000 + last - 1] == 1.0f);
  }
  SECTION("0 is refused (labels are 1-based)") {
    io::write_npz(shard, {images("x", n, 4, 4), labels(dtype, n, 0)});
    const auto data = open_imagenet(dir.path, dir.path, 4, 4);
    const int64_t index = 2;
    std::vector<float> x(3 * 16), y(1000);
    CHECK_THROWS_WITH(data->load_batch(Pool::train, &index, 1, Layout::nchw, x.data(), y.data()),
                      Catch::Contains(shard) && Catch::Contains("not in 1..1000"));
  }
}

TEST_CASE("imagenet: int16 labels above 1000 or negative are refused", "[data]") {
  const test::ScratchDir dir("imagenet_label_range");
  const std::string shard = dir / "a.npz";
  const int64_t bad = GENERATE(1001, -1);
  io::write_npz(shard, {images("x", 2, 4, 4), labels(NpyDType::i16, 2, bad)});
  const auto data = open_imagenet(dir.path, dir.path, 4, 4);
  const int64_t index = 1;
  std::vector<float> x(3 * 16), y(1000);
  CHECK_THROWS_WITH(data->load_batch(Pool::train, &index, 1, Layout::nchw, x.data(), y.data()),
                    Catch::Contains("label " + std::to_string(bad)) && Catch::Contains("not in 1..1000"));
}
