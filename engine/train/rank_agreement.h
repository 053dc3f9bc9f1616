// Every rank of a data-parallel job must build the same model in the same layout: its gradient slab is
// summed element by element, and a conv weight or an FC row means something else in NHWC than in NCHW
// (flattening orders the features differently). One launcher starts the same command on every rank, but a
// job of unequal devices (mpirun's MPMD form: a GPU rank `: -np N` CPU ranks) is several commands, and a
// rank left at its device's default layout would train on silently garbled sums. Checked once, after the
// model is built and before the weights are shared.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/options.h"

namespace dtnn {

// Collective. Compares this rank's parameter and state slab sizes, layout, layer count, global batch, batch
// shares (train/batch_shares.h shares_fingerprint), training and test sample counts and the options that
// decide its collectives, data and update with rank 0's; on any difference every rank throws the same
// dtnn::Error, naming each differing rank and what differs ("rank 1 does not train as rank 0: tensor format
// NCHW where rank 0 has NHWC; ..."), so whichever rank aborts the job first reports all of it. `o` is the options as run (batch from --global_batch_size, scaled learning rate);
// `given` as the command line gave them, which are the ones compared and named.
void check_ranks_agree(Communicator& comm, const Model& model, const TrainOptions& o, const TrainOptions& given,
                       const Dataset& data);

// The options check_ranks_agree compares ("--name=value" lines, option-table order, then conditions such as
// one device kind for synchronised BN with non-blocking buckets); local, for tests.
std::vector<std::string> collective_options(const TrainOptions& o);

// Collective, for a resumed run: every rank's --resume_from file has rank 0's SHA-256 (copies on node-local
// disks agree). A rank resuming at another epoch trained more epochs than the others and hung in their last
// allreduce; one resuming another run's checkpoint of the same epoch trained apart with exit 0. Else every
// rank throws dtnn::Error (the differing ones name their file and both digests).
void check_same_checkpoint(Communicator& comm, const std::string& path);

}  // namespace dtnn
