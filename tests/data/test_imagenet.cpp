// ImageNet NPZ shards: header-only counting (io::read_npz_info), crop / BGR / Caffe mean against values
// computed here, label conventions and dtypes, stored and deflated shards, bad shards, the shard-grouped
// shuffle with the validation window, and the dataset the run opens for a model's input size.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <set>

#include "data/data_helpers.h"
#include "data/dataset.h"
#include "io/npz.h"
#include "layers/layers.h"
#include "models/model.h"
#include "train/run.h"

using namespace dtnn;
using io::NpyArray;
using io::NpyDType;

namespace {

struct ShardData {
  int64_t n = 0, h = 0, w = 0;
  std::vector<uint8_t> x;       // n x 3 x h x w
  std::vector<int64_t> labels;  // 1..1000
};

ShardData make_shard(int64_t n, int64_t h, int64_t w, uint64_t seed) {
  Rng rng(seed);
  ShardData s{n, h, w, std::vector<uint8_t>(n * 3 * h * w), std::vector<int64_t>(n)};
  for (uint8_t& v : s.x) v = static_cast<uint8_t>(rng.below(256));
  for (int64_t& l : s.labels) l = 1 + static_cast<int64_t>(rng.below(127));  // 1..127: fits u1 and i1 too
  return s;
}

NpyArray labels_array(const std::vector<int64_t>& labels, NpyDType dtype, bool column) {
  NpyArray y;
  y.name = "y";
  y.dtype = dtype;
  const int64_t n = static_cast<int64_t>(labels.size());
  y.shape = column ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{n};
  y.bytes.resize(n * y.itemsize());
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == NpyDType::i64) std::memcpy(&y.bytes[i * 8], &labels[i], 8);
    else if (dtype == NpyDType::i32) { const int32_t v = static_cast<int32_t>(labels[i]); std::memcpy(&y.bytes[i * 4], &v, 4); }
    else y.bytes[i] = static_cast<uint8_t>(labels[i]);  // u8 and i8 (labels < 128)
  }
  return y;
}

NpyArray images_array(const ShardData& s) {
  NpyArray x;
  x.name = "x";
  x.dtype = NpyDType::u8;
  x.shape = {s.n, 3, s.h, s.w};
  x.bytes = s.x;
  return x;
}

void write_shard(const std::string& path, const ShardData& s, NpyDType label_type, bool column, bool compress) {
  io::write_npz(path, {images_array(s), labels_array(s.labels, label_type, column)}, compress);
}

// PyDTNN's preprocessing, written out: crop at ((h - oh) / 2, (w - ow) / 2), channel k of the output is
// input channel 2 - k (BGR), minus the Caffe mean of k.
float expected(const ShardData& s, int64_t i, int64_t k, int64_t r, int64_t c, int64_t oh, int64_t ow) {
  const double mean_bgr[3] = {103.939, 116.779, 123.68};
  const int64_t top = (s.h - oh) / 2, left = (s.w - ow) / 2;
  const uint8_t v = s.x[((i * 3 + (2 - k)) * s.h + r + top) * s.w + c + left];
  return static_cast<float>(static_cast<double>(v) - mean_bgr[k]);
}

// Checks load_batch for the given pool indices (global) against `shards` (in pool order).
void check_values(const Dataset& data, Pool pool, const std::vector<ShardData>& shards,
                  const std::vector<int64_t>& indices, int64_t oh, int64_t ow) {
  const int64_t n = static_cast<int64_t>(indices.size()), size = 3 * oh * ow;
  std::vector<float> nhwc(n * size), nchw(n * size), y(n * 1000), y2(n * 1000);
  data.load_batch(pool, indices.data(), n, Layout::nhwc, nhwc.data(), y.data());
  data.load_batch(pool, indices.data(), n, Layout::nchw, nchw.data(), y2.data());
  CHECK(y == y2);
  for (int64_t b = 0; b < n; ++b) {
    int64_t i = indices[b];
    size_t s = 0;
    while (i >= shards[s].n) i -= shards[s++].n;
    int bad = 0;
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t c = 0; c < ow; ++c) {
          const float want = expected(shards[s], i, k, r, c, oh, ow);
          if (nhwc[b * size + (r * ow + c) * 3 + k] != want || nchw[b * size + (k * oh + r) * ow + c] != want) ++bad;
        }
    CHECK(bad == 0);
    for (int64_t j = 0; j < 1000; ++j) {
      if (y[b * 1000 + j] != (j == shards[s].labels[i] - 1 ? 1.0f : 0.0f)) FAIL("label of sample " << indices[b]);
    }
  }
}

