// The stages run_training (train/run.h) builds a run from: the thread count, option checks that need the
// ranks or the file system, the model, the dataset, the trainer. Tests call them too instead of copying them.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "backend/cpu/blas.h"
#include "backend/gpu.h"
#include "core/error.h"
#include "core/file_io.h"
#include "data/dataset.h"
#include "trace/trace_output.h"
#include "train/batch_shares.h"
#include "train/option_table.h"
#include "train/run.h"

namespace dtnn {

namespace {

// A thread count from the launcher's environment variable `name`: its leading integer when positive (a list such
// as OMP_NUM_THREADS=4,2 gives its first level), else none (0). More than a rank may run is refused, not capped:
// the launcher asked for something this rank will not do.
int env_threads(const char* name) {
  const char* env = std::getenv(name);
  if (!env) return 0;
  char* end = nullptr;
  errno = 0;
  const long t = std::strtol(env, &end, 10);
  if (end == env || t <= 0) return 0;
  DTNN_CHECK(errno != ERANGE && t <= cpu::kMaxThreads, name, "=", env, ": more threads than a rank runs (at most ",
             cpu::kMaxThreads, "; --threads=N sets them)");
  return static_cast<int>(t);
}

}  // namespace

int default_threads(int ranks_sharing_cores) {
  if (const int t = env_threads("OMP_NUM_THREADS")) return t;
  if (const int t = env_threads("SLURM_CPUS_PER_TASK")) return t;  // srun -c N: Slurm gave this task N cores
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const int online = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int allowed = ::sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : online;
  // A rank bound to cores of its own (mpirun's per-core binding for -np <= 2, srun with task/affinity) owns
  // them; ranks sharing one mask (unbound, one container's cpuset, a per-socket binding) split it, so that
  // no core runs two ranks' threads.
  return std::clamp(allowed / std::max(1, ranks_sharing_cores), 1, cpu::kMaxThreads);
}

void validate_run(const TrainOptions& o, const Communicator& comm) {
  validate_options(o);
  DTNN_CHECK(o.mpi_processes == 0 || o.mpi_processes == comm.size(), "--mpi_processes=", o.mpi_processes,
             " but ", comm.size(), " rank", comm.size() == 1 ? " was" : "s were", " started");
  DTNN_CHECK(!o.evaluate_only || o.weights_and_bias_filename.empty() ||
                 std::filesystem::exists(o.weights_and_bias_filename),
             "--evaluate_only: weights file ", o.weights_and_bias_filename, " does not exist");
  // Output files are checked before training, not found unwritable after it.
  check_outputs_writable({{"--report", o.report},
                          {"--history_file", o.history_file},
                          {"--weights_and_bias_filename", o.weights_and_bias_filename},
                          {"--checkpoint_file", o.checkpoint_file},
                          {"--early_stopping_weights_filename", o.lr_schedulers.early_stopping_weights_filename}});
  if (o.tracing)
    for (const std::string& output : trace_outputs(o.tracer_output))
      for (const std::string& path : trace_files(output)) {  // Paraver: the three files of X.prv or DIR
        const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
        DTNN_CHECK(std::filesystem::is_directory(dir), "--tracer_output=", output, ": directory ", dir.string(),
                   " does not exist");
        const std::string why = output_path_problem(path);
        DTNN_CHECK(why.empty(), "--tracer_output=", output, ": ", path == output ? "" : path + " ", why);
      }
  // No output may replace an input or another output (--report=w.npz beside --weights_and_bias_filename=w.npz
  // would leave a JSON file where the weights were). --resume_from may be --checkpoint_file: a preempted run
  // restarted with one command line reads its checkpoint, then rewrites it after each epoch.
  std::vector<CommandFile> files = {
      {"--report", o.report, true},
      {"--history_file", o.history_file, true},
      {"--weights_and_bias_filename", o.weights_and_bias_filename, true},
      {"--checkpoint_file", o.checkpoint_file, true},
      {"--early_stopping_weights_filename", o.lr_schedulers.early_stopping_weights_filename, true}};
  if (!o.resume_from.empty() && (o.checkpoint_file.empty() || !same_file(o.resume_from, o.checkpoint_file)))
    files.push_back({"--resume_from", o.resume_from, false});
  if (o.tracing)
    for (const std::string& output : trace_outputs(o.tracer_output))
      for (const std::string& path : trace_files(output)) files.push_back({"--tracer_output", path, true});
  check_files_distinct(files);
  const SlowRank slow = parse_slow_rank(o.straggler_factor);
  DTNN_CHECK(slow.rank < comm.size(), "--straggler_factor=", o.straggler_factor, ": rank ", slow.rank,
             " does not exist (", comm.size(), " rank", comm.size() == 1 ? "" : "s", ")");
  if (!o.rank_batch_shares.empty()) {
    const BatchShares shares = parse_batch_shares(o.rank_batch_shares);
    DTNN_CHECK(shares.automatic || static_cast<int>(shares.weights.size()) == comm.size(), "--rank_batch_shares=",
               o.rank_batch_shares, ": ", shares.weights.size(), " weight", shares.weights.size() == 1 ? "" : "s",
               " for ", comm.size(), " rank", comm.size() == 1 ? "" : "s", " (one per rank)");
    DTNN_CHECK(global_batch(o, comm.size()) >= comm.size(), "--rank_batch_shares: a global batch of ",
               global_batch(o, comm.size()), " cannot give each of ", comm.size(), " ranks a sample");
  }
  const Straggler straggler = parse_straggler(o.straggler_ms);
  DTNN_CHECK(straggler.rank < comm.size(), "--straggler_ms=", o.straggler_ms, ": rank ", straggler.rank,
             " does not exist (", comm.size(), " rank", comm.size() == 1 ? "" : "s", ")");
  if (o.enable_gpu) require_gpu();
}

bool uneven_shares_with_local_bn(const TrainOptions& o, const Communicator& comm, const Model& model) {
  if (o.rank_batch_shares.empty() || o.model_averaging != "none" || o.sync_batchnorm || comm.size() == 1) return false;
  for (const Layer* layer : model.all_layers())
    if (layer->type().find("BatchNormalization") != std::string::npos) return true;
  return false;
}

std::unique_ptr<Model> build_training_model(const TrainOptions& o, Communicator& comm) {
  auto model = create_model(o.model_name);
  if (o.resize > 0) model->resize_input(o.resize, o.resize);
  FusionOptions fusion;
  fusion.bn_relu = o.enable_fused_bn_relu;
  fusion.conv_relu = o.enable_fused_conv_relu;
  fusion.conv_bn = o.enable_fused_conv_bn;
  fusion.conv_bn_relu = o.enable_fused_conv_bn_relu;
  fusion.add_relu = o.enable_fused_add_relu;
  model->fuse(fusion);
  BuildContext ctx;
  ctx.layout = parse_layout(resolved_tensor_format(o));
  // Uneven shares (--rank_batch_shares): buffers for the most this rank takes (auto: the whole global batch).
  ctx.max_batch = o.rank_batch_shares.empty() || o.model_averaging != "none"
                      ? o.batch_size
                      : std::max(o.batch_size, largest_rank_batch(global_batch(o, comm.size()),
                                                                  parse_batch_shares(o.rank_batch_shares),
                                                                  comm.size(), comm.rank()));
  ctx.conv_algo = o.conv_algo;
  if (o.enable_gpu && o.conv_algo == "auto" && !o.enable_cudnn_auto_conv_alg) ctx.conv_algo = "gpu.cudnn.pydtnn_fixed";
  ctx.bf16 = o.dtype == "bfloat16";  // resolve_options accepted it: a CPU run with bf16 kernels
  if (ctx.bf16) ctx.conv_algo = "cpu.onednn_bf16";
  ctx.comm = &comm;
  ctx.sync_batchnorm = o.sync_batchnorm;
  ctx.device = o.enable_gpu ? Device::gpu : Device::cpu;
  model->build(ctx, o.seed, Trainer::reduce_tail_floats(o));
  if (o.enable_gpu) model->set_time_layers(o.gpu_layer_times);
  model->seed_layers(o.seed, comm.rank());
  return model;
}

TrainerSetup build_trainer(const TrainOptions& o, Model& model, const Dataset& data, Communicator& comm) {
  TrainerSetup s;
  s.optimizer = make_optimizer(o.optimizer, model.slab_size(), o.enable_gpu ? Device::gpu : Device::cpu);
  s.trainer = std::make_unique<Trainer>(model, data, comm, *s.optimizer, o);
  s.splits = make_splits(data, o.validation_split, o.test_as_validation, o.seed, step_capped_pools(o, comm.size()));
  return s;
}

PoolLimits step_capped_pools(const TrainOptions& o, int ranks) {
  if (o.dataset_name != "imagenet" || o.steps_per_epoch <= 0) return {};
  const int64_t samples = global_batch(o, ranks) * o.steps_per_epoch;
  return {std::max<int64_t>(1, samples / 1251) * 1251, std::max<int64_t>(1, samples / 390) * 390};
}

std::unique_ptr<Dataset> open_dataset(const TrainOptions& o, const Model& model) {
  DatasetShape shape = dataset_shape(o.dataset_name);
  const Shape in = model.input_shape();  // per sample: (h, w, c) in NHWC, (c, h, w) in NCHW
  const bool nchw = model.layout() == Layout::nchw;
  if (in.rank() == 3 && !o.pad_to_cifar) {  // synthetic data takes the model's image size, not its channels
    const int64_t c = nchw ? in[0] : in[2];
    DTNN_CHECK(c == shape.c, "model ", o.model_name, " takes ", c, "-channel images, dataset ", shape.name, " has ",
               shape.c, "-channel ", shape.h, "x", shape.w, " images",
               shape.name == "mnist" && c == 3 ? " (--pad_to_cifar makes MNIST files 32x32x3)" : "");
  }
  if (in.rank() == 3 && (o.use_synthetic_data || shape.name == "imagenet")) {  // --resize: the model's input is resized
    shape.h = nchw ? in[1] : in[0];
    shape.w = nchw ? in[2] : in[1];
  }
  DTNN_CHECK(!o.pad_to_cifar || (shape.name == "mnist" && !o.use_synthetic_data),
             "--pad_to_cifar applies to MNIST-format files (--dataset=mnist), not to ", o.use_synthetic_data ? "synthetic " : "",
             shape.name, " data");
  if (o.use_synthetic_data) return make_synthetic(shape, o.seed);
  DTNN_CHECK(!o.dataset_train_path.empty(), "--dataset_train_path is required unless --use_synthetic_data=True");
  const std::string& train = o.dataset_train_path;
  const std::string& test = o.dataset_test_path.empty() ? o.dataset_train_path : o.dataset_test_path;
  if (shape.name == "cifar10") return open_cifar10(train, test);
  if (shape.name == "imagenet") return open_imagenet(train, test, shape.h, shape.w);  // test: validate_options
  // The loader asks for up to the model's batch: more than --batch_size for a rank with a larger share.
  if (o.pad_to_cifar) return pad_to_cifar(open_mnist(train, test), model.max_batch());
  if (o.resize > 0) return resize_images(open_mnist(train, test), o.resize, o.resize, model.max_batch());
  return open_mnist(train, test);
}

}  // namespace dtnn
