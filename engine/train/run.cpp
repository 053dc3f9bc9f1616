#include "train/run.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "backend/cpu/blas.h"
#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "core/clock.h"
#include "core/environment.h"
#include "core/strings.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host.h"
#include "optim/lr_scheduler.h"
#include "parallel/placement.h"
#include "train/batch_shares.h"
#include "train/checkpoint.h"
#include "train/divergence.h"
#include "train/option_table.h"
#include "train/output.h"
#include "train/rank_agreement.h"
#include "trace/profile.h"
#include "trace/trace_output.h"
#include "train/trainer.h"

namespace dtnn {

namespace {

void print_pass(std::ostream& out, const Trainer& trainer, const char* what, const PassResult& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s time: %.4f s\n%s throughput: %.4f samples/s\n", what, r.time_s, what,
                r.samples_per_s());
  out << buf << what << " metrics: " << format_values(trainer, r.values, "test_") << "\n";
}

}  // namespace

namespace {

// GPU: the r-th rank of a node on device r % (devices of the node, or --gpus_per_node); NCCL for the
// gradients when asked. Returns the communicator the run reduces with.
Communicator& start_devices(const TrainOptions& o, Communicator& mpi_comm, std::unique_ptr<Communicator>& nccl) {
  // NCCL reduces among the ranks that start it: all or none. In a job of several commands (a GPU rank beside
  // CPU ranks) a GPU rank with --enable_nccl would meet the CPU ranks' first collective with NCCL's
  // bootstrap broadcast: a truncation error or a hang. Every rank takes part here, CPU ranks included.
  if (mpi_comm.size() > 1) {
    const double mine = o.enable_gpu && o.enable_nccl ? 1.0 : 0.0;
    const bool some = mpi_comm.max(mine) > 0.0, all = mpi_comm.max(-mine) < 0.0;  // max(-x) < 0: every x is 1
    DTNN_CHECK(some == all, "--enable_nccl on some ranks only: NCCL reduces among GPU ranks alone, and a GPU rank "
                            "beside CPU ranks reduces through MPI (leave --enable_nccl off there)");
  }
  if (!o.enable_gpu) return mpi_comm;
  const int gpus = gpu_device_count();
  if (o.gpus_per_node > gpus)
    unsupported("--gpus_per_node=", o.gpus_per_node, ": this node has ", gpus, " GPU", gpus == 1 ? "" : "s");
  const int used = o.gpus_per_node > 0 ? o.gpus_per_node : gpus;
  // NCCL refuses two ranks on one GPU ("invalid usage" from ncclCommInitRank, after its bootstrap): say so first.
  if (o.enable_nccl && mpi_comm.size() > 1 && mpi_comm.node_size() > used)
    unsupported("--enable_nccl needs a GPU per rank: this node runs ", mpi_comm.node_size(), " ranks on ", used,
                " GPU", used == 1 ? "" : "s", " (without --enable_nccl the ranks reduce through MPI)");
  gpu::init(mpi_comm.node_rank() % used);
  gpu::set_allow_tf32(o.allow_tf32);
  if (o.enable_nccl && mpi_comm.size() > 1) nccl = make_nccl_communicator(mpi_comm);
  return nccl ? *nccl : mpi_comm;
}

// The training steps a rank takes in an epoch, as Trainer::run_epoch counts them: the global batches of the
// training set (or --steps_per_epoch); in the model-averaging modes the rank's own batches of its share, or
// --num_batches_per_worker (per block with --dynamic_blocks, whose blocks a rank claims blocks_per_worker of
// on average).
int64_t rank_steps_per_epoch(const TrainOptions& o, int ranks, int64_t train_samples) {
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (o.model_averaging == "none")
    return o.steps_per_epoch > 0 ? o.steps_per_epoch : ceil_div(train_samples, dtnn::global_batch(o, ranks));
  if (o.num_batches_per_worker > 0)
    return o.num_batches_per_worker * (o.dynamic_blocks ? std::max<int64_t>(1, o.blocks_per_worker) : 1);
  if (o.steps_per_epoch > 0) return o.steps_per_epoch;
  return ceil_div(ceil_div(train_samples, ranks), std::max<int64_t>(1, o.batch_size));
}

SchedulerSetup scheduler_setup(const TrainOptions& o, Trainer& trainer, const Splits& splits, Communicator& comm,
                               Model& model, Optimizer& optimizer, std::ostream& out) {
  SchedulerSetup sched;
  sched.value_names = trainer.value_names();
  sched.has_validation = !splits.val.empty();
  sched.steps_per_epoch = rank_steps_per_epoch(o, comm.size(), static_cast<int64_t>(splits.train.size()));
  sched.ranks = comm.size();
  sched.model_name = o.model_name;
  sched.optimizer = &optimizer;
  sched.model = &model;
  sched.root = comm.rank() == 0;
  sched.out = sched.root ? &out : nullptr;
  sched.save_weights = [&model](const std::string& path) { save_weights(model, path); };
  sched.weights_restored = [&trainer] { trainer.weights_replaced(); };
  return sched;
}

// The environment the report records: this process's, with what this run communicated and computed with.
Environment run_environment(const TrainOptions& o, const Communicator& comm) {
  Environment env = environment();
  env.mpi = comm.library_version();  // "none (sequential)" without mpirun
  if (o.enable_gpu) {
    env.cuda += ", " + gpu::device_name() + (o.allow_tf32 ? ", TF32 allowed" : ", TF32 off");
    if (!comm.device_library().empty()) env.cuda += ", gradients by " + comm.device_library();
  }
  return env;
}

// The epoch loop: epochs after the checkpointed ones, LR schedulers after each (they may stop training),
// rank 0 rewriting --checkpoint_file. Returns the number of epochs run; stops after an epoch whose training
// loss or weights are not finite, with run.diverged saying so.
int train_epochs(const TrainOptions& o, Trainer& trainer, const Splits& splits, LRSchedulers& schedulers, Model& model,
                 Optimizer& optimizer, Communicator& comm, CheckpointState& progress, RunSummary& run,
                 std::ostream& out) {
  const bool root = comm.rank() == 0;
  int epochs_run = 0;
  for (int epoch = static_cast<int>(progress.epoch) + 1; epoch <= o.num_epochs && !progress.stopped; ++epoch) {
    EpochRecord rec = trainer.run_epoch(epoch, static_cast<int>(o.num_epochs), splits);
    // The loss is allreduced, so every rank stops here. Neither the schedulers (which may save weights) nor
    // the checkpoint see this state: --checkpoint_file keeps the last finite epoch. The loss is computed
    // before each step's update, so the epoch's last updates may leave non-finite weights behind a finite
    // loss (--learning_rate=3e38 on one step): the weights are checked too (data-parallel ranks decide
    // together and learn whether their copies still agree; agree_on_divergence judges model averaging's merge).
    const double loss = rec.train.values[0];
    const bool finite_weights = o.model_averaging != "none" ||
                                (comm.size() > 1 ? weights_finite_on_every_rank(comm, model, epoch, run, root ? &out : nullptr)
                                                 : weights_finite(model));
    if (!std::isfinite(loss) || !finite_weights) {
      run.diverged = !std::isfinite(loss) ? "diverged: the training loss (" + trainer.value_names()[0] + ") is " +
                                                (std::isnan(loss) ? "nan" : format_double(loss)) + " after epoch "
                                          : "diverged: the weights are not finite after epoch ";
      run.diverged += std::to_string(epoch) + " (learning rate " + format_double(rec.learning_rate) + ")";
      run.train_time_s += rec.train.time_s;
      run.train_samples += rec.train.samples;
      run.epochs.push_back(std::move(rec));
      return epochs_run + 1;
    }
    if (root && rec.averaging) print_averaging(out, "  averaging", *rec.averaging);
    if (root && rec.val) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "  validation (%lld samples): ", static_cast<long long>(rec.val->samples));
      out << buf << format_values(trainer, rec.val->values, "val_") << "\n";
    }
    schedulers.on_epoch_end(rec.train.values, rec.val ? &rec.val->values : nullptr);
    run.train_time_s += rec.train.time_s;
    run.train_samples += rec.train.samples;
    run.epochs.push_back(std::move(rec));
    ++epochs_run;
    progress.epoch = epoch;
    progress.stopped = schedulers.stop_training();
    if (root && !o.checkpoint_file.empty()) {
      progress.epochs = run.epochs;
      save_checkpoint(o.checkpoint_file, model, optimizer, schedulers, o, comm.size(), progress);
    }
  }
  return epochs_run;
}

