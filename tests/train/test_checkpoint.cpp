// Checkpoint and resume: a run stopped after 2 epochs and resumed in a fresh model, optimizer, trainer and
// scheduler list (and, through the CLI, a fresh process) ends bit-identical to an uninterrupted 4-epoch
// run; bad checkpoints are refused with one line.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_helpers.h"
#include "helpers.h"
#include "io/npz_values.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/checkpoint.h"
#include "train/output.h"
#include "train/run.h"
#include "train/trainer.h"

using namespace dtnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

struct Run {
  std::vector<EpochRecord> epochs;
  std::vector<float> params;
};

// run_training's loop: epochs [from, to], schedulers after each, optional checkpoint at the end; when
// resume is set the state comes from that file first.
Run train(TrainOptions o, const Dataset& data, int to, const std::string& save, const std::string& resume) {
  o.model_name = "simplecnn";  // has dropout: its streams must be per-epoch too
  auto comm = make_local_communicator();
  auto model = build_training_model(o, *comm);  // run_training's own stages (train/run.h)
  TrainerSetup stages = build_trainer(o, *model, data, *comm);
  Trainer& trainer = *stages.trainer;
  auto& opt = stages.optimizer;
  const Splits& splits = stages.splits;
  SchedulerSetup setup;
  setup.value_names = trainer.value_names();
  setup.has_validation = !splits.val.empty();
  setup.steps_per_epoch = o.steps_per_epoch;
  setup.ranks = 2;  // a real warm-up ramp (base = lr/2) on one process
  setup.model_name = "simplecnn";
  setup.optimizer = opt.get();
  setup.model = model.get();
  setup.save_weights = [](const std::string&) {};
  LRSchedulers schedulers(o.lr_schedulers, setup);
  trainer.set_batch_begin([&] { schedulers.on_batch_begin(); });
  CheckpointState state;
  if (!resume.empty()) state = load_checkpoint(resume, *model, *opt, schedulers, o, 1, nullptr);
  Run r;
  r.epochs = state.epochs;
  for (int e = static_cast<int>(state.epoch) + 1; e <= to; ++e) {
    r.epochs.push_back(trainer.run_epoch(e, to, splits));
    const EpochRecord& rec = r.epochs.back();
    schedulers.on_epoch_end(rec.train.values, rec.val ? &rec.val->values : nullptr);
    state.epoch = e;
    state.stopped = schedulers.stop_training();
    state.epochs = r.epochs;
  }
  if (!save.empty()) save_checkpoint(save, *model, *opt, schedulers, o, 1, state);
  r.params.assign(model->param_slab(), model->param_slab() + model->slab_size());
  return r;
}

TrainOptions options() {
  TrainOptions o;
  o.steps_per_epoch = 3;
  o.batch_size = 16;
  o.validation_split = 0.01;
  o.optimizer.name = "adam";  // its step count drives the bias correction
  o.optimizer.learning_rate = 0.002;
  o.lr_schedulers.names = "warm_up,reduce_lr_every_nepochs,reduce_lr_on_plateau";
  o.lr_schedulers.warm_up_epochs = 2;
  o.lr_schedulers.reduce_lr_every_nepochs_nepochs = 3;
  o.lr_schedulers.reduce_lr_every_nepochs_factor = 0.5;
  o.lr_schedulers.reduce_lr_on_plateau_patience = 1;
  return o;
}

