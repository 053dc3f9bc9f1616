// When a training run has diverged, and what a diverged run leaves behind (run.h states the contract): the
// checks that make a run "diverged" besides the per-epoch loss check of the epoch loop (run.cpp), and the
// one way such a run ends.
#pragma once

#include "core/environment.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/options.h"
#include "train/output.h"
#include "train/trainer.h"

namespace dtnn {

// Whether every weight is finite. GPU: downloads them first (a slab copy; done once an epoch, negligible
// beside it). The loss an epoch reports is computed before each step's update, so the last updates may leave
// non-finite weights behind a finite loss: the epoch loop asks this after every epoch.
bool weights_finite(const Model& model);

// Data parallelism with more than one rank, after every epoch, collective: whether every rank's weights are
// finite (all ranks decide alike, even if their copies differ: one rank stopping alone hung the others in
// the next allreduce), and whether they are rank 0's (an FNV-1a of the slab). The first epoch they are not
// sets run.weights_differ_after_epoch and rank 0 says so once on `out`. Two allreduces of one float and a
// broadcast of 8 bytes per epoch.
bool weights_finite_on_every_rank(Communicator& comm, const Model& model, int epoch, RunSummary& run,
                                  std::ostream* out);

// Model averaging: the asynchronous modes judge each rank's own loss, and every mode merges the model after
// the last check. So, collectively after finish_training(): the run diverged when any rank's loss did, or
// when the merged model holds a non-finite weight; every rank then takes finish_diverged(), and rank 0's
// run.diverged names the rank. Without this, a rank whose loss stayed finite would save the NaN merged
// weights as a good result, or wait in the test pass for a rank that had left.
void agree_on_divergence(Communicator& comm, Model& model, RunSummary& run);

// A diverged run writes its report (status "diverged", the epochs up to the non-finite one; the test pass
// when it was the test loss that was not finite) and nothing else: no weights or history from it. Rank 0
// says why on stderr in one line, naming the epoch --checkpoint_file keeps. Returns kDivergedExit.
int finish_diverged(const TrainOptions& o, const Environment& env, const Model& model, const Trainer& trainer,
                    const RunSummary& run, int epochs_run, bool root);

}  // namespace dtnn