// --tracing: a buffer for every training step of the run (bounded), and what the writers name events with.
std::unique_ptr<Tracer> make_tracer(const TrainOptions& o, const Model& model, const Trainer& trainer,
                                    const SchedulerSetup& sched, int ranks) {
  // 80 MiB of events a rank; later ones are counted as dropped. Rank 0 gathers every rank's in one MPI_Gatherv
  // of at most INT_MAX bytes (mpi_communicator.cpp): past ~25 ranks the share a rank may keep is smaller.
  constexpr int64_t kMaxEvents = int64_t{1} << 21;
  const int64_t gather_share = (int64_t{INT_MAX} - (int64_t{1} << 20)) / (int64_t{ranks} * sizeof(TraceEvent));
  const int64_t per_step = trace_events_per_step(static_cast<int64_t>(model.num_layers()),
                                                 static_cast<int64_t>(trainer.distribution().buckets().size()),
                                                 model.trace_op_events());
  // A rank's training steps per epoch (sched, rank_steps_per_epoch above) at most: with --dynamic_blocks one
  // rank may claim every block, each block's last batch possibly short.
  int64_t per_epoch = std::max<int64_t>(1, sched.steps_per_epoch);
  if (o.model_averaging != "none")
    per_epoch = o.dynamic_blocks ? per_epoch * ranks + int64_t{ranks} * std::max<int64_t>(1, o.blocks_per_worker)
                                 : per_epoch + 1;
  const TraceSteps range = parse_trace_steps(o.trace_steps);
  const int64_t steps = range.count(per_epoch * std::max<int64_t>(1, o.num_epochs));
  return std::make_unique<Tracer>(std::min({kMaxEvents, gather_share, per_step * steps + 4 * (o.num_epochs + 2)}),
                                  range);
}

