// --dynamic_blocks on one process (train/trainer.h): one rank claims every position of the epoch's block
// order in turn, so it trains the static mode's samples in the static order; the batches only differ where
// a batch would span two blocks (dynamic blocks never do). Compared bit for bit against the static mode
// (--dynamic_blocks=False, itself checked against plain training in test_model_averaging.cpp), and shown to
// differ when blocks are not whole batches (the comparison can fail). The options are refused where they
// mean nothing. Two ranks: tests/parallel/test_mpi_dynblocks.cpp.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "cli_helpers.h"
#include "train/averaging_helpers.h"
#include "core/error.h"
#include "parallel/communicator.h"
#include "train/option_table.h"
#include "train/run.h"
#include "train/trainer.h"

using namespace dtnn;

using test::same_bits;
using test::train_one_process;

TEST_CASE("dynamic blocks: on one rank they are the static blocks, bit for bit, when blocks are whole batches",
          "[train][averaging]") {
  TrainOptions base;
  base.model_name = "resnet20_cifar10";  // BatchNormalization statistics too
  base.dataset_name = "cifar10";
  base.batch_size = 8;
  base.optimizer.name = "sgd";
  base.optimizer.momentum = 0.9;
  base.seed = 11;
  base.threads = 1;
  struct Shape {
    const char* name;
    int64_t train_count, blocks_per_worker, batches_per_block;
  };
  for (const char* mode : {"asynchronous", "partially_asynchronous"})
    for (const Shape s : {Shape{"one block of 29 (a short last batch)", 29, 1, 0},
                          Shape{"3 blocks of 16 (2 batches each)", 48, 3, 0},
                          Shape{"one block of 29, 5 batches (cycling through it)", 29, 1, 5}}) {
      INFO(mode << ", " << s.name);
      DatasetShape shape = dataset_shape("cifar10");
      shape.train_count = s.train_count;
      auto data = make_synthetic(shape, 4);
      TrainOptions o = base;
      o.model_averaging = mode;
      o.blocks_per_worker = s.blocks_per_worker;
      o.num_batches_per_worker = s.batches_per_block * s.blocks_per_worker;  // static: per worker
      const test::AveragingRun fixed = train_one_process(o, *data, 2);
      o.dynamic_blocks = true;
      o.num_batches_per_worker = s.batches_per_block;  // dynamic: per block
      const test::AveragingRun dynamic = train_one_process(o, *data, 2);
      CHECK(same_bits(dynamic.params, fixed.params));
      CHECK(same_bits(dynamic.state, fixed.state));
      CHECK(dynamic.losses == fixed.losses);
      CHECK(dynamic.samples == fixed.samples);
      // Every block of both epochs, once each, in the epoch order.
      REQUIRE(static_cast<int64_t>(dynamic.claimed.size()) == 2 * s.blocks_per_worker);
      std::set<std::pair<int, int64_t>> distinct(dynamic.claimed.begin(), dynamic.claimed.end());
      CHECK(distinct.size() == dynamic.claimed.size());
      for (size_t i = 0; i < dynamic.claimed.size(); ++i)
        CHECK(dynamic.claimed[i].first == 1 + static_cast<int>(i / s.blocks_per_worker));
      REQUIRE(dynamic.totals);
      CHECK(dynamic.totals->blocks_per_rank == std::vector<int64_t>{2 * s.blocks_per_worker});
      CHECK(fixed.totals->blocks_per_rank.empty());
      // partially asynchronous: one merge per block (a no-op on one rank, but counted).
      if (std::string(mode) == "partially_asynchronous")
        CHECK(dynamic.totals->averages == 2 * s.blocks_per_worker);
    }
  // Blocks of 10, 10 and 9 in batches of 8: the static walk's batches span blocks, the dynamic ones do not.
  DatasetShape shape = dataset_shape("cifar10");
  shape.train_count = 29;
  auto data = make_synthetic(shape, 4);
  TrainOptions o = base;
  o.model_averaging = "asynchronous";
  o.blocks_per_worker = 3;
  const test::AveragingRun fixed = train_one_process(o, *data, 1);
  o.dynamic_blocks = true;
  const test::AveragingRun dynamic = train_one_process(o, *data, 1);
  CHECK(dynamic.samples == fixed.samples);
  CHECK_FALSE(same_bits(dynamic.params, fixed.params));
}

TEST_CASE("dynamic blocks: refused where they mean nothing", "[train][averaging]") {
  TrainOptions o;
  o.dynamic_blocks = true;
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--dynamic_blocks applies to --model_averaging=asynchronous"));
  o.model_averaging = "synchronous";
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--dynamic_blocks applies to"));
  o.model_averaging = "partially_asynchronous";
  CHECK_NOTHROW(validate_options(o));
  o.average_every_steps = 2;
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("merges after each claimed block"));
  o.average_every_steps = 0;
  o.steps_per_epoch = 3;
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--steps_per_epoch does not apply"));
  const test::Command cli =
      test::run_dtnn("train --use_synthetic_data=True --model_averaging=synchronous --dynamic_blocks=True");
  CHECK(cli.status != 0);
  CHECK(test::one_line_error(cli));
  CHECK(cli.err.find("synchronous averages need equal shares") != std::string::npos);
}
