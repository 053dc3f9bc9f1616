// ImageNet from NPZ shards, PyDTNN's format (research notes §6.3): `x` uint8 (n, 3, H, W) RGB, `y` labels
// 1..1000 as (n,) or (n, 1). Real data is 1024 training shards of 1251 images of 227x227 (~190 MB each),
// so nothing is loaded at open: io::read_npz_info reads each archive's directory and .npy headers to
// count samples and check shapes. load_batch decodes a whole shard the first time a batch touches it and
// keeps the two most recently used (a batch that crosses a shard boundary needs two), so the training
// order must visit shards one after another: shuffle() permutes the shard order and the samples inside
// each shard, instead of the whole index list (which would decode a shard per sample).
//
// Differences from PyDTNN:
//   - Any number of shards of any size, in name order; PyDTNN assumed 1251 images per file.
//   - The validation split is PyDTNN's sample window (make_splits), not whole files.
//   - The center crop is computed from the sizes ((H - out_h) / 2 from the top, likewise from the left),
//     which for 227 -> 224 is PyDTNN's x[..., 1:225, 1:225]; AlexNet's 227 input is not cropped.
//   - In data-parallel runs every rank decodes every shard its shares touch (all of them), as PyDTNN's
//     ranks each read every file; decoding is not divided among ranks.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/error.h"
#include "data/dataset.h"
#include "io/npz.h"

namespace dtnn {
namespace {

constexpr int64_t kClasses = 1000;
constexpr double kCaffeMeanBgr[3] = {103.939, 116.779, 123.68};

struct Shard {
  std::string path;
  int64_t first = 0, count = 0;  // pool indices [first, first + count)
  int64_t h = 0, w = 0;
};

struct ShardList {
  std::vector<Shard> shards;
  int64_t total = 0;
};

const io::NpyInfo* find_array(const std::vector<io::NpyInfo>& arrays, const std::string& name) {
  for (const io::NpyInfo& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

// Labels may be any integer dtype (PyDTNN stores int16); their values are checked to be 1..1000 at load.
bool is_integer(io::NpyDType t) { return t != io::NpyDType::f32 && t != io::NpyDType::f64; }

// Checks a shard's arrays (from its headers at open, or its decoded arrays at load) and returns n.
int64_t check_shard(const std::string& path, const io::NpyInfo* x, const io::NpyInfo* y, int64_t out_h,
                    int64_t out_w, Shard* shard) {
  DTNN_CHECK(x, path, ": no array 'x' (expected uint8 images (n, 3, H, W))");
  DTNN_CHECK(y, path, ": no array 'y' (expected labels 1..1000, (n,) or (n, 1))");
  DTNN_CHECK(x->dtype == io::NpyDType::u8 && x->shape.size() == 4 && x->shape[1] == 3, path,
             ": 'x' must be uint8 of shape (n, 3, H, W) (NCHW RGB)");
  const int64_t n = x->shape[0], h = x->shape[2], w = x->shape[3];
  DTNN_CHECK(h >= out_h && w >= out_w, path, ": images are ", h, "x", w, ", smaller than the model's input ", out_h,
             "x", out_w);
  DTNN_CHECK(is_integer(y->dtype) && (y->shape.size() == 1 || (y->shape.size() == 2 && y->shape[1] == 1)) &&
                 y->shape[0] == n,
             path, ": 'y' must hold ", n, " integer labels, shape (n,) or (n, 1)");
  if (shard->count == 0 && shard->h == 0) {
    shard->h = h;
    shard->w = w;
  }
  DTNN_CHECK(shard->h == h && shard->w == w && (shard->count == 0 || shard->count == n), path,
             ": changed since the dataset was opened (", n, " images of ", h, "x", w, ")");
  return n;
}

ShardList list_shards(const std::string& dir, int64_t out_h, int64_t out_w) {
  namespace fs = std::filesystem;
  DTNN_CHECK(!dir.empty(), "no ImageNet directory given (use --dataset_train_path)");
  DTNN_CHECK(fs::is_directory(dir), dir, ": not a directory");
  std::vector<std::string> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".npz") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  DTNN_CHECK(!paths.empty(), dir, ": no *.npz files");
  ShardList list;
  for (const std::string& path : paths) {
    const std::vector<io::NpyInfo> arrays = io::read_npz_info(path);
    Shard s;
    s.path = path;
    s.count = check_shard(path, find_array(arrays, "x"), find_array(arrays, "y"), out_h, out_w, &s);
    s.first = list.total;
    list.total += s.count;
    if (s.count > 0) list.shards.push_back(s);
  }
  DTNN_CHECK(list.total > 0, dir, ": the *.npz files hold no images");
  return list;
}

// One decoded shard: its images (n x 3 x H x W bytes) and its classes (label - 1).
struct Decoded {
  Pool pool = Pool::train;
  int64_t shard = -1;
  uint64_t last_use = 0;
  std::vector<uint8_t> x;
  std::vector<int16_t> classes;
};

template <typename T>
void read_labels(const io::NpyArray& y, const std::string& path, std::vector<int16_t>& classes) {
  const int64_t n = y.shape[0];
  classes.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, y.bytes.data() + i * sizeof(T), sizeof(T));
    const int64_t label = static_cast<int64_t>(v);  // a uint64 above INT64_MAX turns negative: refused below
    DTNN_CHECK(label >= 1 && label <= kClasses, path, ": label ", label, " of sample ", i,
               " is not in 1..1000 (PyDTNN's ImageNet labels are 1-based)");
    classes[i] = static_cast<int16_t>(label - 1);
  }
}

class ImageNet final : public Dataset {
 public:
  ImageNet(const std::string& train_dir, const std::string& test_dir, int64_t out_h, int64_t out_w)
      : out_h_(out_h), out_w_(out_w) {
    DTNN_CHECK(out_h > 0 && out_w > 0, "ImageNet input size must be positive (got ", out_h, "x", out_w, ")");
    train_ = list_shards(train_dir, out_h, out_w);
    test_ = list_shards(test_dir, out_h, out_w);
    shape_ = dataset_shape("imagenet");
    shape_.h = out_h;
    shape_.w = out_w;
    shape_.train_count = train_.total;
    shape_.test_count = test_.total;
  }

