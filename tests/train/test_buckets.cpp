// plan_buckets (parallel/gradient_reducer.h) on hand-made slab layouts, each expected bucket worked out by hand:
// reverse layer order, layers never split, DDP's 1 MiB first bucket, the tail riding with the first bucket,
// layers without parameters skipped; and the optimizer's ranged update against its whole-slab step.
#include <catch2/catch.hpp>
#include <cstring>

#include "layers/layers.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/gradient_reducer.h"

namespace {

using dtnn::GradientBucket;

std::vector<std::tuple<int64_t, int64_t, size_t>> as_tuples(const std::vector<GradientBucket>& b) {
  std::vector<std::tuple<int64_t, int64_t, size_t>> out;
  for (const GradientBucket& x : b) out.emplace_back(x.begin, x.end, x.ready_after);
  return out;
}

using T = std::vector<std::tuple<int64_t, int64_t, size_t>>;

}  // namespace

TEST_CASE("buckets: reverse layer order, caps, first bucket, tail", "[train][buckets]") {
  // Layers: 0 Input (none), 1: 100 floats, 2: none (a ReLU), 3: 200, 4: 700; 3 tail floats.
  const std::vector<int64_t> begins = {0, 0, 100, 100, 300, 1000};
  // 0 MiB: one bucket per layer with parameters (PyDTNN); the tail joins the top layer's bucket.
  CHECK(as_tuples(dtnn::plan_buckets(begins, 3, 0.0)) == T{{300, 1003, 4}, {100, 300, 3}, {0, 100, 1}});
  // Caps of 250 floats (first bucket min(1 MiB, 250)): layer 4 alone (700 >= 250); layers 3 and 1 together.
  const double mb250 = 250.0 * 4 / (1 << 20);
  CHECK(as_tuples(dtnn::plan_buckets(begins, 3, mb250)) == T{{300, 1003, 4}, {0, 300, 1}});
  // 25 MiB: everything in one bucket, started after layer 1.
  CHECK(as_tuples(dtnn::plan_buckets(begins, 3, 25.0)) == T{{0, 1003, 1}});
  // No tail.
  CHECK(as_tuples(dtnn::plan_buckets(begins, 0, 0.0)) == T{{300, 1000, 4}, {100, 300, 3}, {0, 100, 1}});
  // tail_alone (--allreduce_dtype=bfloat16: gradients in bf16, loss sums in float32): the tail first, by itself.
  CHECK(as_tuples(dtnn::plan_buckets(begins, 3, 0.0, 1, true)) ==
        T{{1000, 1003, 5}, {300, 1000, 4}, {100, 300, 3}, {0, 100, 1}});
  CHECK(as_tuples(dtnn::plan_buckets(begins, 3, 25.0, 1, true)) == T{{1000, 1003, 5}, {0, 1000, 1}});
}

TEST_CASE("buckets: DDP's small first bucket closes at 1 MiB, the rest at the cap", "[train][buckets]") {
  // Layers of 200,000, 200,000 and 300,000 floats; 1 MiB = 262,144 floats.
  const std::vector<int64_t> begins = {0, 0, 200000, 400000, 700000};
  CHECK(as_tuples(dtnn::plan_buckets(begins, 2, 25.0)) == T{{400000, 700002, 3}, {0, 400000, 1}});
  // A cap below 1 MiB is also the first bucket's cap: 0.5 MiB = 131,072 floats, every layer alone.
  CHECK(as_tuples(dtnn::plan_buckets(begins, 2, 0.5)) == T{{400000, 700002, 3}, {200000, 400000, 2}, {0, 200000, 1}});
}

TEST_CASE("buckets: the cap is at most the gradient / min_buckets (the tail not counted)", "[train][buckets]") {
  // Layers 1, 3, 4 of 100, 200, 700 floats: 1000, a quarter 250, so 25 MiB with 4 is the 250-float cap above.
  const std::vector<int64_t> small = {0, 0, 100, 100, 300, 1000};
  CHECK(as_tuples(dtnn::plan_buckets(small, 3, 25.0, 4)) == T{{300, 1003, 4}, {0, 300, 1}});
  // 1: the cap alone (DDP's rule): one bucket. 7: ceil(1000 / 7) = 143 floats, every layer alone.
  CHECK(as_tuples(dtnn::plan_buckets(small, 3, 25.0, 1)) == T{{0, 1003, 1}});
  CHECK(as_tuples(dtnn::plan_buckets(small, 3, 25.0, 7)) == T{{300, 1003, 4}, {100, 300, 3}, {0, 100, 1}});
  // A smaller cap than the share wins: 250 floats against 1000 / 2.
  CHECK(as_tuples(dtnn::plan_buckets(small, 3, 250.0 * 4 / (1 << 20), 2)) == T{{300, 1003, 4}, {0, 300, 1}});
  // 200,000 + 200,000 + 300,000 floats, a quarter 175,000 (below DDP's first 262,144): every layer alone,
  // never split (3 buckets, not 4).
  const std::vector<int64_t> big = {0, 0, 200000, 400000, 700000};
  CHECK(as_tuples(dtnn::plan_buckets(big, 2, 25.0, 4)) ==
        T{{400000, 700002, 3}, {200000, 400000, 2}, {0, 200000, 1}});
  // A slab not starting at 0 counts from its first float: 300 floats, a third 100.
  CHECK(as_tuples(dtnn::plan_buckets({50, 50, 150, 350}, 0, 25.0, 3)) == T{{150, 350, 2}, {50, 150, 1}});
}

