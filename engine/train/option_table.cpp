// The rows of the `dtnn train` option table (option_table.h) and the value conversions every consumer
// shares. Rows are in the order of the "Parameters" dump and the run report.
#include "train/option_table.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "backend/cpu/blas.h"
#include "conv/conv_algorithm.h"
#include "trace/tracer.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/dataset.h"
#include "models/model.h"
#include "train/batch_shares.h"
#include "train/losses.h"

namespace dtnn {
namespace {

// ---- checks of values the table cannot list ----------------------------------------------------------

std::string check_model(const std::string& v) {
  std::vector<std::string> known;
  for (const ModelInfo& info : model_zoo()) {
    if (v == info.name) return v;
    known.push_back(info.name);
  }
  fail("unknown model '", v, "' (known: ", join(known, ", "), ")");
}

// The registry's full name, so "im2col_gemm" and "cpu.im2col_gemm" are one value (and one trial key).
// GPU names are known in CPU-only builds too: such a run is refused when it starts, not when it is parsed.
std::string check_conv_algo(const std::string& v) {
  if (v == "auto" || v == "best_of") return v;
  return canonical_conv_algorithm_name(v);
}

std::string check_dataset(const std::string& v) { return dataset_shape(v).name; }

std::string check_trace_steps(const std::string& v) {
  parse_trace_steps(v);
  return v;
}

std::string check_straggler(const std::string& v) {
  parse_straggler(v);
  return v;
}

std::string check_slow_rank(const std::string& v) {
  parse_slow_rank(v);
  return v;
}

std::string check_batch_shares(const std::string& v) {
  parse_batch_shares(v);
  return v;
}

std::string check_metrics(const std::string& v) {
  std::string list;  // PyDTNN strips the spaces ("categorical_accuracy, categorical_mse")
  for (const char c : v)
    if (!std::isspace(static_cast<unsigned char>(c))) list += c;
  parse_metrics(list);
  return list;
}

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"categorical_cross_entropy", "binary_cross_entropy"};
  return names;
}
bool is_loss(const std::string& name) {
  return std::find(loss_names().begin(), loss_names().end(), name) != loss_names().end();
}

// One loss, or PyDTNN's older form: a comma list of metrics and exactly one loss
// ("categorical_accuracy,categorical_cross_entropy", PyDTNN's README), split by resolve_options().
std::string check_loss(const std::string& v) {
  if (is_loss(v)) return v;
  if (v.find(',') == std::string::npos)
    fail("expected one of ", join(loss_names(), ", "), " (got '", v, "')");
  int losses = 0;
  std::string metrics;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t comma = std::min(v.find(',', start), v.size());
    const std::string item = v.substr(start, comma - start);
    start = comma + 1;
    if (is_loss(item)) ++losses;
    else metrics += (metrics.empty() ? "" : ",") + item;
  }
  DTNN_CHECK(losses == 1, "a list of metrics and losses needs exactly one loss of ", join(loss_names(), ", "),
             " (got '", v, "')");
  parse_metrics(metrics);
  return v;
}

std::string check_lr_schedulers(const std::string& v) {
  if (v == "none") return "";  // how --help shows the default
  size_t start = 0;
  while (start < v.size()) {
    const size_t comma = std::min(v.find(',', start), v.size());
    const std::string name = v.substr(start, comma - start);
    start = comma + 1;
    const auto& known = lr_scheduler_names();
    DTNN_CHECK(name.empty() || std::find(known.begin(), known.end(), name) != known.end(), "unknown scheduler '",
               name, "' (known: ", join(known, ", "), ")");
  }
  return v;
}

// ---- row builders -------------------------------------------------------------------------------------

constexpr uint32_t M = kOptMatrix, MM = kOptMustMatch, T = kOptTorch, P = kOptPyDTNN, PL = kOptPlanned,
                   R = kOptRunner, A = kOptAlias;
constexpr int64_t kMaxThreads = cpu::kMaxThreads;
constexpr int64_t kBig = int64_t{1} << 40;  // sizes and counts: far past anything real, no overflow in products