// Which shard (by sizes) holds pool index i.
int64_t shard_of(const std::vector<int64_t>& sizes, int64_t i) {
  int64_t s = 0;
  while (i >= sizes[s]) i -= sizes[s++];
  return s;
}

}  // namespace

TEST_CASE("npz: read_npz_info reports names, dtypes and shapes without the data", "[data][io][npz]") {
  const test::ScratchDir dir("npz_info");
  const ShardData s = make_shard(3, 5, 4, 1);
  std::vector<float> f(6, 1.5f);
  const std::vector<NpyArray> arrays = {images_array(s), labels_array(s.labels, NpyDType::i64, true),
                                        io::make_f32("w", {2, 3}, f.data())};
  for (bool compress : {false, true}) {
    const std::string path = dir / (compress ? "d.npz" : "s.npz");
    io::write_npz(path, arrays, compress);
    const std::vector<io::NpyInfo> info = io::read_npz_info(path);
    REQUIRE(info.size() == 3);
    for (size_t a = 0; a < 3; ++a) {
      CHECK(info[a].name == arrays[a].name);
      CHECK(info[a].dtype == arrays[a].dtype);
      CHECK(info[a].shape == arrays[a].shape);
    }
    // A shortened entry is caught from the sizes alone.
    std::vector<NpyArray> bad = arrays;
    bad[1].shape = {3};
    bad[1].bytes.resize(3 * 8);
    io::write_npz(path, bad, compress);
    CHECK(io::read_npz_info(path)[1].shape == std::vector<int64_t>{3});
  }
  std::ofstream(dir / "junk.npz") << "not a zip file at all, but long enough to look for a directory";
  CHECK_THROWS_AS(io::read_npz_info(dir / "junk.npz"), io::NpzError);
  CHECK_THROWS_AS(io::read_npz_info(dir / "missing.npz"), io::NpzError);
}

TEST_CASE("imagenet: the dataset shape table", "[data]") {
  const DatasetShape s = dataset_shape("imagenet");
  CHECK(s.h == 224);
  CHECK(s.w == 224);
  CHECK(s.c == 3);
  CHECK(s.classes == 1000);
  CHECK(s.train_count == 1281167);
  CHECK(s.test_count == 50000);
}

TEST_CASE("imagenet: center crop, BGR order and Caffe mean, over stored and deflated shards", "[data]") {
  const test::ScratchDir train("imagenet_train"), test_dir("imagenet_test");
  // Three training shards (name order a, b, c), one test shard; label layouts (n, 1) i64, (n,) u1, (n,) i1.
  const std::vector<ShardData> shards = {make_shard(3, 10, 12, 1), make_shard(4, 10, 12, 2), make_shard(2, 10, 12, 3)};
  write_shard(train / "c.npz", shards[2], NpyDType::i8, false, false);
  write_shard(train / "a.npz", shards[0], NpyDType::i64, true, false);
  write_shard(train / "b.npz", shards[1], NpyDType::u8, false, true);
  std::ofstream(train / "notes.txt") << "ignored";
  const std::vector<ShardData> tests = {make_shard(2, 10, 12, 4)};
  write_shard(test_dir / "t.npz", tests[0], NpyDType::i32, true, true);

  SECTION("cropped to 7x8 (top 1, left 2)") {
    const auto data = open_imagenet(train.path, test_dir.path, 7, 8);
    CHECK(data->count(Pool::train) == 9);
    CHECK(data->count(Pool::test) == 2);
    CHECK(data->shape().h == 7);
    CHECK(data->shape().w == 8);
    CHECK(data->shape().classes == 1000);
    // Every sample in one batch, in an order that jumps between the three shards (the cache holds 2).
    check_values(*data, Pool::train, shards, {8, 0, 5, 3, 7, 1, 6, 2, 4}, 7, 8);
    check_values(*data, Pool::test, tests, {1, 0}, 7, 8);
    check_values(*data, Pool::train, shards, {4}, 7, 8);
  }
  SECTION("no crop when the sizes are equal") {
    const auto data = open_imagenet(train.path, test_dir.path, 10, 12);
    check_values(*data, Pool::train, shards, {0, 1, 2, 3, 4, 5, 6, 7, 8}, 10, 12);
  }
  SECTION("images smaller than the model's input") {
    const std::string msg = test::message_of([&] { open_imagenet(train.path, test_dir.path, 11, 12); });
    CHECK_THAT(msg, Catch::Contains(train / "a.npz") && Catch::Contains("smaller than the model's input 11x12"));
    CHECK(test::throws_dtnn_error([&] { open_imagenet(train.path, test_dir.path, 10, 13); }));
  }
}