// Rank 0: every --tracer_output, and the line saying where. A write that fails is a warning on stderr and
// the report's trace.write_error: the run's weights and report are not lost to it.
void write_traces(const TrainOptions& o, const Tracer& tracer, const std::vector<RankTrace>& traces,
                  const TraceNames& names, const ClockSync& clocks, RunSummary& run, std::ostream& out) {
  for (const std::string& output : trace_outputs(o.tracer_output)) {
    try {
      write_trace(output, traces, names, clocks);
      for (const std::string& file : trace_files(output)) run.trace_files.push_back(file);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      print_error_line(std::string("warning: the trace was not written: ") + what);
      run.trace_write_error += (run.trace_write_error.empty() ? "" : "; ") + what;
    }
  }
  out << "**** Trace: " << o.tracer_output << " (" << tracer.size() << " events on rank 0"
      << (tracer.dropped() ? ", " + std::to_string(tracer.dropped()) + " dropped: the buffer was full" : "")
      << "; clock skew between ranks below " << format_double(1e6 * clocks.residual_s) << " us)"
      << (run.trace_write_error.empty() ? "" : ": NOT WRITTEN (see above)") << "\n";
}

TraceNames trace_names(const Model& model, const Trainer& trainer) {
  TraceNames n;
  for (const Layer* l : model.all_layers()) n.layers.push_back({l->id, l->type(), l->algorithm_name()});
  for (const GradientBucket& b : trainer.distribution().buckets())
    n.bucket_layer.push_back(b.ready_after < model.num_layers() ? model.layer(b.ready_after).id : 0);
  for (size_t i = model.num_layers(); i-- > 1;)
    if (model.param_begin(i + 1) > model.param_begin(i)) {
      n.top_layer = model.layer(i).id;
      break;
    }
  n.host = host_name();
  n.per_bucket = trainer.distribution().overlapped();
  n.gpu = model.device() == Device::gpu;
  return n;
}