#define DTNN_FIELD(member) [](TrainOptions& o) -> OptionField { return &o.member; }

OptionSpec integer(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, int64_t lo, int64_t hi,
                   const char* help) {
  OptionSpec s{name, OptionKind::integer, f, flags, help};
  s.imin = lo, s.imax = hi;
  return s;
}
enum Ends { kClosed = 0, kOpenBelow = 1, kOpenAbove = 2 };  // which bounds of a number row are excluded
OptionSpec number(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, double lo, double hi,
                  const char* help, int ends = kClosed) {
  OptionSpec s{name, OptionKind::number, f, flags, help};
  s.dmin = lo, s.dmax = hi, s.dmin_open = ends & kOpenBelow, s.dmax_open = ends & kOpenAbove;
  return s;
}
OptionSpec boolean(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, const char* help) {
  return {name, OptionKind::boolean, f, flags, help};
}
OptionSpec text(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, const char* help,
                std::string (*canonical)(const std::string&) = nullptr) {
  OptionSpec s{name, OptionKind::text, f, flags, help};
  s.canonical = canonical;
  return s;
}
OptionSpec path(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, const char* help) {
  return {name, OptionKind::path, f, flags, help};
}
OptionSpec choice(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags, std::vector<std::string> list,
                  const char* help) {
  OptionSpec s{name, OptionKind::choice, f, flags, help};
  s.choices = std::move(list);
  return s;
}
OptionSpec checked(const char* name, OptionField (*f)(TrainOptions&), uint32_t flags,
                   std::string (*canonical)(const std::string&), const char* help) {
  OptionSpec s{name, OptionKind::choice, f, flags, help};
  s.canonical = canonical;
  return s;
}
[[maybe_unused]] OptionSpec planned(OptionSpec s, const char* why) {  // none now; kept for the next option parsed before it works
  s.flags |= PL;
  s.why_not = why;
  return s;
}

// The model, the run's length, evaluation, weights and history files, layout, algorithms and fusions.
std::vector<OptionSpec> model_and_run_options() {
  return {
    checked("model", DTNN_FIELD(model_name), M | MM | T | P, check_model, "Model name (see `dtnn models`)"),
    integer("batch_size", DTNN_FIELD(batch_size), M | MM | T | P, 1, kBig, "Batch size per rank"),
    integer("num_epochs", DTNN_FIELD(num_epochs), M | T | P, 0, kBig, "Number of epochs"),
    integer("steps_per_epoch", DTNN_FIELD(steps_per_epoch), M | MM | T | P, 0, kBig,
            "Global batches per epoch (0: whole epochs)"),
    boolean("evaluate", DTNN_FIELD(evaluate), M | P,
            "PyDTNN's: evaluate on the test set before and after training (False: neither; given, it sets "
            "--evaluate_on_test unless that is given too)"),
    boolean("evaluate_only", DTNN_FIELD(evaluate_only), M | P, "Only evaluate on the test set"),
    boolean("evaluate_on_test", DTNN_FIELD(evaluate_on_test), M | T, "Evaluate on the test set after training"),
    path("weights_and_bias_filename", DTNN_FIELD(weights_and_bias_filename), M | P,
         "NPZ weights: loaded before training if the file exists, stored after"),
    path("history_file", DTNN_FIELD(history_file), M | P, "Per-epoch history (PyDTNN format)"),
    choice("tensor_format", DTNN_FIELD(tensor_format), M | MM | T | P, {"NHWC", "NCHW", "AUTO"},
           "NHWC, NCHW or AUTO (NHWC on the CPU, NCHW on the GPU)"),
    checked("conv_algo", DTNN_FIELD(conv_algo), M, check_conv_algo,
            "Convolution algorithm: a name (see `dtnn algos`), auto (cache or heuristic) or best_of (time each layer)"),
    boolean("enable_fused_bn_relu", DTNN_FIELD(enable_fused_bn_relu), M | P,
            "Fuse BatchNormalization + Relu (dtnn: on by default; on the CPU the normalization applies the Relu in its "
            "own passes, training and inference, bit-identical results)"),
    boolean("enable_fused_conv_relu", DTNN_FIELD(enable_fused_conv_relu), M | P, "Fuse Conv2D + Relu"),
    boolean("enable_fused_conv_bn", DTNN_FIELD(enable_fused_conv_bn), M | P, "Fuse Conv2D + BatchNormalization"),
    boolean("enable_fused_conv_bn_relu", DTNN_FIELD(enable_fused_conv_bn_relu), M | P,
            "Fuse Conv2D + BatchNormalization + Relu"),
    boolean("enable_fused_add_relu", DTNN_FIELD(enable_fused_add_relu), M,
            "Apply the Relu after an AdditionBlock in the block's last addition, in training inside the output "
            "pass of a batch normalization that ends the block's first path (bit-identical results)"),
    boolean("sync_batchnorm", DTNN_FIELD(sync_batchnorm), M | MM, "BatchNormalization statistics over every rank's batch"),
  };
}