TEST_CASE("imagenet: bad shards fail with one line naming the file", "[data]") {
  const test::ScratchDir train("imagenet_bad"), test_dir("imagenet_bad_test");
  write_shard(test_dir / "t.npz", make_shard(2, 4, 4, 9), NpyDType::i64, true, false);

  SECTION("label 0 and label 1001") {
    for (int64_t label : {0, 1001}) {
      ShardData s = make_shard(3, 4, 4, 5);
      s.labels[1] = label;
      write_shard(train / "a.npz", s, NpyDType::i64, true, true);
      const auto data = open_imagenet(train.path, test_dir.path, 4, 4);  // headers only: opens fine
      std::vector<float> x(3 * 16), y(1000);
      const int64_t index = 2;
      const std::string msg = test::message_of([&] { data->load_batch(Pool::train, &index, 1, Layout::nhwc, x.data(), y.data()); });
      CHECK_THAT(msg, Catch::Contains(train / "a.npz") && Catch::Contains("label " + std::to_string(label) + " of sample 1"));
      CHECK(test::throws_dtnn_error([&] { data->load_batch(Pool::train, &index, 1, Layout::nhwc, x.data(), y.data()); }));
    }
  }
  SECTION("no x") {
    const ShardData s = make_shard(3, 4, 4, 5);
    io::write_npz(train / "a.npz", {labels_array(s.labels, NpyDType::i64, true)}, false);
    const std::string msg = test::message_of([&] { open_imagenet(train.path, test_dir.path, 4, 4); });
    CHECK_THAT(msg, Catch::Contains(train / "a.npz") && Catch::Contains("no array 'x'"));
  }
  SECTION("labels that do not match the images") {
    ShardData s = make_shard(3, 4, 4, 5);
    io::write_npz(train / "a.npz", {images_array(s), labels_array({1, 2}, NpyDType::i64, false)}, false);
    CHECK_THAT(test::message_of([&] { open_imagenet(train.path, test_dir.path, 4, 4); }),
               Catch::Contains(train / "a.npz") && Catch::Contains("must hold 3 integer labels"));
  }
  SECTION("float images") {
    const ShardData s = make_shard(1, 4, 4, 5);
    std::vector<float> f(48);
    io::write_npz(train / "a.npz", {io::make_f32("x", {1, 3, 4, 4}, f.data()), labels_array(s.labels, NpyDType::i64, false)}, false);
    CHECK_THAT(test::message_of([&] { open_imagenet(train.path, test_dir.path, 4, 4); }), Catch::Contains("must be uint8"));
  }
  SECTION("no shards") {
    CHECK_THAT(test::message_of([&] { open_imagenet(train.path, test_dir.path, 4, 4); }),
               Catch::Contains(train.path) && Catch::Contains("no *.npz files"));
    CHECK_THAT(test::message_of([&] { open_imagenet(train / "nowhere", test_dir.path, 4, 4); }),
               Catch::Contains("not a directory"));
  }
}

