// The ranks of a job agree on the model they train. See rank_agreement.h.
#include "train/rank_agreement.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/fnv1a.h"
#include "core/sha256.h"
#include "train/batch_shares.h"
#include "train/option_table.h"

namespace dtnn {

namespace {

// The options that decide which collectives a rank calls, how many and how large, and the update every rank
// must apply alike (an MPMD command line gives each rank its own): "--name=value" lines in the option
// table's order. One rank's blocking allreduce of the whole slab against another's per-bucket requests, one
// rank validating, stopping early or syncing trace clocks while another does not, is a hang or a wrong sum;
// a different shuffle seed or block split trains samples twice and others never; another learning rate or
// optimizer leaves the ranks' weights apart while the job goes on. They are the rows a resumed run must
// share with its checkpoint (kOptMustMatch: model, batch, optimizer, losses, schedulers, seed, dataset...)
// and the rows below; left free: threads, devices (a GPU rank beside CPU ranks), conv algorithms, fusions,
// prefetching, outputs and paths (node-local copies), the injected straggler delays.
const std::set<std::string> kAlsoCollective = {
    "num_epochs", "evaluate", "evaluate_only", "evaluate_on_test", "pad_to_cifar", "flip_images",
    "flip_images_prob", "crop_images", "crop_images_prob", "crop_images_padding", "crop_images_size",
    "enable_nccl", "non_blocking_mpi", "gradient_bucket_mb", "gradient_buckets_min", "model_averaging",
    "average_every_epochs", "average_every_steps", "average_optimizer_state", "average_bn_statistics",
    "blocks_per_worker", "shuffle_blocks", "shuffle_block_data", "num_batches_per_worker", "dynamic_blocks",
    "tracing", "trace_steps", "profile"};

// The update rule: under model averaging the ranks' models are merged, not kept equal step by step, so a
// rank may step otherwise (what dislib's workers do is theirs; the collectives do not depend on it).
const std::set<std::string> kUpdateRule = {"optimizer", "learning_rate", "learning_rate_scaling", "momentum",
                                           "nesterov", "decay", "beta1", "beta2", "rho", "epsilon"};

}  // namespace

std::vector<std::string> collective_options(const TrainOptions& o) {
  std::vector<std::string> out;
  const bool averaging = o.model_averaging != "none";
  for (const OptionSpec& spec : train_option_table())
    if (((spec.flags & kOptMustMatch) || kAlsoCollective.count(spec.name)) && !(averaging && kUpdateRule.count(spec.name)))
      out.push_back("--" + std::string(spec.name) + "=" +
                    // AUTO beside the layout it resolves to on this rank's device is no difference
                    (spec.name == std::string("tensor_format") ? resolved_tensor_format(o) : option_text(spec, o)));
  // A resumed rank starts at the checkpoint's epoch: one resumed beside one starting anew trains more epochs.
  out.push_back(o.resume_from.empty() ? "no --resume_from" : "--resume_from (given)");
  // Synchronised BN's blocking allreduces run inside backward. A CPU rank starts its buckets' MPI_Iallreduce
  // there too, at fixed layers; a GPU rank (staged through host memory) starts them in finish(), after its
  // BN sums: a GPU rank beside CPU ranks would issue the job's collectives in another order (MPI's rule:
  // one order on every rank), a hang or sums of unlike buffers. Blocking mode orders them alike.
  if (o.sync_batchnorm && o.non_blocking_mpi)
    out.push_back(std::string("--enable_gpu=") + (o.enable_gpu ? "True" : "False") +
                  " (--sync_batchnorm with --non_blocking_mpi: one kind of device on every rank)");
  return out;
}

namespace {

// The option a line of collective_options() is about: "--batch_size=64" and "no --resume_from" give
// "batch_size" and "resume_from".
std::string option_key(const std::string& line) {
  const size_t dashes = line.find("--");
  const size_t begin = dashes == std::string::npos ? 0 : dashes + 2;
  return line.substr(begin, line.find_first_of("= (", begin) - begin);
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
  // By option, not by position: the lists differ in length when a rank leaves out options its mode ignores.
  std::map<std::string, std::string> theirs;
  for (size_t at = 0; at < root.size();) {
    const size_t end = std::min(root.find('\n', at), root.size());
    const std::string line = root.substr(at, end - at);
    theirs.emplace(option_key(line), line);
    at = end + 1;
  }
  for (const std::string& s : mine) {
    const auto it = theirs.find(option_key(s));
    if (it == theirs.end()) return s + " where rank 0 does not name --" + option_key(s);
    if (it->second != s) return s + " where rank 0 has " + it->second;
    theirs.erase(it);
  }
  if (!theirs.empty()) return "no --" + theirs.begin()->first + " where rank 0 has " + theirs.begin()->second;
  return "options unlike rank 0's";
}

// FNV-1a of the first samples of a pool as the model reads them (pixels and one-hot labels): node-local
// copies of a dataset must hold the same samples in the same order, and equal counts did not show MNIST
// beside Fashion-MNIST or labels shifted by one. The first ones only: ImageNet's shards are costly to reach
// at random, and the first shard already differs between two datasets or two orders.
int64_t data_fingerprint(const Dataset& data, Pool pool, Layout layout) {
  const int64_t n = std::min<int64_t>(16, data.count(pool));
  if (n == 0) return 0;
  const DatasetShape& s = data.shape();
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) indices[static_cast<size_t>(i)] = i;
  std::vector<float> x(static_cast<size_t>(n * s.h * s.w * s.c)), y(static_cast<size_t>(n * s.classes));
  data.load_batch(pool, indices.data(), n, layout, x.data(), y.data());
  const uint64_t h = fnv1a(y.data(), y.size() * sizeof(float), fnv1a(x.data(), x.size() * sizeof(float)));
  return static_cast<int64_t>(h >> 1);  // non-negative, as the other fields print
}

// Collective. Throws the same dtnn::Error on every rank when any rank's `why` is not empty: "rank R<verb>why"
// for each such rank, then `tail`. Each rank raising only its own part raced: rank 0 (which differs from
// nobody) aborted the job with a bare "1 rank does not train as rank 0" before the differing rank's stderr
// line got out, and the counts it named were lost (a CI run saw exactly that).
void refuse_on_every_rank(Communicator& comm, const std::string& why, const char* verb, const char* tail) {
  std::vector<std::string> parts;
  comm.gather_bytes(why, parts);
  std::string all;
  for (size_t r = 0; r < parts.size(); ++r)
    if (!parts[r].empty()) all += std::string(all.empty() ? "" : "; ") + "rank " + std::to_string(r) + verb + parts[r];
  int64_t length = static_cast<int64_t>(all.size());
  comm.broadcast_bytes(&length, sizeof length, 0);
  all.resize(static_cast<size_t>(length));
  if (length > 0) comm.broadcast_bytes(&all[0], length, 0);
  DTNN_CHECK(all.empty(), all, tail);
}

}  // namespace