// The dataset, its files, splits and augmentation.
std::vector<OptionSpec> dataset_options() {
  return {
    checked("dataset", DTNN_FIELD(dataset_name), M | MM | T | P, check_dataset, "Dataset: mnist, cifar10 or imagenet"),
    boolean("use_synthetic_data", DTNN_FIELD(use_synthetic_data), M | MM | T | P, "Use synthetic data of the dataset's shape"),
    boolean("pad_to_cifar", DTNN_FIELD(pad_to_cifar), M | T, "Pad 28x28x1 MNIST-format images to 32x32x3 for CIFAR models"),
    integer("resize", DTNN_FIELD(resize), M | MM | T, 0, 4096,
            "d2l's resize: MNIST-format images bilinearly resized to N x N, as Pillow does, and the model's input "
            "with them (0: none)"),
    path("dataset_train_path", DTNN_FIELD(dataset_train_path), M | T | P, "Directory of the training files"),
    path("dataset_test_path", DTNN_FIELD(dataset_test_path), M | T | P, "Directory of the test files (default: train path)"),
    boolean("test_as_validation", DTNN_FIELD(test_as_validation), M | MM | T | P, "Use the test set as the validation set"),
    number("validation_split", DTNN_FIELD(validation_split), M | MM | T | P, 0.0, 1.0,
           "Fraction of the training set held out", kOpenAbove),
    boolean("flip_images", DTNN_FIELD(flip_images), M | P, "Randomly flip training images horizontally"),
    number("flip_images_prob", DTNN_FIELD(flip_images_prob), M | P, 0.0, 1.0, "Probability of a flip per sample"),
    boolean("crop_images", DTNN_FIELD(crop_images), M | P, "Random pad-and-crop of training images"),
    number("crop_images_prob", DTNN_FIELD(crop_images_prob), M | P, 0.0, 1.0, "Probability of a crop per sample"),
    integer("crop_images_padding", DTNN_FIELD(crop_images_padding), M, 0, 1 << 20,
            "Zero padding P of the crop (offsets in [-P, P])"),
    integer("crop_images_size", DTNN_FIELD(crop_images_size), M | P, 0, 1 << 20,
            "--crop_images: PyDTNN's crop, an S x S window with the corners outside it zeroed, then the image rolled "
            "(0: dtnn's pad-and-crop, --crop_images_padding)"),
    boolean("prefetch", DTNN_FIELD(prefetch), M, "Load the next batch on a loader thread during the current step"),
  };
}

