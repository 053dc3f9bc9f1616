// Model averaging on one process and dislib's data per worker (parallel/model_averager.h,
// data/worker_blocks.h): every averaging mode equals plain training bit for bit on one rank; the blocks of
// the ranks are disjoint, cover the training list, follow from the seed and change per epoch when asked;
// the options that only model averaging reads are refused without it, unimplemented modes are refused.
// The 2-rank averages themselves: tests/parallel/test_mpi_averaging.cpp.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <set>

#include "cli_helpers.h"
#include "train/averaging_helpers.h"
#include "core/error.h"
#include "data/worker_blocks.h"
#include "parallel/communicator.h"
#include "train/option_table.h"
#include "train/run.h"
#include "train/trainer.h"

using namespace dtnn;

using test::same_bits;
using test::train_one_process;

TEST_CASE("model averaging: on one rank every mode is plain training, bit for bit", "[train][averaging]") {
  // resnet20 has BatchNormalization statistics; 29 synthetic samples in batches of 8: a short last batch.
  DatasetShape shape = dataset_shape("cifar10");
  shape.train_count = 29;
  auto data = make_synthetic(shape, 4);
  TrainOptions plain;
  plain.model_name = "resnet20_cifar10";
  plain.dataset_name = "cifar10";
  plain.batch_size = 8;
  plain.optimizer.name = "sgd";
  plain.optimizer.momentum = 0.9;
  plain.seed = 11;
  plain.threads = 1;
  const test::AveragingRun reference = train_one_process(plain, *data, 2);
  REQUIRE(reference.samples == std::vector<int64_t>{29, 29});
  REQUIRE(!reference.state.empty());
  struct Mode {
    const char* mode;
    const char* name;
    int64_t every_epochs, every_steps;
    bool optimizer_state, bn;
    int64_t averages;  // the schedule's count over 2 epochs of 4 steps
  };
  for (const Mode m : {Mode{"synchronous", "every epoch (dislib's n_epocs_sync=1)", 1, 0, false, true, 2},
                       Mode{"synchronous", "every 2 epochs, optimizer state averaged", 2, 0, true, true, 1},
                       Mode{"synchronous", "every 3 steps (local SGD), BN statistics local", 1, 3, false, false, 3},
                       Mode{"asynchronous", "every epoch", 1, 0, false, true, 2},
                       Mode{"asynchronous", "every 2 epochs, BN statistics local", 2, 0, false, false, 1},
                       Mode{"partially_asynchronous", "every step", 1, 0, false, true, 8},
                       Mode{"partially_asynchronous", "every 3 steps (the rest at the last epoch's end)", 1, 3,
                            false, true, 3}}) {
    INFO(m.mode << ", " << m.name);
    TrainOptions o = plain;
    o.model_averaging = m.mode;
    o.average_every_epochs = m.every_epochs;
    o.average_every_steps = m.every_steps;
    o.average_optimizer_state = m.optimizer_state;
    o.average_bn_statistics = m.bn;
    const test::AveragingRun r = train_one_process(o, *data, 2);
    CHECK(same_bits(r.params, reference.params));
    CHECK(same_bits(r.state, reference.state));
    CHECK(r.losses == reference.losses);
    CHECK(r.samples == reference.samples);
    REQUIRE(r.totals);
    CHECK(r.totals->averages == m.averages);  // 8 steps by 3: after steps 3 and 6, and the final one at the end
    CHECK(r.totals->bytes == 0.0);            // one rank sends nothing
    // The asynchronous modes count each rank's merges (one rank here).
    CHECK(r.totals->merges_per_rank == (std::string(m.mode) == "synchronous" ? std::vector<int64_t>{}
                                                                            : std::vector<int64_t>{m.averages}));
  }
  // dislib's num_batches_per_worker is --steps_per_epoch on one rank (batches cycle through the samples).
  TrainOptions fixed = plain;
  fixed.steps_per_epoch = 5;
  TrainOptions cycled = plain;
  cycled.model_averaging = "synchronous";
  cycled.num_batches_per_worker = 5;
  const test::AveragingRun a = train_one_process(fixed, *data, 1), b = train_one_process(cycled, *data, 1);
  CHECK(same_bits(a.params, b.params));
  CHECK(b.samples[0] == 40);
}

namespace {

// Every rank's samples of one epoch.
std::vector<std::vector<int64_t>> assignment(const Dataset& data, const std::vector<int64_t>& train, int ranks,
                                             const BlockOptions& opt, uint64_t epoch) {
  std::vector<std::vector<int64_t>> out;
  WorkerBlocks blocks(static_cast<int64_t>(train.size()), ranks, opt);
  for (int r = 0; r < ranks; ++r) {
    blocks.assign(data, train, r, Rng(7).fork(epoch), Rng(8).fork(epoch));
    out.push_back(blocks.samples());
  }
  return out;
}

std::set<int64_t> as_set(const std::vector<int64_t>& v) { return std::set<int64_t>(v.begin(), v.end()); }

}  // namespace