using test::Command;
using test::one_line_error;
Command run(const std::string& args) { return test::run_dtnn(args); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("checkpoint: 2 epochs + resume to 4 equals 4 straight epochs, bit for bit", "[checkpoint]") {
  auto data = make_synthetic(dataset_shape("mnist"), 0);
  const TrainOptions o = options();
  const std::string path = test::temp_path("resume.npz");
  const Run straight = train(o, *data, 4, "", "");
  train(o, *data, 2, path, "");
  const Run resumed = train(o, *data, 4, "", path);
  REQUIRE(resumed.epochs.size() == 4);
  for (int e = 0; e < 4; ++e) {
    INFO("epoch " << e + 1);
    CHECK(resumed.epochs[e].epoch == e + 1);
    CHECK(resumed.epochs[e].train.values == straight.epochs[e].train.values);
    CHECK(resumed.epochs[e].val->values == straight.epochs[e].val->values);
    CHECK(resumed.epochs[e].learning_rate == straight.epochs[e].learning_rate);
  }
  // The schedulers acted: warm-up over W = 6 steps from 0.001 (lr/2) reaches 0.002 at epoch 3's first step;
  // the rate recorded is the epoch's last step's.
  CHECK(straight.epochs[0].learning_rate == Approx(0.001 + 2.0 / 6.0 * 0.001).epsilon(1e-12));
  CHECK(straight.epochs[1].learning_rate == Approx(0.001 + 5.0 / 6.0 * 0.001).epsilon(1e-12));
  CHECK(straight.epochs[2].learning_rate == 0.002);
  CHECK(straight.epochs[3].learning_rate < 0.002);  // halved after epoch 3 (and perhaps by the plateau)
  REQUIRE(straight.params.size() == resumed.params.size());
  CHECK(std::memcmp(straight.params.data(), resumed.params.data(), straight.params.size() * sizeof(float)) == 0);

  // The file doubles as a weights file, and its dtnn_ keys say where the run stood.
  auto model = create_model("simplecnn");
  BuildContext ctx;
  ctx.max_batch = 1;
  model->build(ctx, 7);
  load_weights(*model, path);
  io::NpyArrayMap arrays;
  for (auto& a : io::read_npz(path)) arrays.emplace(a.name, std::move(a));
  int64_t compared = 0, differing = 0;  // every parameter now holds its "<id>_<type>_<name>" entry's values
  for (const Layer* layer : model->all_layers())
    for (const Param& p : layer->params()) {
      const std::string k = std::to_string(layer->id) + "_" + layer->type() + "_" + p.name;
      REQUIRE(arrays.count(k) == 1);
      const std::vector<float> stored = arrays.at(k).to_float();
      REQUIRE(static_cast<int64_t>(stored.size()) == p.value.numel());
      for (int64_t i = 0; i < p.value.numel(); ++i) differing += p.value.data()[i] != stored[static_cast<size_t>(i)];
      compared += p.value.numel();
    }
  CHECK(compared == model->num_params());
  CHECK(differing == 0);
  CHECK(io::read_i64(arrays, "dtnn_epoch", path) == 2);
  CHECK(io::read_i64(arrays, "dtnn_optimizer_steps", path) == 6);
  CHECK(arrays.count("dtnn_optimizer_m") == 1);
  CHECK(arrays.count("dtnn_scheduler_2_reduce_lr_on_plateau") == 1);
  fs::remove(path);
}

TEST_CASE("checkpoint: a resume with other options, a truncated file or a missing key is refused", "[checkpoint]") {
  auto data = make_synthetic(dataset_shape("mnist"), 0);
  TrainOptions o = options();
  o.lr_schedulers.names = "";
  const std::string path = test::temp_path("bad.npz");
  train(o, *data, 1, path, "");

  TrainOptions other = o;
  other.batch_size = 32;
  CHECK_THROWS_WITH(train(other, *data, 2, "", path),
                    path + ": checkpoint was written with --batch_size=16, this run has --batch_size=32 (a resumed run "
                           "must use the same)");
  other = o;
  other.lr_schedulers.names = "warm_up";
  CHECK_THROWS_WITH(train(other, *data, 2, "", path), Contains("--lr_schedulers="));
  // Options that change the update are recorded too (a resume could silently switch BN statistics).
  other = o;
  other.sync_batchnorm = true;
  CHECK_THROWS_WITH(train(other, *data, 2, "", path), Contains("--sync_batchnorm=False, this run has --sync_batchnorm=True"));

  // A missing dtnn_ key.
  std::vector<io::NpyArray> arrays;
  for (auto& a : io::read_npz(path))
    if (a.name != "dtnn_optimizer_v") arrays.push_back(std::move(a));
  const std::string missing = test::temp_path("missing.npz");
  io::write_npz(missing, arrays, false);
  CHECK_THROWS_WITH(train(o, *data, 2, "", missing), missing + ": no array 'dtnn_optimizer_v'");

  // A stop flag other than 0 or 1 (read as "stopped" before: any non-zero value passed).
  std::vector<io::NpyArray> flagged;
  for (auto& a : io::read_npz(path))
    flagged.push_back(a.name == "dtnn_stopped" ? io::make_i64("dtnn_stopped", 7) : std::move(a));
  const std::string seven = test::temp_path("stopped7.npz");
  io::write_npz(seven, flagged, false);
  CHECK_THROWS_WITH(train(o, *data, 2, "", seven), seven + ": array 'dtnn_stopped' must be 0 or 1 (holds 7)");

  // A weights file is not a checkpoint.
  const std::string weights = test::temp_path("weights_only.npz");
  {
    auto model = create_model("simplecnn");
    BuildContext ctx;
    ctx.max_batch = 1;
    model->build(ctx, 0);
    save_weights(*model, weights);
  }
  CHECK_THROWS_WITH(train(o, *data, 2, "", weights), Contains("not a dtnn checkpoint"));

  // Truncated.
  const std::string cut = test::temp_path("cut.npz");
  fs::copy_file(path, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  CHECK_THROWS_WITH(train(o, *data, 2, "", cut), Contains(cut));
  for (const auto& f : {path, missing, seven, weights, cut}) fs::remove(f);
}

TEST_CASE("cli: --checkpoint_file then --resume_from gives the uninterrupted run's weights and history", "[checkpoint][cli]") {
  const std::string wa = test::temp_path("cli_a.npz"), wb = test::temp_path("cli_b.npz");
  const std::string ha = test::temp_path("cli_a.hist"), hb = test::temp_path("cli_b.hist");
  const std::string ck = test::temp_path("cli_ck.npz");
  const std::string common = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=3 --threads=1 "
                             "--optimizer=nadam --learning_rate=0.001 --validation_split=0.01 "
                             "--lr_schedulers=reduce_lr_every_nepochs --reduce_lr_every_nepochs_nepochs=1 "
                             "--reduce_lr_every_nepochs_factor=0.5 --progress=False";
  Command a = run(common + " --num_epochs=4 --weights_and_bias_filename=" + wa + " --history_file=" + ha);
  INFO(a.err);
  REQUIRE(a.status == 0);
  CHECK(a.out.find("LRScheduler ReduceLREveryNEpochs: setting learning rate to 0.00050000") != std::string::npos);
  Command b1 = run(common + " --num_epochs=2 --checkpoint_file=" + ck);
  INFO(b1.err);
  REQUIRE(b1.status == 0);
  REQUIRE(fs::exists(ck));
  Command b2 = run(common + " --num_epochs=4 --resume_from=" + ck + " --weights_and_bias_filename=" + wb +
                   " --history_file=" + hb);
  INFO(b2.err);
  REQUIRE(b2.status == 0);
  CHECK(b2.out.find("**** Resuming from " + ck + " after epoch 2") != std::string::npos);
  CHECK(slurp(wa) == slurp(wb));  // the NPZ writer is deterministic: same arrays, same bytes
  CHECK(slurp(ha) == slurp(hb));
  const std::string history = slurp(hb);
  CHECK(std::count(history.begin(), history.end(), '\n') == 4);

  // Another batch size, rank count or model is refused with one line naming the option.
  Command bad = run(common + " --num_epochs=4 --batch_size=32 --resume_from=" + ck);
  CHECK(one_line_error(bad));
  CHECK(bad.err.find("--batch_size=64") != std::string::npos);
  Command model = run("train --model=simplecnn --use_synthetic_data=True --resume_from=" + ck);
  CHECK(one_line_error(model));
  CHECK(model.err.find("--model=simplemlp") != std::string::npos);
  const std::string cut = test::temp_path("cli_cut.npz");
  fs::copy_file(ck, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, fs::file_size(cut) - 100);
  Command trunc = run(common + " --num_epochs=4 --resume_from=" + cut);
  CHECK(one_line_error(trunc));
  CHECK(trunc.err.find(cut) != std::string::npos);
  Command nofile = run(common + " --num_epochs=4 --resume_from=/nonexistent/ck.npz");
  CHECK(one_line_error(nofile));
  // An empty scheduler list is accepted (PyDTNN crashed); an unknown one is one line.
  CHECK(run(common + " --num_epochs=1 --lr_schedulers=").status == 0);
  Command unknown = run(common + " --num_epochs=1 --lr_schedulers=early_stopping --early_stopping_metric=val_acc");
  CHECK(one_line_error(unknown));
  CHECK(unknown.err.find("unknown metric 'val_acc'") != std::string::npos);
  for (const auto& f : {wa, wb, ha, hb, ck, cut}) fs::remove(f);
}

TEST_CASE("cli: a job restarted with --resume_from = --checkpoint_file before any checkpoint starts from the beginning",
          "[cli][checkpoint]") {
  const std::string ckpt = test::temp_path("not_yet_ckpt.npz");
  fs::remove(ckpt);
  const test::Command c = test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 "
                                         "--num_epochs=1 --threads=1 --checkpoint_file=" + ckpt + " --resume_from=" + ckpt);
  INFO(c.out << c.err);
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Contains("holds no checkpoint yet (it is --checkpoint_file): training from the beginning"));
  CHECK(fs::exists(ckpt));  // written after the epoch, for the next restart
  // A --resume_from that is not the checkpoint file and does not exist is still an error.
  const test::Command missing = test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 "
                                               "--num_epochs=1 --threads=1 --resume_from=" + ckpt + ".gone");
  CHECK(missing.status != 0);
  CHECK(test::one_line_error(missing));
  fs::remove(ckpt);
}