// The optimizer, its hyper-parameters, the loss and the metrics.
std::vector<OptionSpec> optimizer_options() {
  return {
    choice("optimizer", DTNN_FIELD(optimizer.name), M | MM | T | P, {"sgd", "rmsprop", "adam", "nadam"},
           "sgd, rmsprop, adam or nadam"),
    // (at most FLT_MAX: the optimizers apply it in float32, where a larger one is infinite)
    number("learning_rate", DTNN_FIELD(optimizer.learning_rate), M | MM | T | P, 0.0, FLT_MAX, "Learning rate",
           kOpenBelow),
    boolean("learning_rate_scaling", DTNN_FIELD(learning_rate_scaling), M | MM | T | P,
            "With --parallel=data and sgd, multiply lr by ranks"),
    number("momentum", DTNN_FIELD(optimizer.momentum), M | MM | T | P, 0.0, 1.0, "SGD momentum", kOpenAbove),
    boolean("nesterov", DTNN_FIELD(optimizer.nesterov), M | MM | T | P, "Nesterov momentum"),
    number("decay", DTNN_FIELD(optimizer.decay), M | MM | T | P, 0.0, DBL_MAX, "L2 decay applied to every trainable value"),
    number("beta1", DTNN_FIELD(optimizer.beta1), M | MM | T | P, 0.0, 1.0, "Adam beta1", kOpenAbove),
    number("beta2", DTNN_FIELD(optimizer.beta2), M | MM | T | P, 0.0, 1.0, "Adam beta2", kOpenAbove),
    number("rho", DTNN_FIELD(optimizer.rho), M | MM | P, 0.0, 1.0, "RMSProp decay of the squared-gradient average",
           kOpenAbove),
    number("epsilon", DTNN_FIELD(optimizer.epsilon), M | MM | T | P, 0.0, DBL_MAX,
           "RMSProp/Adam/Nadam epsilon (inside the square root)", kOpenBelow),
    checked("loss_func", DTNN_FIELD(loss_func), M | MM | P, check_loss,
            "categorical_cross_entropy or binary_cross_entropy (PyDTNN's older metric,...,loss list too)"),
    text("metrics", DTNN_FIELD(metrics), M | MM | P, "Comma-separated metrics (empty: the loss only)", check_metrics),
  };
}

// Parallelism, threads and devices.
std::vector<OptionSpec> parallelism_options() {
  return {
    choice("parallel", DTNN_FIELD(parallel), R | MM | P, {"sequential", "data"}, "sequential or data (run under mpirun)"),
    integer("threads", DTNN_FIELD(threads), M | T, 0, kMaxThreads, "Threads per rank (0: the cores the rank gets: OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, "
            "else the cores it may run on / the ranks sharing them)"),
    boolean("flush_denormals", DTNN_FIELD(flush_denormals), M | MM,
            "CPU: flush denormal floats to zero (FTZ/DAZ; decaying optimizer state made Adam a third slower); False: strict IEEE"),
    boolean("enable_gpu", DTNN_FIELD(enable_gpu), T | P, "Train on the GPU (rank r uses GPU r % GPUs of its node)"),
    boolean("allow_tf32", DTNN_FIELD(allow_tf32), M | T, "GPU: TF32 tensor-core math for float32 convolutions and GEMMs"),
    boolean("enable_nccl", DTNN_FIELD(enable_nccl), M | P, "GPU + --parallel=data: allreduce gradients with NCCL"),
    boolean("enable_cudnn_auto_conv_alg", DTNN_FIELD(enable_cudnn_auto_conv_alg), M | T | P,
            "GPU, --conv_algo=auto: time every cuDNN algorithm per layer (cudnnFind); False: PyDTNN's fixed algorithms"),
    boolean("gpu_layer_times", DTNN_FIELD(gpu_layer_times), M, "GPU: measure per-layer times (synchronises after each layer)"),
    integer("seed", DTNN_FIELD(seed), M | MM | T, 0, INT64_MAX, "Seed of every random choice (any uint64)"),
    path("report", DTNN_FIELD(report), R | T, "Write a JSON run report to this file"),
    boolean("progress", DTNN_FIELD(progress), 0, "Live progress bar on a terminal (False: one line per epoch)"),
  };
}