void print_done(std::ostream& out, const RunSummary& run, int epochs_run) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "**** Done...\nTraining time: %.4f s\nTime per epoch: %.4f s\nTraining throughput: %.4f samples/s\n"
                "Training time (training loops only): %.4f s\n",
                run.wall_time_s, epochs_run == 0 ? 0.0 : run.wall_time_s / epochs_run,
                run.train_time_s > 0 ? run.train_samples / run.train_time_s : 0.0, run.train_time_s);
  out << buf;
}

// A run's parts, built in this order and destroyed in the reverse one (the trainer before the model and data
// it refers to, NCCL's communicator last).
struct RunParts {
  std::unique_ptr<Communicator> nccl;
  std::unique_ptr<Model> model;
  std::unique_ptr<Dataset> data;
  bool loaded = false;  // rank 0 read --weights_and_bias_filename
  TrainerSetup setup;
  std::unique_ptr<LRSchedulers> schedulers;
  std::unique_ptr<Tracer> tracer;
};

// The defaults and scalings the ranks and the machine decide: threads, denormals, SGD's learning rate, the
// per-rank batch of strong scaling.
void settle_options(TrainOptions& o, const Communicator& mpi_comm, const Communicator& comm) {
  if (o.threads == 0) o.threads = default_threads(mpi_comm.ranks_sharing_cores());
  cpu::set_threads(o.threads);
  cpu::set_flush_denormals(o.flush_denormals);
  // PyDTNN scales only SGD's rate, and only as the global batch grows with the ranks (weak scaling): with
  // --global_batch_size the batch, hence the rate, is the same for every rank count. Model averaging trains
  // --batch_size per rank locally: no scaling either.
  if (o.parallel == "data" && o.optimizer.name == "sgd" && o.learning_rate_scaling && o.global_batch_size == 0 &&
      o.model_averaging == "none")
    o.optimizer.learning_rate *= comm.size();
  if (o.global_batch_size > 0) {  // strong scaling: buffers for the largest share of the global batch
    DTNN_CHECK(o.global_batch_size >= comm.size(), "--global_batch_size=", o.global_batch_size, " is smaller than the ",
               comm.size(), " ranks: every rank needs at least one sample per batch");
    o.batch_size = (o.global_batch_size + comm.size() - 1) / comm.size();
  }
}

// The model and the dataset, rank 0's weights (from --weights_and_bias_filename when it exists) on every rank.
void build_model_and_data(const TrainOptions& o, const TrainOptions& given, Communicator& comm, RunParts& parts,
                          std::ostream& out) {
  const bool root = comm.rank() == 0;
  parts.model = build_training_model(o, comm);
  Model& model = *parts.model;
  if (root) print_model_table(out, model);
  if (root) print_model_memory(out, model);
  if (root && o.enable_gpu)
    out << "**** GPU: " << gpu::device_name() << ", model arena " << (model.device_bytes() >> 20) << " MiB\n";
  if (root) out << "**** Loading " << o.dataset_name << " dataset...\n";
  parts.data = open_dataset(o, model);
  parts.loaded = !o.weights_and_bias_filename.empty() && std::filesystem::exists(o.weights_and_bias_filename);
  if (parts.loaded && root) load_weights(model, o.weights_and_bias_filename);
  if (!o.weights_and_bias_filename.empty() && !parts.loaded && root)
    out << "**** Weights file " << o.weights_and_bias_filename
        << " does not exist yet: starting from the initial weights; it will be written after training\n";
  check_ranks_agree(comm, model, o, given, *parts.data);
  share_root_weights(model, comm);
}

