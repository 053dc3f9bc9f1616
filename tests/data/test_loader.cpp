// BatchLoader: batches equal to loading synchronously, errors re-thrown on the training thread, and
// training with the loader thread bit-identical to training without it; evaluation is never augmented.
#include <catch2/catch.hpp>
#include <cstring>

#include "data/data_helpers.h"
#include "data/loader.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/run.h"
#include "train/trainer.h"

using namespace dtnn;

namespace {

// Synthetic data that fails on sample 7, as a corrupt shard would.
class Failing final : public Dataset {
 public:
  Failing() : inner_(make_synthetic(dataset_shape("cifar10"), 3)) {}
  const DatasetShape& shape() const override { return inner_->shape(); }
  int64_t count(Pool pool) const override { return inner_->count(pool); }
  void load_batch(Pool pool, const int64_t* indices, int64_t count, Layout layout, float* x,
                  float* y) const override {
    for (int64_t i = 0; i < count; ++i)
      if (indices[i] == 7) fail("shard_0007.npz: CRC mismatch in sample 7");
    inner_->load_batch(pool, indices, count, layout, x, y);
  }

 private:
  std::unique_ptr<Dataset> inner_;
};

}  // namespace

TEST_CASE("loader: batches equal load_batch + augment_batch, with and without the thread", "[data]") {
  const auto data = make_synthetic(dataset_shape("cifar10"), 5);
  const DatasetShape& s = data->shape();
  Augmentation aug;
  aug.flip = aug.crop = true;
  aug.seed = 9;
  const int64_t max_batch = 6, size = s.h * s.w * s.c;
  struct Request {
    Pool pool;
    std::vector<int64_t> indices;
    bool augment;
  };
  const std::vector<Request> requests = {{Pool::train, {4, 8, 15, 16, 23, 42}, true},
                                         {Pool::train, {4, 8, 15, 16, 23, 42}, false},
                                         {Pool::test, {1, 2, 3}, false},
                                         {Pool::train, {}, true},
                                         {Pool::train, {99, 100}, true},
                                         {Pool::test, {7, 6, 5, 4, 3, 2}, false}};
  for (Layout layout : {Layout::nhwc, Layout::nchw})
    for (bool threaded : {true, false}) {
      BatchLoader loader(*data, layout, max_batch, aug, threaded);
      loader.submit(requests[0].pool, requests[0].indices.data(), 6, true, 2);
      for (size_t k = 0; k < requests.size(); ++k) {
        const Batch b = loader.wait();
        if (k + 1 < requests.size()) {
          const Request& next = requests[k + 1];
          loader.submit(next.pool, next.indices.data(), static_cast<int64_t>(next.indices.size()), next.augment, 2);
        }
        const Request& r = requests[k];
        const int64_t n = static_cast<int64_t>(r.indices.size());
        REQUIRE(b.count == n);
        std::vector<float> x(max_batch * size), y(max_batch * s.classes);
        data->load_batch(r.pool, r.indices.data(), n, layout, x.data(), y.data());
        if (r.augment) augment_batch(aug, 2, r.indices.data(), n, layout, s.h, s.w, s.c, x.data());
        CHECK(std::memcmp(b.x, x.data(), sizeof(float) * n * size) == 0);
        CHECK(std::memcmp(b.y, y.data(), sizeof(float) * n * s.classes) == 0);
      }
    }
  // Augmentation really happened on request 0 and not on request 1 (same samples).
  BatchLoader loader(*data, Layout::nhwc, max_batch, aug, true);
  std::vector<float> a(max_batch * size);
  loader.submit(Pool::train, requests[0].indices.data(), 6, true, 2);
  std::memcpy(a.data(), loader.wait().x, a.size() * sizeof(float));
  loader.submit(Pool::train, requests[0].indices.data(), 6, false, 2);
  CHECK(std::memcmp(loader.wait().x, a.data(), a.size() * sizeof(float)) != 0);
}

