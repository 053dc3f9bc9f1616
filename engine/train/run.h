// run_training: everything `dtnn train` does after parsing its options (PyDTNN's launcher flow), in named
// stages that tests call too instead of copying them: validate and set threads, build_training_model,
// open_dataset, build_trainer, the epoch loop, then weights, history, test evaluation and the report.
// Training: --resume_from restores a checkpoint first (train/checkpoint.h); after every epoch the LR
// schedulers run (optim/lr_scheduler.h; they may stop training) and rank 0 rewrites --checkpoint_file.
// Only rank 0 prints and writes files. Throws dtnn::Error on bad input; nothing is written then.
#pragma once

#include <ostream>

#include <memory>

#include "data/dataset.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "train/options.h"
#include "train/trainer.h"

namespace dtnn {

// Returns the process exit code: 0 on success; kDivergedExit (core/error.h) when the training loss became NaN
// or infinite or the weights did (checked after every epoch on the allreduced loss and the weights, so every
// rank stops after the same epoch), or when the test loss is not finite (the test pass runs before anything
// is written). A diverged run writes only its report (--report, "status": "diverged") and one "dtnn:
// diverged: ..." line on stderr; --weights_and_bias_filename and --history_file are not written,
// --checkpoint_file keeps the last finite epoch (it is never written from the diverged state), and the test
// pass is skipped when training diverged.
int run_training(TrainOptions options, Communicator& comm, std::ostream& out);

// The table's ranges and choices and the cross-option rules (validate_options), then what needs the file
// system or the ranks (output paths writable and distinct, rank numbers that exist, a GPU when asked).
void validate_run(const TrainOptions& options, const Communicator& comm);

// Uneven (or auto) shares over ranks whose BatchNormalization layers use local statistics: the gradients
// are weighted to the global batch's, but each rank's normalisation is over its own share.
bool uneven_shares_with_local_bn(const TrainOptions& options, const Communicator& comm, const Model& model);

// The model `options` describe, fused as asked, built for its device, layout and batch (every buffer sized
// here: none is allocated in the batch loop) and seeded for this rank. Not yet sharing rank 0's weights.
std::unique_ptr<Model> build_training_model(const TrainOptions& options, Communicator& comm);

// The optimizer over the model's slab, the trainer, and the train/validation split. `options`, `model`,
// `data` and `comm` must outlive it (the trainer keeps references).
struct TrainerSetup {
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Trainer> trainer;
  Splits splits;
};
TrainerSetup build_trainer(const TrainOptions& options, Model& model, const Dataset& data, Communicator& comm);

// PyDTNN's --steps_per_epoch on ImageNet (datasets/dataset.py adjust_steps_per_epoch) keeps whole shards: the
// first max(1, G x steps / 1251) training shards of 1251 images (the validation split is taken from them) and
// max(1, G x steps / 390) test shards of 390, G the global batch. The pools are cut to as many samples, so a
// step-capped ImageNet run validates and tests what PyDTNN's does instead of 1.28 million / 50,000 images.
// Other datasets and steps_per_epoch = 0: the whole pools ({0, 0}).
PoolLimits step_capped_pools(const TrainOptions& options, int ranks);

// Opens --dataset (mnist, cifar10, imagenet; synthetic with --use_synthetic_data) for a built model.
// Synthetic and ImageNet images take the model's input size (alexnet_imagenet: 227x227, the other
// ImageNet models 224x224) when it differs from the dataset's nominal one.
std::unique_ptr<Dataset> open_dataset(const TrainOptions& options, const Model& model);

// The thread count --threads=0 resolves to, the cores this rank gets: OMP_NUM_THREADS, else
// SLURM_CPUS_PER_TASK (srun -c), else the cores this rank may run on (its affinity mask: all the machine's
// when unbound) divided among the ranks that may run on them too (Communicator::ranks_sharing_cores(): 1
// when bound to cores of its own, the node's rank count when unbound), at least 1.
int default_threads(int ranks_sharing_cores);

}  // namespace dtnn
