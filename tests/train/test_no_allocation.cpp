// dtnn's rule that nothing allocates in the batch loop (buffers are sized when the model is built),
// checked with the test binary's counting operator new (support/alloc_count.h). Two trainers differ only in
// --steps_per_epoch (2 and 6); after a first epoch each (lazily built caches, thread pools), their second
// epochs must make the same number of allocations: what an epoch allocates once (its shuffled indices, its
// record) is the same for both, so any difference is allocation per training step. oneDNN's allocations
// inside its own primitive executions are counted apart and only reported: no oneDNN API avoids them.
#include <catch2/catch.hpp>
#include <string>

#include "conv/cpu/cpu_algorithms.h"
#include "data/dataset.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "support/alloc_count.h"
#include "train/run.h"
#include "train/trainer.h"
#include "skip.h"

using namespace dtnn;

namespace {

struct Counts {
  int64_t ours = 0, onednn = 0;  // during epoch 2
};

Counts second_epoch_allocations(TrainOptions o, const Dataset& data, int64_t steps) {
  o.steps_per_epoch = steps;
  auto comm = make_local_communicator();
  auto model = build_training_model(o, *comm);
  TrainerSetup setup = build_trainer(o, *model, data, *comm);
  setup.trainer->run_epoch(1, 2, setup.splits);
  const int64_t before = test::allocations(), library_before = test::library_allocations();
  const EpochRecord record = setup.trainer->run_epoch(2, 2, setup.splits);
  const Counts counts{test::allocations() - before, test::library_allocations() - library_before};
  REQUIRE(record.train.samples == steps * o.batch_size);
  return counts;
}

void check_steps_allocate_nothing(const TrainOptions& o, const Dataset& data) {
  const Counts two = second_epoch_allocations(o, data, 2), six = second_epoch_allocations(o, data, 6);
  INFO(o.model_name << ", --conv_algo=" << o.conv_algo << ": epoch of 2 steps: " << two.ours
                    << " allocations; of 6 steps: " << six.ours << " (inside oneDNN's executions: " << two.onednn
                    << " and " << six.onednn << ")");
  CHECK(six.ours == two.ours);
}

}  // namespace

TEST_CASE("no allocation in the batch loop: simplecnn, Adam, on digits", "[train]") {
  auto data = open_mnist(std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k", "");
  TrainOptions o;
  o.model_name = "simplecnn";
  o.optimizer.name = "adam";
  o.batch_size = 32;
  check_steps_allocate_nothing(o, *data);
}

TEST_CASE("no allocation in the batch loop: resnet20 (batch normalization, residual adds), SGD with momentum, "
          "every CPU convolution algorithm",
          "[train]") {
  auto data = make_synthetic(dataset_shape("cifar10"), 0);
  TrainOptions o;
  o.model_name = "resnet20_cifar10";
  o.optimizer.name = "sgd";
  o.batch_size = 8;
  // auto: each layer's measured choice; the others forced (layers an algorithm cannot take fall back)
  for (const char* algo : {"auto", "cpu.convgemm", "cpu.im2row_gemm", "cpu.winograd_f4", "cpu.im2col_gemm",
                           "cpu.onednn", "cpu.direct"}) {
    o.conv_algo = algo;
    check_steps_allocate_nothing(o, *data);
  }
}

TEST_CASE("no allocation in the batch loop: --dtype=bfloat16 (bf16 convolutions and FC layers)", "[train][bf16]") {
  if (const std::string why = cpu_bf16_support(); !why.empty()) DTNN_SKIP(why);
  auto data = make_synthetic(dataset_shape("cifar10"), 0);
  TrainOptions o;
  o.model_name = "resnet20_cifar10";
  o.optimizer.name = "sgd";
  o.batch_size = 8;
  o.dtype = "bfloat16";
  check_steps_allocate_nothing(o, *data);
  auto digits = open_mnist(std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k", "");
  o.model_name = "simplecnn";
  o.optimizer.name = "adam";
  check_steps_allocate_nothing(o, *digits);
}