// The LR schedulers (optim/lr_scheduler.h).
std::vector<OptionSpec> lr_schedulers_options() {
  return {
    text("lr_schedulers", DTNN_FIELD(lr_schedulers.names), M | MM | P,
         "Comma list applied in order: warm_up, early_stopping, reduce_lr_on_plateau, reduce_lr_every_nepochs, "
         "stop_at_loss, model_checkpoint (default none; PyDTNN's default list stops runs without validation)",
         check_lr_schedulers),
    integer("warm_up_epochs", DTNN_FIELD(lr_schedulers.warm_up_epochs), M | MM | P, 0, kBig,
            "warm_up: epochs of linear ramp from lr/ranks to lr"),
    text("early_stopping_metric", DTNN_FIELD(lr_schedulers.early_stopping_metric), M | MM | P,
         "early_stopping: watched value (val_ prefix: validation)"),
    integer("early_stopping_patience", DTNN_FIELD(lr_schedulers.early_stopping_patience), M | MM | P, 0, kBig,
            "early_stopping: epochs without improvement"),
    path("early_stopping_weights_filename", DTNN_FIELD(lr_schedulers.early_stopping_weights_filename), M,
         "early_stopping: also store the best weights in this NPZ (default: memory only)"),
    text("reduce_lr_on_plateau_metric", DTNN_FIELD(lr_schedulers.reduce_lr_on_plateau_metric), M | MM | P,
         "reduce_lr_on_plateau: watched value"),
    number("reduce_lr_on_plateau_factor", DTNN_FIELD(lr_schedulers.reduce_lr_on_plateau_factor), M | MM | P, 0.0,
           DBL_MAX, "reduce_lr_on_plateau: lr multiplier"),
    integer("reduce_lr_on_plateau_patience", DTNN_FIELD(lr_schedulers.reduce_lr_on_plateau_patience), M | MM | P, 0,
            kBig, "reduce_lr_on_plateau: epochs without improvement"),
    number("reduce_lr_on_plateau_min_lr", DTNN_FIELD(lr_schedulers.reduce_lr_on_plateau_min_lr), M | MM | P, 0.0,
           DBL_MAX, "reduce_lr_on_plateau: lowest rate"),
    number("reduce_lr_every_nepochs_factor", DTNN_FIELD(lr_schedulers.reduce_lr_every_nepochs_factor), M | MM | P,
           0.0, DBL_MAX, "reduce_lr_every_nepochs: lr multiplier"),
    integer("reduce_lr_every_nepochs_nepochs", DTNN_FIELD(lr_schedulers.reduce_lr_every_nepochs_nepochs), M | MM | P,
            1, kBig, "reduce_lr_every_nepochs: period in epochs"),
    number("reduce_lr_every_nepochs_min_lr", DTNN_FIELD(lr_schedulers.reduce_lr_every_nepochs_min_lr), M | MM | P,
           0.0, DBL_MAX, "reduce_lr_every_nepochs: lowest rate"),
    text("stop_at_loss_metric", DTNN_FIELD(lr_schedulers.stop_at_loss_metric), M | MM | P, "stop_at_loss: watched value"),
    number("stop_at_loss_threshold", DTNN_FIELD(lr_schedulers.stop_at_loss_threshold), M | MM | P, -DBL_MAX,
           DBL_MAX, "stop_at_loss: stop once the value is better than this"),
    text("model_checkpoint_metric", DTNN_FIELD(lr_schedulers.model_checkpoint_metric), M | MM | P,
         "model_checkpoint: watched value"),
    integer("model_checkpoint_save_freq", DTNN_FIELD(lr_schedulers.model_checkpoint_save_freq), M | MM | P, 1, kBig,
            "model_checkpoint: save only on epochs divisible by this"),
  };
}

// Checkpoints and resuming.
std::vector<OptionSpec> checkpoint_options() {
  return {
    // The PyTorch reference takes both too, with a file of its own (experiments/reference/torch_checkpoint.py).
    path("checkpoint_file", DTNN_FIELD(checkpoint_file), M | T,
         "Rewrite this checkpoint after every epoch (rank 0; dtnn writes an NPZ, the PyTorch reference its own)"),
    path("resume_from", DTNN_FIELD(resume_from), M | T, "Continue the run recorded in this checkpoint file"),
  };
}

