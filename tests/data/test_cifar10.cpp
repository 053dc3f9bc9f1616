// CIFAR-10 binary reader: values, standardisation statistics, layouts and labels against values computed
// here from the generated files; corrupt and missing files.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>

#include "data/data_helpers.h"
#include "data/dataset.h"

using namespace dtnn;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kPixels = 3072, kRecord = 3073;

struct Record {
  uint8_t label;
  std::vector<uint8_t> px;  // CHW
};

// Records with a different pixel distribution per channel, so the three channels' statistics differ.
std::vector<Record> make_records(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<Record> out(n);
  for (int i = 0; i < n; ++i) {
    out[i].label = static_cast<uint8_t>(rng.below(10));
    out[i].px.resize(kPixels);
    for (int64_t p = 0; p < 1024; ++p) {
      out[i].px[p] = static_cast<uint8_t>(rng.below(256));
      out[i].px[1024 + p] = static_cast<uint8_t>(rng.below(128));
      out[i].px[2048 + p] = static_cast<uint8_t>(100 + rng.below(50));
    }
  }
  return out;
}

void write_records(const std::string& path, const std::vector<Record>& records) {
  std::ofstream f(path, std::ios::binary);
  for (const Record& r : records) {
    f.put(static_cast<char>(r.label));
    f.write(reinterpret_cast<const char*>(r.px.data()), kPixels);
  }
}

struct Files {
  std::vector<Record> train, test;
};

// data_batch_1..5 with 3, 2, 4, 1, 2 records and test_batch with 5.
Files write_dataset(const std::string& dir) {
  Files files;
  const int sizes[5] = {3, 2, 4, 1, 2};
  for (int k = 0; k < 5; ++k) {
    const std::vector<Record> r = make_records(sizes[k], 100 + k);
    write_records(dir + "/data_batch_" + std::to_string(k + 1) + ".bin", r);
    files.train.insert(files.train.end(), r.begin(), r.end());
  }
  files.test = make_records(5, 7);
  write_records(dir + "/test_batch.bin", files.test);
  return files;
}

}  // namespace

TEST_CASE("cifar10: the dataset shape table", "[data]") {
  const DatasetShape s = dataset_shape("cifar10");
  CHECK(s.h == 32);
  CHECK(s.w == 32);
  CHECK(s.c == 3);
  CHECK(s.classes == 10);
  CHECK(s.train_count == 50000);
  CHECK(s.test_count == 10000);
  CHECK_THAT(test::message_of([] { dataset_shape("svhn"); }), Catch::Contains("mnist, cifar10, imagenet"));
}

TEST_CASE("cifar10: pixels are standardised with the training pool's statistics, in both layouts", "[data]") {
  const test::ScratchDir dir("cifar10_values");
  const Files files = write_dataset(dir.path);
  const auto data = open_cifar10(dir.path, "");
  REQUIRE(data->count(Pool::train) == 12);
  REQUIRE(data->count(Pool::test) == 5);
  CHECK(data->shape().h == 32);
  CHECK(data->shape().c == 3);

  // Mean and population std of x / 255 per channel over every training pixel, summed directly.
  double mean[3] = {}, std[3] = {};
  const double count = 12.0 * 1024;
  for (int c = 0; c < 3; ++c) {
    for (const Record& r : files.train)
      for (int p = 0; p < 1024; ++p) mean[c] += r.px[c * 1024 + p] / 255.0;
    mean[c] /= count;
    for (const Record& r : files.train)
      for (int p = 0; p < 1024; ++p) std[c] += std::pow(r.px[c * 1024 + p] / 255.0 - mean[c], 2);
    std[c] = std::sqrt(std[c] / count);
  }
  CHECK(std::fabs(mean[0] - mean[1]) > 0.1);  // the channels really differ
  CHECK(std::fabs(std[1] - std[2]) > 0.05);

  for (Pool pool : {Pool::train, Pool::test}) {
    const std::vector<Record>& records = pool == Pool::train ? files.train : files.test;
    const std::vector<int64_t> indices = pool == Pool::train ? std::vector<int64_t>{11, 3, 0, 9, 5}
                                                             : std::vector<int64_t>{4, 0, 2};
    const int64_t n = static_cast<int64_t>(indices.size());
    std::vector<float> nhwc(n * kPixels), nchw(n * kPixels), y1(n * 10), y2(n * 10, -1.0f);
    data->load_batch(pool, indices.data(), n, Layout::nhwc, nhwc.data(), y1.data());
    data->load_batch(pool, indices.data(), n, Layout::nchw, nchw.data(), y2.data());
    CHECK(y1 == y2);
    for (int64_t b = 0; b < n; ++b) {
      const Record& r = records[indices[b]];
      for (int j = 0; j < 10; ++j) CHECK(y1[b * 10 + j] == (j == r.label ? 1.0f : 0.0f));
      int bad = 0;
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < 1024; ++p) {
          const double want = (r.px[c * 1024 + p] / 255.0 - mean[c]) / std[c];
          const float a = nhwc[b * kPixels + p * 3 + c], z = nchw[b * kPixels + c * 1024 + p];
          if (std::fabs(a - want) > 1e-5 * (1 + std::fabs(want)) || a != z) ++bad;
        }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("cifar10: corrupt, truncated and missing files fail with one line naming the file", "[data]") {
  struct Case {
    const char* what;
    const char* file;
    const char* message;
    std::function<void(const std::string&)> damage;
  };
  auto resize = [](const std::string& path, int64_t delta) {
    fs::resize_file(path, static_cast<uintmax_t>(static_cast<int64_t>(fs::file_size(path)) + delta));
  };
  const std::vector<Case> cases = {
      {"truncated record", "data_batch_2.bin", "not a multiple of the 3073-byte",
       [&](const std::string& p) { resize(p, -1); }},
      {"wrong size", "test_batch.bin", "not a multiple of the 3073-byte", [&](const std::string& p) { resize(p, 5); }},
      {"empty file", "data_batch_4.bin", "empty file", [](const std::string& p) { fs::resize_file(p, 0); }},
      {"missing batch", "data_batch_3.bin", "not found", [](const std::string& p) { fs::remove(p); }},
      {"label 10", "data_batch_5.bin", "label 10 of record 1",
       [](const std::string& p) {
         std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
         f.seekp(kRecord);
         f.put(10);
       }},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      const test::ScratchDir dir("cifar10_bad");
      write_dataset(dir.path);
      REQUIRE_NOTHROW(open_cifar10(dir.path, dir.path));
      c.damage(dir / c.file);
      CHECK(test::throws_dtnn_error([&] { open_cifar10(dir.path, dir.path); }));
      const std::string msg = test::message_of([&] { open_cifar10(dir.path, dir.path); });
      CHECK_THAT(msg, Catch::Contains(dir / c.file) && Catch::Contains(c.message));
      CHECK(msg.find('\n') == std::string::npos);
    }
  }
}