TEST_CASE("worker blocks: disjoint, covering, deterministic, reshuffled per epoch when asked", "[train][averaging]") {
  DatasetShape shape = dataset_shape("mnist");
  shape.train_count = 103;
  auto data = make_synthetic(shape, 0);
  std::vector<int64_t> train;  // a training list that is not 0..n-1 (as after a validation split)
  for (int64_t i = 0; i < 103; ++i)
    if (i % 10 != 3) train.push_back(i);
  for (const BlockOptions opt : {BlockOptions{1, false, false}, BlockOptions{3, true, false}, BlockOptions{2, true, true},
                                 BlockOptions{4, false, true}}) {
    INFO("blocks per worker " << opt.blocks_per_worker << ", shuffle_blocks " << opt.shuffle_blocks
                              << ", shuffle_block_data " << opt.shuffle_block_data);
    for (int ranks : {1, 2, 3}) {
      INFO(ranks << " ranks");
      const auto e1 = assignment(*data, train, ranks, opt, 1);
      std::vector<int64_t> all;
      size_t largest = 0;
      for (const auto& mine : e1) {
        all.insert(all.end(), mine.begin(), mine.end());
        largest = std::max(largest, mine.size());
      }
      std::vector<int64_t> sorted_all = all, sorted_train = train;
      std::sort(sorted_all.begin(), sorted_all.end());
      std::sort(sorted_train.begin(), sorted_train.end());
      CHECK(sorted_all == sorted_train);  // every sample exactly once: disjoint and covering
      for (const auto& mine : e1)  // block sizes differ by at most one: workers by at most blocks_per_worker
        CHECK(static_cast<int64_t>(largest - mine.size()) <= opt.blocks_per_worker);
      CHECK(assignment(*data, train, ranks, opt, 1) == e1);  // deterministic
      const auto e2 = assignment(*data, train, ranks, opt, 2);
      // Other epochs: other orders exactly when something is shuffled (a permutation of 3 blocks may come
      // back in one epoch, not in all of 2..5).
      const bool shuffled = opt.shuffle_block_data || (opt.shuffle_blocks && ranks * opt.blocks_per_worker > 1);
      bool differs = false;
      for (uint64_t e = 2; e <= 5; ++e) differs |= assignment(*data, train, ranks, opt, e) != e1;
      CHECK(differs == shuffled);
      if (!opt.shuffle_blocks && !opt.shuffle_block_data) {  // worker r: the r-th contiguous stretch, in order
        int64_t begin = 0;
        for (const auto& mine : e1) {
          CHECK(std::equal(mine.begin(), mine.end(), train.begin() + begin));
          begin += static_cast<int64_t>(mine.size());
        }
      }
      if (opt.shuffle_block_data && !opt.shuffle_blocks)  // same blocks per worker, their insides reordered
        for (size_t r = 0; r < e1.size(); ++r) CHECK(as_set(e1[r]) == as_set(e2[r]));
    }
  }
  // One rank, one block, shuffle_block_data: the dataset's own epoch shuffle (plain training's order).
  std::vector<int64_t> expected = train;
  Rng rng = Rng(8).fork(5);
  data->shuffle(expected, rng);
  CHECK(assignment(*data, train, 1, BlockOptions{1, true, true}, 5)[0] == expected);
  // shuffle_blocks moves blocks between workers across epochs (6 blocks: some epoch of 2..5 must differ).
  bool moved = false;
  const auto first = as_set(assignment(*data, train, 2, BlockOptions{3, true, false}, 1)[0]);
  for (uint64_t e = 2; e <= 5; ++e) moved |= as_set(assignment(*data, train, 2, BlockOptions{3, true, false}, e)[0]) != first;
  CHECK(moved);
  CHECK_THROWS_WITH(WorkerBlocks(5, 2, BlockOptions{3, true, true}), Catch::Contains("every block needs a sample"));
}

TEST_CASE("model averaging options: refused where they mean nothing", "[train][averaging]") {
  TrainOptions o;
  o.shuffle_blocks = false;
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--shuffle_blocks=False applies only with --model_averaging"));
  o = TrainOptions{};
  o.model_averaging = "asynchronous";
  CHECK_NOTHROW(validate_options(o));
  o.average_every_steps = 4;  // asynchronous merges by epochs
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--average_every_steps applies to"));
  o = TrainOptions{};
  o.model_averaging = "partially_asynchronous";
  o.average_every_epochs = 2;  // partially asynchronous merges by steps
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--average_every_epochs applies to"));
  o.average_every_epochs = 1;
  o.average_optimizer_state = true;  // the asynchronous modes keep the optimizer state local
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("--average_optimizer_state applies to"));
  o = TrainOptions{};
  o.model_averaging = "synchronous";
  o.sync_batchnorm = true;
  CHECK_THROWS_WITH(validate_options(o), Catch::Contains("cannot be combined with --sync_batchnorm"));
  CHECK(parse_straggler("1:250").rank == 1);
  CHECK(parse_straggler("1:250").ms == 250);
  CHECK(parse_straggler("").rank == -1);
  for (const char* bad : {"1", ":5", "1:", "-1:5", "1:x", "a:5", "1:5:6"}) CHECK_THROWS_AS(parse_straggler(bad), Error);
  // The command line: one clear line for a period the mode does not read; a straggler past the ranks.
  const test::Command async =
      test::run_dtnn("train --use_synthetic_data=True --model_averaging=asynchronous --average_every_steps=2");
  CHECK(async.status != 0);
  CHECK(test::one_line_error(async));
  CHECK(async.err.find("--average_every_steps applies to") != std::string::npos);
  const test::Command straggler = test::run_dtnn("train --use_synthetic_data=True --straggler_ms=1:10");
  CHECK(test::one_line_error(straggler));
  CHECK(straggler.err.find("rank 1 does not exist") != std::string::npos);
}