void check_same_checkpoint(Communicator& comm, const std::string& path) {
  if (comm.size() == 1) return;
  const std::string mine = sha256_file_hex(path);
  std::string root = mine;  // 64 hex digits on every rank
  comm.broadcast_bytes(root.data(), static_cast<int64_t>(root.size()), 0);
  const std::string why = mine == root ? std::string() : "--resume_from=" + path + " has SHA-256 " +
                                                            mine.substr(0, 12) + "..., rank 0's " +
                                                            root.substr(0, 12) + "...";
  refuse_on_every_rank(comm, why, " resumes from another checkpoint than rank 0: ",
                       " (every rank must resume from the same file, or a copy of it)");
}

void check_ranks_agree(Communicator& comm, const Model& model, const TrainOptions& o, const TrainOptions& given,
                       const Dataset& data) {
  if (comm.size() == 1) return;
  const std::string options = options_unlike_root(comm, given);
  constexpr int kFields = 10;
  const char* names[kFields] = {"parameters", "state values", "tensor format", "layers", "global batch",
                                "batch shares (fingerprint)", "training samples", "test samples",
                                "training data (fingerprint of the first samples)",
                                "test data (fingerprint of the first samples)"};
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
                                 data.count(Pool::train), data.count(Pool::test),
                                 data_fingerprint(data, Pool::train, model.layout()),
                                 data_fingerprint(data, Pool::test, model.layout())};
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
  // Outputs: only rank 0 writes them (and loads the weights file), so one named on another rank alone was
  // silently never written. Rank 0 naming one that the others lack is the usual MPMD command line.
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--report", &given.report},
      {"--history_file", &given.history_file},
      {"--weights_and_bias_filename", &given.weights_and_bias_filename},
      {"--checkpoint_file", &given.checkpoint_file},
      {"--early_stopping_weights_filename", &given.lr_schedulers.early_stopping_weights_filename},
      {"--tracer_output", &given.tracer_output}};
  int64_t named = 0;
  for (size_t i = 0; i < std::size(outputs); ++i)
    if (!outputs[i].second->empty()) named |= int64_t{1} << i;
  int64_t root_named = named;
  comm.broadcast_bytes(&root_named, sizeof root_named, 0);
  for (size_t i = 0; i < std::size(outputs); ++i)
    if ((named & ~root_named) >> i & 1)
      why += std::string(why.empty() ? "" : "; ") + outputs[i].first + "=" + *outputs[i].second +
             " where rank 0 names none (only rank 0 reads and writes it: give it to rank 0)";
  refuse_on_every_rank(comm, why, " does not train as rank 0: ",
                       " (every rank needs the same --model, --tensor_format, batch, --rank_batch_shares, training "
                       "options and dataset files)");
}

}  // namespace dtnn