TEST_CASE("loader: an exception while loading is re-thrown by wait() with its message", "[data]") {
  const Failing data;
  for (bool threaded : {true, false}) {
    BatchLoader loader(data, Layout::nhwc, 4, Augmentation{}, threaded);
    const int64_t good[2] = {1, 2}, bad[3] = {5, 6, 7};
    loader.submit(Pool::train, good, 2, false, 1);
    CHECK(loader.wait().count == 2);
    loader.submit(Pool::train, bad, 3, false, 1);
    CHECK_THROWS_WITH(loader.wait(), "shard_0007.npz: CRC mismatch in sample 7");
    loader.submit(Pool::train, good, 2, false, 1);  // still usable after an error
    CHECK(loader.wait().count == 2);
    loader.submit(Pool::train, bad, 3, false, 1);
    loader.reset();  // an error nobody waited for is dropped
    loader.submit(Pool::train, good, 1, false, 1);
    CHECK(loader.wait().count == 1);
    loader.submit(Pool::train, good, 2, false, 1);  // destroyed with a batch in flight: joins cleanly
  }
}

namespace {

struct Run {
  std::vector<EpochRecord> epochs;
  std::vector<float> params;
  PassResult eval;
};

// run_training's own stages (train/run.h) on `data`.
Run train(TrainOptions o, const Dataset& data, int epochs) {
  o.model_name = "simplecnn";
  auto comm = make_local_communicator();
  auto model = build_training_model(o, *comm);
  TrainerSetup setup = build_trainer(o, *model, data, *comm);
  Trainer& trainer = *setup.trainer;
  const Splits& splits = setup.splits;
  Run r;
  for (int e = 1; e <= epochs; ++e) r.epochs.push_back(trainer.run_epoch(e, epochs, splits));
  r.params.assign(model->param_slab(), model->param_slab() + model->slab_size());
  std::vector<int64_t> indices(200);
  for (int64_t i = 0; i < 200; ++i) indices[i] = 3 * i;
  r.eval = trainer.evaluate(Pool::train, indices, "");
  return r;
}

}  // namespace

TEST_CASE("training: the loader thread gives bit-identical results, evaluation is never augmented", "[data][train]") {
  const auto data = make_synthetic(dataset_shape("mnist"), 0);
  TrainOptions o;
  o.batch_size = 16;
  o.steps_per_epoch = 4;
  o.validation_split = 0.002;  // 120 validation samples from the training pool
  o.flip_images = o.crop_images = true;
  for (const char* format : {"NHWC", "NCHW"}) {
    o.tensor_format = format;
    o.prefetch = true;
    const Run threaded = train(o, *data, 2);
    o.prefetch = false;
    const Run sync = train(o, *data, 2);
    CHECK(threaded.params == sync.params);
    for (int e = 0; e < 2; ++e) {
      CHECK(threaded.epochs[e].train.values == sync.epochs[e].train.values);
      REQUIRE(threaded.epochs[e].val);
      CHECK(threaded.epochs[e].val->values == sync.epochs[e].val->values);
    }
    // Augmentation changes training, so the comparison above covers it.
    TrainOptions plain = o;
    plain.flip_images = plain.crop_images = false;
    const Run unaugmented = train(plain, *data, 2);
    CHECK(unaugmented.params != sync.params);
  }

  // Evaluation of the same weights with and without augmentation options: identical, even on the
  // training pool (validation from the train pool is never augmented).
  auto model = create_model("simplecnn");
  BuildContext ctx;
  ctx.max_batch = 32;
  model->build(ctx, 0, Trainer::reduce_tail_floats(o));
  auto comm = make_local_communicator();
  auto opt = make_optimizer(o.optimizer, model->slab_size());
  TrainOptions augmented;
  augmented.batch_size = 32;
  augmented.flip_images = augmented.crop_images = true;
  augmented.flip_images_prob = augmented.crop_images_prob = 1.0;
  TrainOptions none = augmented;
  none.flip_images = none.crop_images = false;
  Trainer a(*model, *data, *comm, *opt, augmented), b(*model, *data, *comm, *opt, none);
  std::vector<int64_t> indices(100);
  for (int64_t i = 0; i < 100; ++i) indices[i] = 7 * i;
  const PassResult ra = a.evaluate(Pool::train, indices, ""), rb = b.evaluate(Pool::train, indices, "");
  CHECK(ra.values == rb.values);
  CHECK(ra.samples == 100);
}