TEST_CASE("buckets: a model without parameters, bad caps", "[train][buckets]") {
  CHECK(as_tuples(dtnn::plan_buckets({0, 0, 0}, 3, 25.0)) == T{{0, 3, 2}});
  CHECK(as_tuples(dtnn::plan_buckets({0, 0, 0}, 3, 25.0, 4)) == T{{0, 3, 2}});
  CHECK_THROWS(dtnn::plan_buckets({0, 0, 10}, 3, -1.0));
  CHECK_THROWS(dtnn::plan_buckets({0, 0, 10}, 3, 25.0, 0));
}

// The model of tests/parallel/test_mpi_gpu.cpp (built here on the CPU: the slab layout is the same), whose
// bucket counts (5, 4, 1) that GPU test expects. Sizes by hand: each parameter tensor starts 64-byte aligned
// in the slab, so it takes a multiple of 16 floats.
TEST_CASE("buckets: the GPU bucket test's model, counted by hand", "[train][buckets]") {
  dtnn::Model m("gpu_bucket_cnn");
  m.add(dtnn::make_input(28, 28, 1));
  dtnn::Conv2DSpec conv;
  conv.nfilters = 8;
  conv.padding = 1;
  m.add(dtnn::make_conv2d(conv));  // 72 -> 80, bias 8 -> 16: 96
  m.add(dtnn::make_batchnorm(), "relu");  // gamma, beta 8 -> 16 each: 32
  dtnn::Pool2DSpec pool;
  pool.stride = 2;
  m.add(dtnn::make_max_pool2d(pool));
  m.add(dtnn::make_conv2d(conv), "relu");  // 576, bias 8 -> 16: 592
  m.add(dtnn::make_flatten());
  m.add(dtnn::make_fc(32), "relu");  // 1568*32 = 50,176, bias 32: 50,208
  m.add(dtnn::make_fc(10), "softmax");  // 320, bias 10 -> 16: 336
  dtnn::BuildContext ctx;
  ctx.max_batch = 16;
  const int64_t tail = 4;  // loss, one metric, count (Trainer::reduce_tail_floats)
  m.build(ctx, 3, tail);
  std::vector<int64_t> begins(m.num_layers() + 1);
  for (size_t i = 0; i <= m.num_layers(); ++i) begins[i] = m.param_begin(i);
  const auto sizes = [&](double mb, int64_t min_buckets = 1) {
    std::vector<int64_t> out;
    for (const GradientBucket& b : dtnn::plan_buckets(begins, tail, mb, min_buckets)) out.push_back(b.end - b.begin);
    return out;
  };
  // Per layer; 1 KiB (256 floats: BN's 32 stay open until conv1 closes them); 25 MiB (the first at most
  // 1 MiB: everything). The tail rides with the first bucket.
  CHECK(sizes(0.0) == std::vector<int64_t>{340, 50208, 592, 32, 96});
  CHECK(sizes(1.0 / 1024) == std::vector<int64_t>{340, 50208, 592, 128});
  CHECK(sizes(25.0) == std::vector<int64_t>{51268});
  // The default (25 MiB, at most a quarter of 51,264 floats: 12,816): fc10 + fc32 close the first, the rest
  // (592 + 32 + 96) the second.
  CHECK(sizes(25.0, 4) == std::vector<int64_t>{50548, 720});
}

TEST_CASE("optimizer: a step applied in ranges equals the whole step, bit for bit", "[optim][buckets]") {
  for (const char* name : {"sgd", "rmsprop", "adam", "nadam"}) {
    INFO(name);
    dtnn::OptimizerOptions o;
    o.name = name;
    o.decay = 1e-3;
    o.nesterov = true;
    const int64_t n = 1000;
    std::vector<float> w1(n), w2, g(n);
    for (int64_t i = 0; i < n; ++i) {
      w1[i] = 0.01f * static_cast<float>(i % 37) - 0.2f;
      g[i] = 0.003f * static_cast<float>(i % 11) - 0.01f;
    }
    w2 = w1;
    auto whole = dtnn::make_optimizer(o, n), ranged = dtnn::make_optimizer(o, n);
    for (int step = 0; step < 3; ++step) {
      whole->step(w1.data(), g.data());
      ranged->begin_step();
      for (auto [b, e] : {std::pair<int64_t, int64_t>{700, 1000}, {13, 700}, {0, 13}})
        ranged->update_range(w2.data(), g.data(), b, e);
    }
    CHECK(ranged->steps() == 3);
    CHECK(std::memcmp(w1.data(), w2.data(), n * sizeof(float)) == 0);
  }
}