// The trainer, its progress line, the LR schedulers and the tracer.
void build_training(const TrainOptions& o, Communicator& comm, RunParts& parts, std::ostream& out) {
  parts.setup = build_trainer(o, *parts.model, *parts.data, comm);
  Trainer& trainer = *parts.setup.trainer;
  // The live bar only where both outputs are terminals: mpirun gives every rank a pseudo-terminal for stdout
  // whatever its own output is (`mpirun ... > log` filled the log with the bar's \r and ESC[K), and a pipe for
  // stderr.
  const bool terminal = isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1;
  if (comm.rank() == 0) trainer.set_progress(make_progress_printer(out, o.progress && terminal, trainer));
  const SchedulerSetup sched =
      scheduler_setup(o, trainer, parts.setup.splits, comm, *parts.model, *parts.setup.optimizer, out);
  parts.schedulers = std::make_unique<LRSchedulers>(o.lr_schedulers, sched);
  if (o.tracing || o.profile) parts.tracer = make_tracer(o, *parts.model, trainer, sched, comm.size());
  trainer.set_tracer(parts.tracer.get());
  LRSchedulers& schedulers = *parts.schedulers;
  if (!schedulers.empty()) trainer.set_batch_begin([&schedulers] { schedulers.on_batch_begin(); });
  trainer.set_validate_every_rank(schedulers.watch_validation());
}

// --resume_from: the checkpoint's weights, optimizer, schedulers and history; else a fresh start's record.
CheckpointState resume(const TrainOptions& o, Communicator& comm, RunParts& parts, std::ostream& out) {
  const bool root = comm.rank() == 0;
  CheckpointState progress;
  progress.initial_weights = parts.loaded ? o.weights_and_bias_filename : std::string();
  if (o.resume_from.empty()) return progress;
  // A preempted job restarted with one command line (--resume_from = --checkpoint_file) may have been killed
  // before its first epoch wrote the file: nothing to resume, so it starts from the beginning.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!o.checkpoint_file.empty() && !fs::exists(o.resume_from, ec) &&
      fs::absolute(o.resume_from, ec).lexically_normal() == fs::absolute(o.checkpoint_file, ec).lexically_normal()) {
    if (comm.rank() == 0)
      out << "**** " << o.resume_from << " holds no checkpoint yet (it is --checkpoint_file): training from the "
          << "beginning\n";
    return progress;
  }
  check_same_checkpoint(comm, o.resume_from);  // before loading: a refusal names the files, not a later hang
  Optimizer& optimizer = *parts.setup.optimizer;
  progress = load_checkpoint(o.resume_from, *parts.model, optimizer, *parts.schedulers, o, comm.size(),
                             root ? &out : nullptr);
  // Stored as a run of --num_epochs, it would have trained more: refused (every rank reads the same file).
  DTNN_CHECK(o.evaluate_only || progress.epoch <= o.num_epochs, o.resume_from, ": checkpoint holds ", progress.epoch,
             " epochs, more than --num_epochs=", o.num_epochs,
             " (a resumed run trains up to --num_epochs in all; --evaluate_only evaluates it)");
  if (root)
    out << "**** Resuming from " << o.resume_from << " after epoch " << progress.epoch << " (learning rate "
        << optimizer.learning_rate() << ")\n";
  if (root && progress.stopped) out << "**** The checkpointed run was stopped by an LR scheduler: nothing more to train\n";
  return progress;
}

