// run_training: everything `dtnn train` does after parsing its options (PyDTNN's launcher flow):
// set threads and the communicator, build the model, load data, print the model table and parameters,
// optionally evaluate, train, store weights and history, evaluate on the test set, write the report.
// Training: --resume_from restores a checkpoint first (train/checkpoint.h); after every epoch the LR
// schedulers run (optim/lr_scheduler.h; they may stop training) and rank 0 rewrites --checkpoint_file.
// Only rank 0 prints and writes files. Throws dtnn::Error on bad input; nothing is written then.
#pragma once

#include <ostream>

#include <memory>

#include "data/dataset.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/options.h"

namespace dtnn {

// Returns the process exit code (0 on success).
int run_training(TrainOptions options, Communicator& comm, std::ostream& out);

// Opens --dataset (mnist, cifar10, imagenet; synthetic with --use_synthetic_data) for a built model.
// Synthetic and ImageNet images take the model's input size (alexnet_imagenet: 227x227, the other
// ImageNet models 224x224) when it differs from the dataset's nominal one.
std::unique_ptr<Dataset> open_dataset(const TrainOptions& options, const Model& model);

// The thread count --threads=0 resolves to: OMP_NUM_THREADS, else cores / ranks on this node
// (Communicator::node_size()).
int default_threads(int ranks_on_node);

}  // namespace dtnn
