// The ranks of a job agree on the model they train. See rank_agreement.h.
#include "train/rank_agreement.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/batch_shares.h"

namespace dtnn {

namespace {

// The options that decide which collectives a rank calls, how many and how large (an MPMD command line
// gives each rank its own): "name=value" pairs, in a fixed order. One rank's blocking allreduce of the whole
// slab against another's per-bucket requests, or one rank validating while another does not, is a hang or
// a wrong sum; so is a different shuffle seed (samples trained twice, others never).
std::vector<std::string> collective_options(const TrainOptions& o) {
  auto b = [](bool v) { return std::string(v ? "True" : "False"); };
  auto n = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  return {"--num_epochs=" + std::to_string(o.num_epochs),
          "--steps_per_epoch=" + std::to_string(o.steps_per_epoch),
          "--evaluate=" + b(o.evaluate),
          "--evaluate_only=" + b(o.evaluate_only),
          "--evaluate_on_test=" + b(o.evaluate_on_test),
          "--test_as_validation=" + b(o.test_as_validation),
          "--validation_split=" + n(o.validation_split),
          "--loss_func=" + o.loss_func,
          "--metrics=" + o.metrics,
          "--seed=" + std::to_string(o.seed),
          "--sync_batchnorm=" + b(o.sync_batchnorm),
          "--non_blocking_mpi=" + b(o.non_blocking_mpi),
          "--gradient_bucket_mb=" + n(o.gradient_bucket_mb),
          "--model_averaging=" + o.model_averaging,
          "--average_every_epochs=" + std::to_string(o.average_every_epochs),
          "--average_every_steps=" + std::to_string(o.average_every_steps),
          "--average_optimizer_state=" + b(o.average_optimizer_state),
          "--average_bn_statistics=" + b(o.average_bn_statistics),
          "--dynamic_blocks=" + b(o.dynamic_blocks),
          // What each rank reads and how: one rank on synthetic data, another dataset or padded MNIST trains
          // another problem, and unequal augmentation unequal samples.
          "--dataset=" + o.dataset_name,
          "--use_synthetic_data=" + b(o.use_synthetic_data),
          "--pad_to_cifar=" + b(o.pad_to_cifar),
          "--flip_images=" + b(o.flip_images),
          "--crop_images=" + b(o.crop_images)};
}

// "" when this rank's collective options are rank 0's (collective); else the first that differs.
std::string options_unlike_root(Communicator& comm, const TrainOptions& o) {
  const std::vector<std::string> mine = collective_options(o);
  std::string joined;
  for (const std::string& s : mine) joined += s + '\n';
  int64_t size = static_cast<int64_t>(joined.size());
  comm.broadcast_bytes(&size, sizeof size, 0);
  std::string root(static_cast<size_t>(size), '\0');
  if (comm.rank() == 0) root = joined;
  comm.broadcast_bytes(root.data(), size, 0);
  if (root == joined) return "";
  size_t at = 0;
  for (const std::string& s : mine) {
    const size_t end = root.find('\n', at);
    const std::string theirs = root.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (theirs != s) return s + " where rank 0 has " + theirs;
    at = end == std::string::npos ? root.size() : end + 1;
  }
  return "options unlike rank 0's";
}

}  // namespace

void check_ranks_agree(Communicator& comm, const Model& model, const TrainOptions& o, const Dataset& data) {
  if (comm.size() == 1) return;
  const std::string options = options_unlike_root(comm, o);
  constexpr int kFields = 8;
  const char* names[kFields] = {"parameters", "state values", "tensor format", "layers", "global batch",
                                "batch shares (fingerprint)", "training samples", "test samples"};
  // Shares too: ranks splitting by different weights would train some samples twice and others never, and
  // one rank measuring for auto alone would pair its allreduce with another rank's gradient sum.
  const int64_t global = global_batch(o, comm.size());
  const std::string shares = o.model_averaging == "none" ? o.rank_batch_shares : "";
  const int64_t mine[kFields] = {model.slab_size(), model.state_size(), static_cast<int64_t>(model.layout()),
                                 static_cast<int64_t>(model.num_layers()), global,
                                 static_cast<int64_t>(shares_fingerprint(shares, comm.size())),
                                 // Every rank shuffles the whole pool with the same seed and takes its slice of
                                 // each batch: pools of other sizes (node-local copies of a dataset, one with a
                                 // shard missing) give other permutations, samples trained twice and others
                                 // never, or unequal step counts that end inside an allreduce.
                                 data.count(Pool::train), data.count(Pool::test)};
  int64_t root[kFields];
  std::memcpy(root, mine, sizeof mine);
  comm.broadcast_bytes(root, sizeof root, 0);
  std::string why;
  for (int i = 0; i < kFields; ++i) {
    if (mine[i] == root[i]) continue;
    const bool layout = i == 2;
    why += std::string(why.empty() ? "" : "; ") + names[i] + " " +
           (layout ? layout_name(static_cast<Layout>(mine[i])) : std::to_string(mine[i])) + " where rank 0 has " +
           (layout ? layout_name(static_cast<Layout>(root[i])) : std::to_string(root[i]));
  }
  if (!options.empty()) why += std::string(why.empty() ? "" : "; ") + options;
  float differing = why.empty() ? 0.0f : 1.0f;
  comm.allreduce_sum(&differing, 1);
  DTNN_CHECK(why.empty(), "rank ", comm.rank(), " does not train as rank 0: ", why,
             " (every rank needs the same --model, --tensor_format, batch, --rank_batch_shares, training "
             "options and dataset files)");
  DTNN_CHECK(differing == 0.0f, static_cast<int>(differing), " rank", differing == 1.0f ? "" : "s",
             " do", differing == 1.0f ? "es" : "", " not train as rank 0 (every rank needs the same --model, "
             "--tensor_format, batch, --rank_batch_shares and training options)");
}

}  // namespace dtnn