TEST_CASE("imagenet: the shuffle is a permutation that keeps each shard's samples together", "[data]") {
  const test::ScratchDir train("imagenet_shuffle");
  const std::vector<int64_t> sizes = {5, 3, 7, 1, 4, 6};
  for (size_t s = 0; s < sizes.size(); ++s)
    write_shard(train / ("s" + std::to_string(s) + ".npz"), make_shard(sizes[s], 2, 2, s), NpyDType::i64, true, s % 2);
  const auto data = open_imagenet(train.path, train.path, 2, 2);
  REQUIRE(data->count(Pool::train) == 26);

  // The validation window (PyDTNN's contiguous window at a seeded start) still works over shards.
  const Splits splits = make_splits(*data, 0.25, false, 3);
  REQUIRE(splits.val.size() == 6);
  for (size_t i = 1; i < splits.val.size(); ++i) CHECK(splits.val[i] == (splits.val[i - 1] + 1) % 26);
  std::vector<int64_t> all = splits.train;
  all.insert(all.end(), splits.val.begin(), splits.val.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 26; ++i) CHECK(all[i] == i);

  std::vector<std::vector<int64_t>> orders;
  for (uint64_t seed : {1, 2}) {
    std::vector<int64_t> order = splits.train;
    Rng rng(seed);
    data->shuffle(order, rng);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == splits.train);  // make_splits returns the train indices in increasing order
    std::set<int64_t> shards;
    int changes = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      shards.insert(shard_of(sizes, order[i]));
      if (i > 0 && shard_of(sizes, order[i]) != shard_of(sizes, order[i - 1])) ++changes;
    }
    CHECK(changes == static_cast<int>(shards.size()) - 1);  // each shard is one run
    CHECK(order != splits.train);
    orders.push_back(order);
  }
  CHECK(orders[0] != orders[1]);

  // The default shuffle (every other dataset) is a plain Fisher-Yates over the list.
  const auto synthetic = make_synthetic(dataset_shape("mnist"), 0);
  std::vector<int64_t> a(50), b;
  for (int64_t i = 0; i < 50; ++i) a[i] = i;
  b = a;
  Rng r1(7), r2(7);
  synthetic->shuffle(a, r1);
  for (int64_t i = 49; i > 0; --i) std::swap(b[i], b[r2.below(static_cast<uint64_t>(i + 1))]);
  CHECK(a == b);
}

namespace {

// A model with only an input of the given size in front (enough for open_dataset).
std::unique_ptr<Model> input_model(int64_t h, int64_t w, Layout layout) {
  auto m = std::make_unique<Model>("input_only");
  m->add(make_input(h, w, 3));
  m->add(make_flatten());
  m->add(make_fc(2));
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = 1;
  m->build(ctx, 0);
  return m;
}

}  // namespace

TEST_CASE("synthetic: cifar10 and imagenet shapes, and imagenet at the model's input size", "[data]") {
  for (const char* name : {"cifar10", "imagenet"}) {
    const auto data = make_synthetic(dataset_shape(name), 1);
    const DatasetShape& s = data->shape();
    CHECK(data->count(Pool::train) == dataset_shape(name).train_count);
    CHECK(data->count(Pool::test) == dataset_shape(name).test_count);
    const int64_t size = s.h * s.w * s.c;
    std::vector<float> x(2 * size, -1.0f), y(2 * s.classes, -1.0f);
    const int64_t idx[2] = {0, s.train_count - 1};
    data->load_batch(Pool::train, idx, 2, Layout::nchw, x.data(), y.data());
    CHECK(*std::min_element(x.begin(), x.end()) >= 0.0f);
    CHECK(*std::max_element(x.begin(), x.end()) < 1.0f);
    CHECK(std::count(y.begin(), y.end(), 1.0f) == 2);
    CHECK(std::count(y.begin(), y.end(), 0.0f) == 2 * s.classes - 2);
  }
  CHECK(dataset_shape("cifar10").h * dataset_shape("cifar10").c == 96);

  TrainOptions o;
  o.dataset_name = "imagenet";
  o.use_synthetic_data = true;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    const auto model = input_model(227, 225, layout);  // alexnet_imagenet's size, and an odd width
    const auto data = open_dataset(o, *model);
    CHECK(data->synthetic());
    CHECK(data->shape().h == 227);
    CHECK(data->shape().w == 225);
    CHECK(data->shape().c == 3);
    CHECK(data->shape().classes == 1000);
  }
  o.dataset_name = "cifar10";
  CHECK(open_dataset(o, *input_model(32, 32, Layout::nchw))->shape().h == 32);

  // Real shards are cropped to the model's input.
  const test::ScratchDir dir("imagenet_run");
  const std::vector<ShardData> shards = {make_shard(2, 10, 10, 11)};
  write_shard(dir / "a.npz", shards[0], NpyDType::i64, true, false);
  o.dataset_name = "imagenet";
  o.use_synthetic_data = false;
  o.dataset_train_path = dir.path;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    const auto data = open_dataset(o, *input_model(8, 6, layout));
    CHECK(!data->synthetic());
    CHECK(data->shape().h == 8);
    CHECK(data->shape().w == 6);
    check_values(*data, Pool::test, shards, {1, 0}, 8, 6);
  }
}