// PyDTNN's launcher options that dtnn spells otherwise or does by design.
std::vector<OptionSpec> launcher_options() {
  return {
    // PyDTNN's launcher options that dtnn spells otherwise or does by design (resolve_options)
    choice("dtype", DTNN_FIELD(dtype), M | T | P, {"float32", "bfloat16", "float16", "float64"},
           "Data type the convolutions and FC layers multiply in: float32, or bfloat16 (CPUs with AVX512-BF16 or "
           "AMX: float32 master weights, optimizer and other layers); float16 and float64 are refused"),
    boolean("enable_conv_gemm", DTNN_FIELD(enable_conv_gemm), A | P, "PyDTNN's ConvGemm: --conv_algo=convgemm"),
    boolean("enable_conv_winograd", DTNN_FIELD(enable_conv_winograd), A | P,
            "PyDTNN's Winograd: --conv_algo=winograd_f4 (other layers fall back)"),
    boolean("enable_best_of", DTNN_FIELD(enable_best_of), A | P, "PyDTNN's BestOf: --conv_algo=best_of"),
    integer("threads_per_process", DTNN_FIELD(threads_per_process), A | P, 0, kMaxThreads,
            "PyDTNN's spelling of --threads (0: not given)"),
    integer("gpus_per_node", DTNN_FIELD(gpus_per_node), P, 0, 1024,
            "GPU: the ranks of a node use GPUs 0..n-1 (rank % n); 0: every GPU of the node"),
    boolean("enable_gpudirect", DTNN_FIELD(enable_gpudirect), P,
            "PyDTNN's GPU gradients in mapped pinned host memory for MPI: what dtnn's staged GPU reduction does "
            "(or NCCL); nothing on the CPU"),
    boolean("enable_memory_cache", DTNN_FIELD(enable_memory_cache), P,
            "PyDTNN's persistent workspaces: dtnn always sizes buffers when the model is built"),
    boolean("shared_storage", DTNN_FIELD(shared_storage), P, "Only rank 0 writes files either way (as PyDTNN)"),
    integer("mpi_processes", DTNN_FIELD(mpi_processes), P, 0, 1 << 24,
            "Checked against the number of ranks started (0: not checked)"),
  };
}

// Data parallelism's gradient reduction and scaling mode.
std::vector<OptionSpec> reduction_options() {
  return {
    // Data parallelism's gradient reduction and scaling mode (parallel/gradient_reducer.h)
    boolean("non_blocking_mpi", DTNN_FIELD(non_blocking_mpi), M | P,
            "Sum gradients in buckets during the backward pass (MPI_Iallreduce; GPU models: NCCL, or staged "
            "copies, on a side stream)"),
    boolean("blocking_mpi", DTNN_FIELD(blocking_mpi), A | P,
            "PyDTNN's negation of --non_blocking_mpi: True (the bare flag) is one blocking allreduce after the "
            "backward pass (the default), False the non-blocking reduction"),
    number("gradient_bucket_mb", DTNN_FIELD(gradient_bucket_mb), M, 0.0, 1 << 20,
           "--non_blocking_mpi: bucket cap in MiB, the first bucket at most 1 MiB (0: one bucket per layer, as PyDTNN)"),
    choice("allreduce_dtype", DTNN_FIELD(allreduce_dtype), M, {"float32", "bfloat16"},
           "The gradients' type in the sum over ranks: bfloat16 sends half the bytes (rounded before, widened after; "
           "the loss and metric sums stay float32). CPU data parallelism"),
    integer("gradient_buckets_min", DTNN_FIELD(gradient_buckets_min), M, 1, kBig,
            "--non_blocking_mpi: the cap is at most the gradient's size / N, so a model of a few MiB still gets "
            "about N buckets (layers are never split); 1: --gradient_bucket_mb alone, as DDP"),
    integer("global_batch_size", DTNN_FIELD(global_batch_size), M | MM | T | P, 0, kBig,
            "Strong scaling: the global batch, split over the ranks (replaces --batch_size; no lr scaling); "
            "0: weak scaling, --batch_size per rank"),
  };
}

