// Run under `mpirun -np 2`: --dynamic_blocks (train/trainer.h), blocks claimed at run time from a shared
// counter on rank 0 (MPI_Fetch_and_op), through the Trainer on a small synthetic MNIST with simplecnn.
// Each rank records the (epoch, block) pairs it trained (Trainer::claimed_blocks); rank 0 gathers them and
// checks them against what the blocks are, known independently: every epoch's blocks 0 .. B-1, each exactly
// once over both ranks. Cases:
//   - partially asynchronous, 8 blocks per epoch, 3 epochs, rank 1 slowed (--straggler_ms=1:30, a step of
//     this model takes a few ms): every block once, rank 0 trains more blocks than rank 1, the run's
//     blocks_per_rank figures equal the gathered counts, both ranks end on identical (the general) weights;
//   - asynchronous, 2 blocks per epoch, 3 epochs, rank 1 slowed so much (150 ms a step, 2 steps a block)
//     that rank 0 trains the other 5 blocks before rank 1 finishes its first: rank 1 finds epochs with
//     nothing left to claim, goes on, and the run ends (no deadlock: ctest's TIMEOUT) with every block once.
// Prints one line per case and "all passed" / "some checks FAILED"; exits 0/1.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "parallel/communicator.h"
#include "train/option_table.h"
#include "train/run.h"
#include "train/trainer.h"

using namespace dtnn;

namespace {

struct Case {
  const char* mode;
  int64_t blocks_per_worker, per_block, batches_per_block, epochs;
  const char* straggler;
  int64_t rank1_at_most;  // rank 1's blocks over the run: at most this (-1: only fewer than rank 0's)
};

int run_case(Communicator& comm, const Case& c) {
  TrainOptions o;
  o.model_name = "simplecnn";
  o.dataset_name = "mnist";
  o.batch_size = 8;
  o.optimizer.name = "sgd";
  o.seed = 3;
  o.threads = 1;
  o.model_averaging = c.mode;
  o.dynamic_blocks = true;
  o.blocks_per_worker = c.blocks_per_worker;
  o.num_batches_per_worker = c.batches_per_block;
  o.straggler_ms = c.straggler;
  validate_options(o);
  const int64_t blocks = comm.size() * c.blocks_per_worker;
  DatasetShape shape = dataset_shape("mnist");
  shape.train_count = blocks * c.per_block;
  auto data = make_synthetic(shape, 2);
  auto model = build_training_model(o, comm);
  share_root_weights(*model, comm);
  TrainerSetup setup = build_trainer(o, *model, *data, comm);
  for (int e = 1; e <= c.epochs; ++e) setup.trainer->run_epoch(e, static_cast<int>(c.epochs), setup.splits);
  const std::optional<AveragingStats> totals = setup.trainer->finish_training();

  const auto& mine = setup.trainer->claimed_blocks();
  std::string bytes(mine.size() * sizeof(int64_t) * 2, '\0');
  for (size_t i = 0; i < mine.size(); ++i) {
    const int64_t pair[2] = {mine[i].first, mine[i].second};
    std::memcpy(&bytes[i * sizeof pair], pair, sizeof pair);
  }
  std::vector<std::string> all;
  comm.gather_bytes(bytes, all);
  std::vector<float> w(model->param_slab(), model->param_slab() + model->slab_size()), root = w;
  comm.broadcast(root.data(), model->slab_size(), 0);
  float differs = std::memcmp(w.data(), root.data(), w.size() * sizeof(float)) != 0 ? 1.0f : 0.0f;
  comm.allreduce_sum(&differs, 1);
  if (comm.rank() != 0) return 0;

  int failed = 0;
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (epoch, block) -> times trained
  std::vector<int64_t> count(all.size(), 0);
  std::vector<std::vector<int64_t>> per_epoch(all.size(), std::vector<int64_t>(c.epochs + 1, 0));
  for (size_t r = 0; r < all.size(); ++r)
    for (size_t i = 0; i < all[r].size() / (2 * sizeof(int64_t)); ++i) {
      int64_t pair[2];
      std::memcpy(pair, &all[r][i * sizeof pair], sizeof pair);
      ++seen[{pair[0], pair[1]}];
      ++count[r];
      if (pair[0] >= 1 && pair[0] <= c.epochs) ++per_epoch[r][pair[0]];
    }
  bool exact = static_cast<int64_t>(seen.size()) == c.epochs * blocks;
  for (int64_t e = 1; e <= c.epochs; ++e)
    for (int64_t b = 0; b < blocks; ++b) exact = exact && seen.count({e, b}) == 1 && seen[{e, b}] == 1;
  int64_t idle_epochs = 0;  // epochs in which rank 1 claimed nothing
  for (int64_t e = 1; e <= c.epochs; ++e) idle_epochs += per_epoch[1][e] == 0 ? 1 : 0;
  const bool skewed = c.rank1_at_most < 0 ? count[0] > count[1] : count[1] <= c.rank1_at_most && idle_epochs >= 1;
  const bool figures = totals && totals->blocks_per_rank == count;
  const bool ok = exact && skewed && figures && differs == 0.0f;
  std::printf("%s, %lld blocks x %lld epochs, straggler %s: blocks trained per rank %lld, %lld (rank 1 idle in %lld "
              "epoch(s)); every block exactly once: %s; report figures %s; final weights identical: %s: %s\n",
              c.mode, static_cast<long long>(blocks), static_cast<long long>(c.epochs), c.straggler,
              static_cast<long long>(count[0]), static_cast<long long>(count[1]), static_cast<long long>(idle_epochs),
              exact ? "yes" : "NO", figures ? "match" : "DIFFER", differs == 0.0f ? "yes" : "NO", ok ? "ok" : "FAILED");
  failed += ok ? 0 : 1;
  return failed;
}

}  // namespace

int main() {
  try {
    auto world = make_mpi_communicator();
    if (world->size() != 2) {
      std::fprintf(stderr, "test_mpi_dynblocks: run with mpirun -np 2 (got %d ranks)\n", world->size());
      return 1;
    }
    int failed = 0;
    failed += run_case(*world, Case{"partially_asynchronous", 4, 16, 0, 3, "1:30", -1});
    failed += run_case(*world, Case{"asynchronous", 1, 16, 2, 3, "1:150", 1});
    float total = static_cast<float>(failed);
    world->allreduce_sum(&total, 1);
    if (world->rank() == 0) std::printf("%s\n", total == 0.0f ? "all passed" : "some checks FAILED");
    return total == 0.0f ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_mpi_dynblocks: %s\n", e.what());
    return 1;
  }
}