  const DatasetShape& shape() const override { return shape_; }
  int64_t count(Pool pool) const override { return pool == Pool::train ? shape_.train_count : shape_.test_count; }

  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                  float* y) const override {
    const ShardList& list = pool == Pool::train ? train_ : test_;
    const int64_t plane = out_h_ * out_w_;
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t b = 0; b < count; ++b) {
      const int64_t s = shard_of(list, indices[b]);
      const Shard& shard = list.shards[s];
      const Decoded& d = decoded(pool, s);
      const int64_t i = indices[b] - shard.first, top = (shard.h - out_h_) / 2, left = (shard.w - out_w_) / 2;
      const uint8_t* image = d.x.data() + i * 3 * shard.h * shard.w;
      float* dst = x + b * 3 * plane;
      for (int64_t k = 0; k < 3; ++k) {  // k: BGR output channel, read from RGB input channel 2 - k
        const uint8_t* src = image + (2 - k) * shard.h * shard.w + top * shard.w + left;
        const double mean = kCaffeMeanBgr[k];
        for (int64_t r = 0; r < out_h_; ++r)
          for (int64_t c = 0; c < out_w_; ++c) {
            const float v = static_cast<float>(src[r * shard.w + c] - mean);
            if (layout == Layout::nchw) dst[k * plane + r * out_w_ + c] = v;
            else dst[(r * out_w_ + c) * 3 + k] = v;
          }
      }
      float* label = y + b * kClasses;
      std::fill(label, label + kClasses, 0.0f);
      label[d.classes[i]] = 1.0f;
    }
  }

  // Shards in a random order, samples in a random order inside each shard: consecutive batches come
  // from one shard (or two, across a boundary), so each shard is decoded once per epoch.
  void shuffle(std::vector<int64_t>& indices, Rng& rng) const override {
    const int64_t nshards = static_cast<int64_t>(train_.shards.size());
    std::vector<int64_t> start(nshards + 1, 0), by_shard(indices.size()), order(nshards);
    for (int64_t index : indices) ++start[shard_of(train_, index) + 1];
    for (int64_t s = 0; s < nshards; ++s) start[s + 1] += start[s];
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t index : indices) by_shard[fill[shard_of(train_, index)]++] = index;
    for (int64_t s = 0; s < nshards; ++s) order[s] = s;
    fisher_yates(order, rng);
    size_t out = 0;
    for (int64_t s : order) {
      int64_t* seg = by_shard.data() + start[s];
      for (int64_t i = start[s + 1] - start[s] - 1; i > 0; --i)
        std::swap(seg[i], seg[rng.below(static_cast<uint64_t>(i + 1))]);
      for (int64_t i = 0; i < start[s + 1] - start[s]; ++i) indices[out++] = seg[i];
    }
  }

 private:
  static int64_t shard_of(const ShardList& list, int64_t index) {
    DTNN_ASSERT(index >= 0 && index < list.total);
    const auto it = std::upper_bound(list.shards.begin(), list.shards.end(), index,
                                     [](int64_t v, const Shard& s) { return v < s.first; });
    return static_cast<int64_t>(it - list.shards.begin()) - 1;
  }

  // The decoded shard s of a pool, from the cache or decoded into the least recently used slot.
  const Decoded& decoded(Pool pool, int64_t s) const {
    ++clock_;
    for (Decoded& d : cache_)
      if (d.shard == s && d.pool == pool) {
        d.last_use = clock_;
        return d;
      }
    Decoded& d = cache_[0].last_use <= cache_[1].last_use ? cache_[0] : cache_[1];
    d.shard = -1;  // stays invalid if decoding throws
    const ShardList& list = pool == Pool::train ? train_ : test_;
    Shard shard = list.shards[s];
    std::vector<io::NpyArray> arrays = io::read_npz(shard.path);
    // read_npz refuses two entries of one name; the shapes checked are those of the arrays read below.
    io::NpyArray *x = nullptr, *y = nullptr;
    for (io::NpyArray& a : arrays) {
      if (a.name == "x") x = &a;
      if (a.name == "y") y = &a;
    }
    io::NpyInfo x_info, y_info;
    if (x) x_info = io::NpyInfo{x->name, x->dtype, x->shape};
    if (y) y_info = io::NpyInfo{y->name, y->dtype, y->shape};
    check_shard(shard.path, x ? &x_info : nullptr, y ? &y_info : nullptr, out_h_, out_w_, &shard);
    switch (y->dtype) {
      case io::NpyDType::u8: read_labels<uint8_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::i8: read_labels<int8_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::i16: read_labels<int16_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::u16: read_labels<uint16_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::i32: read_labels<int32_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::u32: read_labels<uint32_t>(*y, shard.path, d.classes); break;
      case io::NpyDType::u64: read_labels<uint64_t>(*y, shard.path, d.classes); break;
      default: read_labels<int64_t>(*y, shard.path, d.classes); break;
    }
    d.x = std::move(x->bytes);
    d.pool = pool;
    d.shard = s;
    d.last_use = clock_;
    return d;
  }

  int64_t out_h_, out_w_;
  ShardList train_, test_;
  DatasetShape shape_;
  mutable std::mutex mu_;  // guards the cache: load_batch may run on a loader thread
  mutable Decoded cache_[2];
  mutable uint64_t clock_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> open_imagenet(const std::string& train_dir, const std::string& test_dir, int64_t out_h,
                                       int64_t out_w) {
  return std::make_unique<ImageNet>(train_dir, test_dir.empty() ? train_dir : test_dir, out_h, out_w);
}

}  // namespace dtnn