// Model averaging and dislib's data per worker.
std::vector<OptionSpec> averaging_options() {
  return {
    // Model averaging (parallel/model_averager.h) and dislib's data per worker (data/worker_blocks.h). Not
    // must-match: checkpoints are refused with model averaging, and older checkpoints stay readable.
    choice("model_averaging", DTNN_FIELD(model_averaging), M,
           {"none", "synchronous", "asynchronous", "partially_asynchronous"},
           "dislib.eddl's training modes: none (--parallel's gradient sum every step), synchronous (local training, "
           "weights averaged by an allreduce every --average_every_epochs or --average_every_steps and at the end), "
           "asynchronous (each rank merges into general weights held by rank 0, over MPI one-sided communication, "
           "every --average_every_epochs of its epochs, without waiting for the others), partially_asynchronous "
           "(the same every --average_every_steps of its steps; 0: every step)"),
    integer("average_every_epochs", DTNN_FIELD(average_every_epochs), M, 1, kBig,
            "--model_averaging=synchronous: average the weights every N epochs (dislib's n_epocs_sync); asynchronous: "
            "each rank merges every N of its epochs"),
    integer("average_every_steps", DTNN_FIELD(average_every_steps), M, 0, kBig,
            "--model_averaging=synchronous: average every N training steps, counted over the run (local SGD; "
            "replaces --average_every_epochs); 0: by epochs. partially_asynchronous: each rank merges every N of its "
            "steps (0: every step)"),
    boolean("average_optimizer_state", DTNN_FIELD(average_optimizer_state), M,
            "--model_averaging=synchronous: also average the optimizer state (momentum, Adam's moments); False: kept local, "
            "as dislib and PyTorch's PostLocalSGD"),
    boolean("average_bn_statistics", DTNN_FIELD(average_bn_statistics), M,
            "--model_averaging: average BatchNormalization running statistics with the weights; False: kept "
            "local until the final average"),
    integer("blocks_per_worker", DTNN_FIELD(blocks_per_worker), M, 1, kBig,
            "--model_averaging: the training set is cut into ranks x N contiguous blocks, N per worker"),
    boolean("shuffle_blocks", DTNN_FIELD(shuffle_blocks), M,
            "--model_averaging: draw which blocks go to which worker every epoch (dislib's shuffle_blocks)"),
    boolean("shuffle_block_data", DTNN_FIELD(shuffle_block_data), M,
            "--model_averaging: shuffle the samples inside every block every epoch (dislib's shuffle_block_data)"),
    integer("num_batches_per_worker", DTNN_FIELD(num_batches_per_worker), M, 0, kBig,
            "--model_averaging: batches each worker trains per epoch, cycling through its blocks (dislib's "
            "num_batches_per_worker); 0: its blocks once (--steps_per_epoch means the same)"),
    boolean("dynamic_blocks", DTNN_FIELD(dynamic_blocks), M,
            "--model_averaging=asynchronous|partially_asynchronous: the ranks claim each epoch's blocks one at a time "
            "from a shared counter (MPI one-sided fetch-and-add), as PyCOMPSs hands dislib's per-block tasks to "
            "whichever worker is free, so a fast rank trains more blocks and a straggler fewer; a piece of work is "
            "one block (--num_batches_per_worker: batches per block; 0: the block once); partially_asynchronous "
            "merges after each block. Which rank trains which block depends on timing (not reproducible); "
            "False: each rank its fixed --blocks_per_worker blocks"),
  };
}

