// IDX reader and MNIST-format datasets: valid, truncated, corrupt and mismatched files; real data.
#include <sys/stat.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "helpers.h"

using namespace dtnn;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> idx_bytes(uint8_t type, std::vector<uint32_t> dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_plain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<uint8_t> images(int n) {
  std::vector<uint8_t> px(static_cast<size_t>(n) * 784);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 7);
  return px;
}

// A directory with a tiny MNIST-format dataset (n train, m test).
std::string make_dataset(const std::string& name, int n, int m, bool gz) {
  const std::string dir = test::temp_path(name);
  fs::create_directories(dir);
  auto write = gz ? write_gz : write_plain;
  const std::string ext = gz ? ".gz" : "";
  std::vector<uint8_t> labels_n(n), labels_m(m);
  for (int i = 0; i < n; ++i) labels_n[i] = static_cast<uint8_t>(i % 10);
  for (int i = 0; i < m; ++i) labels_m[i] = static_cast<uint8_t>((i * 3) % 10);
  write(dir + "/train-images-idx3-ubyte" + ext, idx_bytes(8, {uint32_t(n), 28, 28}, images(n)));
  write(dir + "/train-labels-idx1-ubyte" + ext, idx_bytes(8, {uint32_t(n)}, labels_n));
  write(dir + "/t10k-images-idx3-ubyte" + ext, idx_bytes(8, {uint32_t(m), 28, 28}, images(m)));
  write(dir + "/t10k-labels-idx1-ubyte" + ext, idx_bytes(8, {uint32_t(m)}, labels_m));
  return dir;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("idx: plain and gzip files read the same", "[data]") {
  const auto bytes = idx_bytes(8, {3, 2}, {1, 2, 3, 4, 5, 6});
  const std::string plain = test::temp_path("a.idx"), gz = test::temp_path("a.idx.gz");
  write_plain(plain, bytes);
  write_gz(gz, bytes);
  for (const std::string& path : {plain, gz}) {
    const IdxArray a = read_idx_u8(path, 2);
    CHECK(a.dims == std::vector<int64_t>{3, 2});
    CHECK(a.data == std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  }
  fs::remove(plain);
  fs::remove(gz);
}

TEST_CASE("idx: bad files give one clear error naming the file", "[data]") {
  const std::string path = test::temp_path("bad.idx");
  const auto good = idx_bytes(8, {4, 3}, std::vector<uint8_t>(12, 9));

  auto bad_magic = good;
  bad_magic[2] = 0x0D;  // float data
  write_plain(path, bad_magic);
  CHECK(error_of([&] { read_idx_u8(path, 2); }).find("bad magic") != std::string::npos);

  write_plain(path, good);
  CHECK(error_of([&] { read_idx_u8(path, 3); }).find("rank") != std::string::npos);

  write_plain(path, std::vector<uint8_t>(good.begin(), good.end() - 5));
  const std::string truncated = error_of([&] { read_idx_u8(path, 2); });
  CHECK(truncated.find("truncated") != std::string::npos);
  CHECK(truncated.find(path) != std::string::npos);

  // 50,000,000 declared 28x28 images (39 GB), 200 present: reported as truncated, before 39 GB are
  // allocated (the data is read in chunks).
  write_plain(path, idx_bytes(8, {50000000, 28, 28}, std::vector<uint8_t>(200 * 784, 1)));
  const std::string short_data = error_of([&] { read_idx_u8(path, 3); });
  CHECK(short_data.find("truncated file: the data has 156800 of 39200000000 bytes") != std::string::npos);

  // Each dimension below 2^31 and the first two under the size limit, but the product of all three
  // (1.3e20) overflows int64 to a negative count that slipped past the limit (found by tests/fuzz/fuzz_idx;
  // UBSan: signed integer overflow): refused before multiplying.
  write_plain(path, idx_bytes(8, {200000, 300000, 2147483647}, std::vector<uint8_t>(784, 1)));
  CHECK(error_of([&] { read_idx_u8(path, 3); }).find("implausibly large") != std::string::npos);

  auto trailing = good;
  trailing.push_back(0);
  write_plain(path, trailing);
  CHECK(error_of([&] { read_idx_u8(path, 2); }).find("trailing") != std::string::npos);

  write_plain(path, idx_bytes(8, {0, 3}, {}));
  CHECK(error_of([&] { read_idx_u8(path, 2); }).find("dimension") != std::string::npos);

  // A gzip stream with a corrupted body.
  write_gz(path, idx_bytes(8, {64, 64}, std::vector<uint8_t>(4096, 1)));
  std::ifstream in(path, std::ios::binary);
  std::vector<char> z((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (size_t i = 20; i < z.size() - 8; ++i) z[i] = static_cast<char>(z[i] ^ 0x5A);
  write_plain(path, std::vector<uint8_t>(z.begin(), z.end()));
  CHECK_FALSE(error_of([&] { read_idx_u8(path, 2); }).empty());

  CHECK(error_of([&] { read_idx_u8("/nonexistent/file.idx", 2); }) ==
        "/nonexistent/file.idx: cannot read the file (No such file or directory)");
  fs::remove(path);
  // A FIFO nobody writes to (gzopen blocked in open() until a writer came): an empty file, not a hang.
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  CHECK(error_of([&] { read_idx_u8(path, 2); }) == path + ": truncated file: the header has 0 of 4 bytes");
  fs::remove(path);
}

TEST_CASE("mnist: tiny generated datasets load, scale to [0,1] and one-hot their labels", "[data]") {
  for (bool gz : {false, true}) {
    const std::string dir = make_dataset(gz ? "mnist_gz" : "mnist_plain", 20, 7, gz);
    auto data = open_mnist(dir, "");
    CHECK(data->count(Pool::train) == 20);
    CHECK(data->count(Pool::test) == 7);
    std::vector<float> x(2 * 784), y(2 * 10);
    const int64_t idx[2] = {3, 14};
    data->load_batch(Pool::train, idx, 2, Layout::nhwc, x.data(), y.data());
    // Every pixel of both samples (byte i of the image file is uint8(i * 7)), bit for bit the float32
    // division PyDTNN's numpy (X.astype(float32) / 255) and torchvision's ToTensor (div(255)) compute:
    // byte * (1 / 255) differs from it in the last bit for 126 of the 256 bytes.
    int64_t wrong = 0;
    for (int b = 0; b < 2; ++b)
      for (int64_t j = 0; j < 784; ++j)
        wrong += x[b * 784 + j] != static_cast<float>(static_cast<uint8_t>((idx[b] * 784 + j) * 7)) / 255.0f;
    CHECK(wrong == 0);
    CHECK(y[3] == 1.0f);
    CHECK(y[10 + 4] == 1.0f);
    float sum = 0;
    for (float v : y) sum += v;
    CHECK(sum == 2.0f);
    fs::remove_all(dir);
  }
}

TEST_CASE("mnist: mismatched counts, wrong image size and bad labels are errors", "[data]") {
  const std::string dir = make_dataset("mnist_bad", 10, 5, false);
  write_plain(dir + "/train-labels-idx1-ubyte", idx_bytes(8, {9}, std::vector<uint8_t>(9, 1)));
  CHECK(error_of([&] { open_mnist(dir, ""); }).find("9 labels for 10 images") != std::string::npos);
  write_plain(dir + "/train-labels-idx1-ubyte", idx_bytes(8, {10}, std::vector<uint8_t>(10, 12)));
  CHECK(error_of([&] { open_mnist(dir, ""); }).find("not in 0..9") != std::string::npos);
  write_plain(dir + "/train-images-idx3-ubyte", idx_bytes(8, {10, 27, 28}, std::vector<uint8_t>(10 * 27 * 28)));
  CHECK(error_of([&] { open_mnist(dir, ""); }).find("expected 28x28") != std::string::npos);
  // The image size is checked before any data is read: a small gzip declaring 1 x 32768 x 32768 was
  // inflated to 1 GiB first. No data at all here: the refusal must name the size, not the truncation.
  write_plain(dir + "/train-images-idx3-ubyte", idx_bytes(8, {1, 32768, 32768}, {}));
  CHECK(error_of([&] { open_mnist(dir, ""); }).find("samples are 32768x32768, expected 28x28") != std::string::npos);
  CHECK(error_of([&] { open_mnist("/nonexistent", ""); }).find("neither") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("mnist: the real mnist-10k subset", "[data]") {
  const std::string dir = std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k";  // carried by the repository
  REQUIRE(fs::exists(dir));
  auto data = open_mnist(dir, "");
  CHECK(data->count(Pool::train) == 8000);
  CHECK(data->count(Pool::test) == 2000);
}

TEST_CASE("splits: validation window, test as validation, synthetic determinism", "[data]") {
  auto synth = make_synthetic(dataset_shape("mnist"), 5);
  CHECK(synth->count(Pool::train) == 60000);
  const Splits s = make_splits(*synth, 0.2, false, 9);
  CHECK(s.val.size() == 12000);
  CHECK(s.train.size() == 48000);
  std::vector<char> seen(60000, 0);
  for (int64_t i : s.train) seen[i]++;
  for (int64_t i : s.val) seen[i]++;
  for (char c : seen) REQUIRE(c == 1);  // a partition
  const Splits t = make_splits(*synth, 0.2, true, 9);
  CHECK(t.val_pool == Pool::test);
  CHECK(t.val.size() == 10000);
  CHECK(t.train.size() == 60000);
  CHECK_THROWS_AS(make_splits(*synth, 1.0, false, 9), Error);

  std::vector<float> a(784), b(784), ya(10), yb(10);
  const int64_t idx = 1234;
  synth->load_batch(Pool::train, &idx, 1, Layout::nhwc, a.data(), ya.data());
  make_synthetic(dataset_shape("mnist"), 5)->load_batch(Pool::train, &idx, 1, Layout::nhwc, b.data(), yb.data());
  CHECK(a == b);
  CHECK(ya == yb);
}

TEST_CASE("pad_to_cifar: 28x28x1 images become zero-padded 32x32x3 in both layouts", "[data]") {
  const DatasetShape mnist = dataset_shape("mnist");
  auto padded = pad_to_cifar(make_synthetic(mnist, 5), 4);
  auto plain = make_synthetic(mnist, 5);
  CHECK(padded->shape().h == 32);
  CHECK(padded->shape().w == 32);
  CHECK(padded->shape().c == 3);
  CHECK(padded->count(Pool::train) == plain->count(Pool::train));
  const int64_t idx[3] = {7, 0, 59999};
  std::vector<float> gray(3 * 784), gy(3 * 10), x(3 * 3072), y(3 * 10);
  plain->load_batch(Pool::train, idx, 3, Layout::nhwc, gray.data(), gy.data());
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    padded->load_batch(Pool::train, idx, 3, layout, x.data(), y.data());
    CHECK(y == gy);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < 32; ++i)
          for (int64_t j = 0; j < 32; ++j) {
            const bool inside = i >= 2 && i < 30 && j >= 2 && j < 30;
            const float expect = inside ? gray[b * 784 + (i - 2) * 28 + (j - 2)] : 0.0f;
            const int64_t at = layout == Layout::nhwc ? ((b * 32 + i) * 32 + j) * 3 + c : ((b * 3 + c) * 32 + i) * 32 + j;
            REQUIRE(x[at] == expect);
          }
  }
  CHECK_THROWS_AS(pad_to_cifar(make_synthetic(dataset_shape("cifar10"), 1), 4), Error);
}