// What the report records of the run before it trains: its options, ranks, threads, placement and start.
RunSummary start_summary(const TrainOptions& o, const TrainOptions& given, Communicator& mpi_comm,
                         const Communicator& comm, const CheckpointState& progress) {
  RunSummary run;
  run.options_given = options_list(given);
  run.ranks = comm.size();
  run.threads = o.threads;
  std::vector<std::string> hosts;  // where the ranks run, as they see it (each rank's host name, to rank 0)
  mpi_comm.gather_bytes(host_name(), hosts);
  if (comm.rank() == 0) run.placement = detect_placement(hosts);
  run.epochs = progress.epochs;  // a resumed run's history and report list every epoch
  run.start.initial_weights = progress.initial_weights;  // the checkpoint's record when resumed
  run.start.resumed_from = o.resume_from;
  run.start.resumed_after_epoch = progress.epoch;
  run.start.evaluate_only = o.evaluate_only;
  return run;
}

// The epochs and the final merge, timed between two barriers; returns the epochs run. A rank that throws
// mid-training (a full disk under a scheduler's weights file, a loader's I/O error) must stop the job from
// here, while model and trainer still live: unwinding would wait for the other ranks, which go on training.
// A GPU rank's peer NCCL kernel waits for it and its unwinding for that kernel (the side stream's
// synchronise, the arena's cudaFree); the asynchronous averaging modes' MPI window and block counter are
// freed collectively by their destructors. cli.cpp's handler, which aborts the job, would never be reached.
int train(const TrainOptions& o, Communicator& comm, Communicator& mpi_comm, RunParts& parts,
          CheckpointState& progress, RunSummary& run, std::ostream& out) {
  Trainer& trainer = *parts.setup.trainer;
  comm.barrier();
  const double t0 = now_s();
  int epochs_run = 0;
  try {
    epochs_run = train_epochs(o, trainer, parts.setup.splits, *parts.schedulers, *parts.model,
                              *parts.setup.optimizer, comm, progress, run, out);
  } catch (const std::exception& e) {
    if (comm.size() > 1) {
      const std::string what = dynamic_cast<const std::bad_alloc*>(&e) ? kOutOfMemoryLine : e.what();
      print_error_line(what);
      mpi_comm.abort(dynamic_cast<const Unsupported*>(&e) ? kUnsupportedExit : 1);
    }
    throw;
  }
  run.averaging = trainer.finish_training();  // the final model is the merged one (model averaging)
  if (run.averaging && comm.size() > 1) agree_on_divergence(comm, *parts.model, run);
  comm.barrier();
  run.wall_time_s = now_s() - t0;
  return epochs_run;
}

// Rank 0's lines after training: merges, totals, rank shares, layer times, communication.
void print_training_end(const TrainOptions& o, const Communicator& comm, const RunParts& parts, const RunSummary& run,
                        int epochs_run, std::ostream& out) {
  const Trainer& trainer = *parts.setup.trainer;
  if (run.averaging) print_averaging(out, "**** Model averaging", *run.averaging);
  print_done(out, run, epochs_run);
  if (trainer.shares().uneven())
    out << "Rank batch shares (" << trainer.shares().mode() << "): "
        << trainer.shares().format(dtnn::global_batch(o, comm.size())) << " samples of each global batch of "
        << dtnn::global_batch(o, comm.size()) << "\n";
  if (epochs_run > 0 && (!o.enable_gpu || o.gpu_layer_times)) print_layer_times(out, *parts.model);
  print_communication(out, run.epochs);
}

