#include "train/divergence.h"

#include <cmath>
#include <cstdint>
#include <iostream>

#include "core/error.h"
#include "core/fnv1a.h"
#include "train/output.h"

namespace dtnn {

bool weights_finite(const Model& model) {
  model.download();  // GPU: the device's weights (a slab copy; no-op on the CPU)
  const float* w = model.host_param_slab();
  for (int64_t i = 0; i < model.slab_size(); ++i)
    if (!std::isfinite(w[i])) return false;
  return true;
}

bool weights_finite_on_every_rank(Communicator& comm, const Model& model, int epoch, RunSummary& run,
                                  std::ostream* out) {
  float not_finite = weights_finite(model) ? 0.0f : 1.0f;  // downloads a GPU model's weights first
  comm.allreduce_sum(&not_finite, 1);
  const uint64_t h = fnv1a(model.host_param_slab(), static_cast<size_t>(model.slab_size()) * sizeof(float));
  uint64_t root = h;
  comm.broadcast_bytes(&root, sizeof root, 0);
  float differ = h == root ? 0.0f : 1.0f;
  comm.allreduce_sum(&differ, 1);
  if (differ > 0.0f && run.weights_differ_after_epoch == 0) {
    run.weights_differ_after_epoch = epoch;
    if (out)
      *out << "**** Warning: after epoch " << epoch << " the weights of " << static_cast<int>(differ) << " rank"
           << (differ == 1.0f ? "" : "s") << " differ from rank 0's (devices rounding the update otherwise?): the "
           << "ranks train apart; the report records weights_differ_after_epoch\n";
  }
  return not_finite == 0.0f;
}

void agree_on_divergence(Communicator& comm, Model& model, RunSummary& run) {
  const bool finite_model = weights_finite(model);
  const double mine = !run.diverged.empty() ? 2.0 : finite_model ? 0.0 : 1.0;
  if (comm.max(mine) == 0.0) return;
  std::vector<std::string> why;
  comm.gather_bytes(run.diverged, why);
  if (comm.rank() != 0 || !run.diverged.empty()) {
    if (run.diverged.empty()) run.diverged = "diverged";  // ranks other than 0 only exit kDivergedExit
    return;
  }
  for (size_t r = 1; r < why.size() && run.diverged.empty(); ++r)
    if (!why[r].empty()) run.diverged = "diverged on rank " + std::to_string(r) + why[r].substr(std::string("diverged").size());
  if (run.diverged.empty())
    run.diverged = "diverged: the merged model holds non-finite weights after epoch " +
                   std::to_string(run.epochs.empty() ? 0 : run.epochs.back().epoch);
}

int finish_diverged(const TrainOptions& o, const Environment& env, const Model& model, const Trainer& trainer,
                    const RunSummary& run, int epochs_run, bool root) {
  if (!root) return kDivergedExit;
  if (!o.report.empty()) write_report(o.report, o, env, model, trainer, run);
  // Training diverged in its last epoch, which no checkpoint saw; a test pass that diverged came after the
  // last epoch's checkpoint, whose weights were finite.
  std::string kept;
  const int64_t last_saved = run.epochs.empty() ? 0 : run.epochs.back().epoch - (run.test ? 0 : 1);
  if (!o.checkpoint_file.empty() && epochs_run > (run.test ? 0 : 1))
    kept = "; --checkpoint_file keeps epoch " + std::to_string(last_saved);
  std::cerr << "dtnn: " << run.diverged << ": no weights, history or checkpoint written from it" << kept << std::endl;
  return kDivergedExit;
}

}  // namespace dtnn
