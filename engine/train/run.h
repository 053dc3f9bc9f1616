// run_training: everything `dtnn train` does after parsing its options (PyDTNN's launcher flow):
// set threads and the communicator, build the model, load data, print the model table and parameters,
// optionally evaluate, train, store weights and history, evaluate on the test set, write the report.
// Only rank 0 prints and writes files. Throws dtnn::Error on bad input; nothing is written then.
#pragma once

#include <ostream>

#include "parallel/communicator.h"
#include "train/options.h"

namespace dtnn {

// Returns the process exit code (0 on success).
int run_training(TrainOptions options, Communicator& comm, std::ostream& out);

// The thread count --threads=0 resolves to: OMP_NUM_THREADS, else cores / ranks on this node.
int default_threads();

}  // namespace dtnn