// After training: traces gathered, the test pass (finite weights whose test loss is NaN or infinite, from
// weights so large that activations overflow, are no result either), then what rank 0 writes. The trace
// files last: a trace that cannot be written (a full disk, a path gone) costs the trace, not the trained
// weights, history or report (write_traces warns and the report says why). Returns the exit code.
int finish_run(const TrainOptions& o, Communicator& comm, RunParts& parts, const std::vector<int64_t>& test_indices,
               const Environment& env, const ClockSync& clocks, RunSummary& run, int epochs_run, std::ostream& out) {
  const bool root = comm.rank() == 0;
  Trainer& trainer = *parts.setup.trainer;
  Tracer* tracer = parts.tracer.get();
  trainer.flush_trace();  // GPU: the device events still pending
  if (tracer && o.profile) print_profile(out, *tracer, comm);
  TraceNames names;
  std::vector<RankTrace> traces;
  if (tracer && o.tracing) {
    names = trace_names(*parts.model, trainer);
    traces = gather_traces(*tracer, clocks, names.host, comm);
    if (root) run.trace = summarize_traces(traces, names, clocks);
  }
  if (run.diverged.empty() && !test_indices.empty() && o.evaluate_on_test) {
    if (root) out << "**** Evaluating on test dataset...\n";
    run.test = trainer.evaluate(Pool::test, test_indices, "Testing");
    if (root) print_pass(out, trainer, "Testing", *run.test);
    const double loss = run.test->values[0];
    if (!std::isfinite(loss))
      run.diverged = "diverged: the test loss (" + trainer.value_names()[0] + ") is " +
                     (std::isnan(loss) ? "nan" : format_double(loss)) + " with finite weights";
  }
  run.memory = gather_memory(comm);  // after the test pass: its buffers count
  const bool traced = root && tracer && o.tracing;
  if (!run.diverged.empty()) {
    if (traced) write_traces(o, *tracer, traces, names, clocks, run, out);
    return finish_diverged(o, env, *parts.model, trainer, run, epochs_run, root);
  }
  if (root && !o.weights_and_bias_filename.empty()) save_weights(*parts.model, o.weights_and_bias_filename);
  if (root && !o.history_file.empty()) write_history(o.history_file, run);
  if (traced) write_traces(o, *tracer, traces, names, clocks, run, out);
  if (root && !o.report.empty()) write_report(o.report, o, env, *parts.model, trainer, run);
  return 0;
}

std::vector<int64_t> test_samples(const TrainOptions& o, const Dataset& data, int ranks) {
  std::vector<int64_t> indices(static_cast<size_t>(limited_count(data, Pool::test, step_capped_pools(o, ranks))));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
  return indices;
}

}  // namespace

int run_training(TrainOptions o, Communicator& mpi_comm, std::ostream& out) {
  validate_run(o, mpi_comm);
  const TrainOptions given = o;  // before the defaults and scalings below: what check_ranks_agree names
  RunParts parts;
  Communicator& comm = start_devices(o, mpi_comm, parts.nccl);
  const bool root = comm.rank() == 0;
  settle_options(o, mpi_comm, comm);
  build_model_and_data(o, given, comm, parts, out);
  build_training(o, comm, parts, out);
  Trainer& trainer = *parts.setup.trainer;
  CheckpointState progress = resume(o, comm, parts, out);
  if (root) print_parameters(out, o);
  const std::vector<int64_t> test_indices = test_samples(o, *parts.data, comm.size());
  const Environment env = run_environment(o, comm);
  RunSummary run = start_summary(o, given, mpi_comm, comm, progress);
  if (o.evaluate || o.evaluate_only) {
    if (root) out << "**** Evaluating on test dataset...\n";
    PassResult r = trainer.evaluate(Pool::test, test_indices, "Testing");
    if (o.evaluate_only) {
      if (root) print_pass(out, trainer, "Testing", r);
      run.test = r;
      run.memory = gather_memory(comm);
      if (root && !o.report.empty()) write_report(o.report, o, env, *parts.model, trainer, run);
      return 0;
    }
  }
  parts.model->reset_layer_times();
  if (root && uneven_shares_with_local_bn(o, comm, *parts.model))
    out << "**** Note: --rank_batch_shares=" << o.rank_batch_shares << " with per-rank BatchNormalization: each rank"
        << " normalises by its own share's statistics, so the update is not exactly the global batch's"
        << " (--sync_batchnorm makes it so)\n";
  if (root) out << "**** Training...\n";
  const ClockSync clocks = parts.tracer ? sync_clocks(comm) : ClockSync{};
  const int epochs_run = train(o, comm, mpi_comm, parts, progress, run, out);
  if (root) print_training_end(o, comm, parts, run, epochs_run, out);
  return finish_run(o, comm, parts, test_indices, env, clocks, run, epochs_run, out);
}

}  // namespace dtnn