// Deliberate stragglers and uneven batch shares.
std::vector<OptionSpec> stragglers_options() {
  return {
    text("straggler_ms", DTNN_FIELD(straggler_ms), M,
         "R:MS: rank R sleeps MS milliseconds before every training step (a deliberate straggler); empty: none",
         check_straggler),
    text("straggler_factor", DTNN_FIELD(straggler_factor), M,
         "R:F: rank R's steps take F times their compute: before each step it sleeps F-1 times its previous "
         "step's busy time (a device F times slower, whose delay grows with its share of the batch); empty: none",
         check_slow_rank),
    text("rank_batch_shares", DTNN_FIELD(rank_batch_shares), M | MM,
         "--parallel=data: each rank's share of the global batch: empty: even; W0,W1,...: one weight per rank "
         "(3,1: rank 0 takes 3/4); auto: measured from each rank's busy time per sample over the first steps, "
         "then fixed. The update is the whole global batch's (gradients are scaled by 1/global batch)",
         check_batch_shares),
  };
}

// Tracing and the per-phase profile.
std::vector<OptionSpec> tracing_options() {
  return {
    boolean("tracing", DTNN_FIELD(tracing), P,
            "Per-rank event timelines of training (--tracer_output; without it ./test.prv, where PyDTNN's Extrae "
            "setup merges its Paraver trace; on the GPU timed by CUDA events)"),
    path("tracer_output", DTNN_FIELD(tracer_output), P,
         "--tracing: FILE.csv (PyDTNN's simple tracer, rank 0), FILE.json (Chrome trace of every rank, for Perfetto), "
         "FILE.prv or DIR/ (Paraver: FILE.prv/.pcf/.row or DIR/dtnn.*, every rank); several separated by commas"),
    text("trace_steps", DTNN_FIELD(trace_steps), M,
         "--tracing/--profile: N..M, trace only training steps N to M (from 0, over the run); empty: every step",
         check_trace_steps),
    boolean("profile", DTNN_FIELD(profile), M | P,
            "Per-phase summary of training at the end: calls, total, median, min/median/max over ranks"),
  };
}

// PyDTNN's performance-model options: PyDTNN's training never reads them, nor does dtnn's; given, dtnn
// train prints the step time PyDTNN's formulas give with them (experiments/train_model_time.h), and `dtnn predict
// --model_kind pydtnn` takes them under these names.
std::vector<OptionSpec> performance_model_options() {
  return {
    number("cpu_speed", DTNN_FIELD(cpu_speed), P, 0.0, DBL_MAX,
           "PyDTNN's performance model: FLOP/s (given: the model's step time is printed; training unchanged)",
           kOpenBelow),
    number("memory_bw", DTNN_FIELD(memory_bw), P, 0.0, DBL_MAX, "PyDTNN's performance model: bytes/s", kOpenBelow),
    number("network_bw", DTNN_FIELD(network_bw), P, 0.0, DBL_MAX, "PyDTNN's performance model: bits/s", kOpenBelow),
    number("network_lat", DTNN_FIELD(network_lat), P, 0.0, DBL_MAX, "PyDTNN's performance model: seconds"),
    choice("network_alg", DTNN_FIELD(network_alg), P, {"vdg", "bta"},
           "PyDTNN's performance model: allreduce algorithm"),
  };
}

// The table in its order (--help, OPTIONS.md and option lists follow it).
std::vector<OptionSpec> make_table() {
  std::vector<OptionSpec> table;
  for (std::vector<OptionSpec> (*group)() : {&model_and_run_options, &dataset_options, &optimizer_options, &parallelism_options, &lr_schedulers_options, &checkpoint_options, &launcher_options, &reduction_options, &averaging_options, &stragglers_options, &tracing_options, &performance_model_options}) {
    std::vector<OptionSpec> g = group();
    table.insert(table.end(), g.begin(), g.end());
  }
  return table;
}

#undef DTNN_FIELD

}  // namespace

const std::vector<OptionSpec>& train_option_table() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec* find_option(const std::string& name) {
  for (const OptionSpec& s : train_option_table())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace dtnn
