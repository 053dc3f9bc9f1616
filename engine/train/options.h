// TrainOptions: everything `dtnn train` accepts, under PyDTNN's option names with PyDTNN's defaults unless
// stated. Each member is described by one row of the option table (train/option_table.h: kind, range,
// help, where it is understood), from which the CLI (experiments/cli.cpp) fills it and every other consumer
// reads it; the initialisers below are the defaults the table shows. The engine only reads it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace dtnn {

struct TrainOptions {
  // Model
  std::string model_name = "simplecnn";
  int64_t batch_size = 64;          // per rank, as in PyDTNN
  int64_t num_epochs = 1;
  int64_t steps_per_epoch = 0;      // 0: whole epochs; > 0: that many global batches per epoch
  bool evaluate = false;            // evaluate on the test set before training (PyDTNN --evaluate)
  bool evaluate_only = false;
  bool evaluate_on_test = true;     // evaluate on the test set after training (False: benchmarks skip it)
  std::string weights_and_bias_filename;  // NPZ: loaded before training if it exists, stored after
  std::string history_file;
  std::string tensor_format = "AUTO";  // AUTO: NHWC on the CPU, NCHW on the GPU (PyDTNN's AUTO)
  std::string conv_algo = "auto";
  // Layer fusion (PyDTNN's options): Conv2D+BatchNormalization+Relu, Conv2D+Relu, Conv2D+BatchNormalization
  // and BatchNormalization+Relu sequences run as one layer, in training and in inference.
  bool enable_fused_bn_relu = true;  // PyDTNN's is off; bit-identical here (layers/fused.cpp)
  bool enable_fused_conv_relu = false;
  bool enable_fused_conv_bn = false;
  bool enable_fused_conv_bn_relu = false;
  bool enable_fused_add_relu = true;  // AdditionBlock + Relu in one pass (bit-identical; dtnn's own)
  bool sync_batchnorm = false;      // BatchNormalization statistics over all ranks' batches
  // Dataset
  std::string dataset_name = "mnist";
  bool use_synthetic_data = false;
  bool pad_to_cifar = false;        // MNIST-format 28x28x1 images as 32x32x3 (CIFAR-shaped models)
  int64_t resize = 0;               // > 0: d2l's resize of MNIST-format images to resize x resize (data/resize.cpp)
  std::string dataset_train_path;
  std::string dataset_test_path;    // defaults to dataset_train_path
  bool test_as_validation = false;
  double validation_split = 0.0;
  // Augmentation of training batches (data/augment.h): per-sample decisions from (seed, epoch, index)
  bool flip_images = false;         // horizontal flip (along W in both layouts)
  double flip_images_prob = 0.5;
  bool crop_images = false;         // zero-pad by crop_images_padding, random crop of the original size
  double crop_images_prob = 0.5;
  int64_t crop_images_padding = 4;
  int64_t crop_images_size = 0;     // > 0: PyDTNN's corner-zeroing roll (data/augment.h) instead of the pad-and-crop
  bool prefetch = true;             // load the next batch on a loader thread (data/loader.h)
  // Optimizer, loss, metrics
  OptimizerOptions optimizer;
  bool learning_rate_scaling = true;  // sgd with --parallel=data: lr *= ranks
  std::string loss_func = "categorical_cross_entropy";
  std::string metrics = "categorical_accuracy";  // comma-separated
  // Parallelism and run control
  std::string parallel = "sequential";  // sequential | data
  int threads = 0;                      // 0: OMP_NUM_THREADS, else cores / ranks on this node
  bool flush_denormals = true;          // CPU threads flush denormals to zero (backend/cpu/blas.h); False: IEEE
  bool enable_gpu = false;
  // GPU (backend/gpu_ops.h): TF32 tensor-core math for float32 convolutions and GEMMs (off: results
  // comparable with the CPU); NCCL for the gradient allreduce (otherwise staged through host memory with
  // MPI); cudnnFind per layer for --conv_algo=auto (PyDTNN's --enable_cudnn_auto_conv_alg; False: cuDNN's
  // heuristic choice, gpu.cudnn.implicit_precomp_gemm with the backward algorithms PyDTNN used); per-layer
  // GPU times (synchronises after every layer: slower steps).
  bool allow_tf32 = false;
  bool enable_nccl = false;
  bool enable_cudnn_auto_conv_alg = true;
  bool gpu_layer_times = false;
  uint64_t seed = 0;
  std::string report;                   // run report JSON path (rank 0 writes it)
  bool progress = true;                 // live bar on a terminal; false: one plain line per epoch
  // LR schedulers (optim/lr_scheduler.h; --lr_schedulers defaults to "" = none, unlike PyDTNN)
  LRSchedulerOptions lr_schedulers;
  // Checkpoint/resume (train/checkpoint.h)
  std::string checkpoint_file;          // rank 0 rewrites it atomically after every epoch
  std::string resume_from;              // continue the run a checkpoint file recorded

  // PyDTNN's launcher options (research notes §7.1), with PyDTNN's meaning; resolve_options() folds the
  // spellings into dtnn's options above or refuses what dtnn cannot do, saying why.
  std::string dtype = "float32";        // bfloat16: mixed precision on the CPU; float16, float64: refused
  bool enable_conv_gemm = false;        // --conv_algo=convgemm
  bool enable_conv_winograd = false;    // --conv_algo=winograd_f4 (layers it declines fall back)
  bool enable_best_of = false;          // --conv_algo=best_of
  int threads_per_process = 0;          // --threads (0: not given)
  int gpus_per_node = 0;                // > 0: ranks of a node use GPUs 0..n-1 (0: every GPU of the node)
  bool enable_gpudirect = false;        // refused: gradients are staged through pinned host memory, or NCCL
  bool enable_memory_cache = true;      // dtnn sizes every buffer when the model is built: always cached
  bool shared_storage = false;          // only rank 0 writes files either way (PyDTNN forces it too)
  int mpi_processes = 0;                // > 0: must equal the number of ranks started

  // Data parallelism's gradient reduction (parallel/gradient_reducer.h): PyDTNN's --non_blocking_mpi (buckets
  // summed during the backward pass) and its negation --blocking_mpi (resolve_options folds it in); the
  // bucket cap in MiB (0: one bucket per layer, as PyDTNN), at most the gradient / gradient_buckets_min (a
  // model of a few MiB still gets several buckets; 1: the cap alone, DDP's rule); strong scaling: the global
  // batch split over the ranks (0: weak scaling, batch_size per rank).
  bool non_blocking_mpi = false;
  bool blocking_mpi = false;
  double gradient_bucket_mb = 25.0;
  int64_t gradient_buckets_min = 4;
  // The gradients' type on the wire and in the sum over ranks: float32, or bfloat16 (half the bytes; CPU data
  // parallelism only)
  std::string allreduce_dtype = "float32";
  int64_t global_batch_size = 0;
  // Model averaging (parallel/model_averager.h; dislib.eddl's training modes): "none" keeps --parallel's
  // per-step gradient sum; "synchronous": every rank trains locally on its own blocks (data/worker_blocks.h)
  // and the weights are averaged every average_every_epochs epochs (dislib's n_epocs_sync) or, when
  // average_every_steps > 0, every that many steps (local SGD), and at the end of training. The optimizer
  // state is averaged too only with average_optimizer_state; BatchNormalization running statistics are
  // averaged with the weights unless average_bn_statistics is false (then only at the final average).
  // "asynchronous" (merge into the general weights every average_every_epochs of the rank's own epochs) and
  // "partially_asynchronous" (every average_every_steps steps, or every block with dynamic_blocks) merge over
  // MPI one-sided communication without meeting (parallel/async_merger.h).
  std::string model_averaging = "none";
  int64_t average_every_epochs = 1;
  int64_t average_every_steps = 0;
  bool average_optimizer_state = false;
  bool average_bn_statistics = true;
  // dislib's data per worker (data/worker_blocks.h), model averaging only.
  int64_t blocks_per_worker = 1;
  bool shuffle_blocks = true;
  bool shuffle_block_data = true;
  int64_t num_batches_per_worker = 0;
  // Asynchronous modes: each epoch's blocks are claimed at run time by whichever rank is free (PyCOMPSs
  // scheduling dislib's per-block tasks) instead of a fixed share per rank (train/trainer.h).
  bool dynamic_blocks = false;  // 0: the largest worker's samples / batch_size (or --steps_per_epoch)
  // "R:MS": rank R sleeps MS milliseconds before every training step (straggler experiments); "": none.
  std::string straggler_ms;
  // "R:F": rank R's steps take F times their compute (it sleeps F - 1 times its last step's busy time): a
  // device F times slower, whose delay grows with its share of the batch (train/batch_shares.h).
  std::string straggler_factor;
  // Each rank's share of the global batch (train/batch_shares.h): "" even, "3,1" weights, "auto" measured.
  std::string rank_batch_shares;
  // Tracing (trace/tracer.h, trace/trace_output.h): PyDTNN's --tracing and --tracer_output.
  bool tracing = false;
  std::string tracer_output;
  std::string trace_steps;  // "N..M": trace only these training steps (trace/tracer.h TraceSteps); "": all
  bool profile = false;  // the per-phase summary at the end (trace/profile.h)
  // PyDTNN's performance-model parameters: when any is given, `dtnn train` prints the model's step time
  // (experiments/train_model_time.h); training is unchanged.
  double cpu_speed = 4e12;
  double memory_bw = 50e9;
  double network_bw = 1e9;
  double network_lat = 0.5e-6;
  std::string network_alg = "vdg";
};

// "NHWC" or "NCHW": --tensor_format with AUTO resolved for the device.
std::string resolved_tensor_format(const TrainOptions& o);

// Samples in one global batch: --global_batch_size (strong scaling) or batch_size x ranks (weak scaling).
inline int64_t global_batch(const TrainOptions& o, int ranks) {
  return o.global_batch_size > 0 ? o.global_batch_size : o.batch_size * ranks;
}

// --straggler_ms parsed: rank -1 when none. Throws dtnn::Error for anything but "" or "R:MS" (R, MS >= 0).
struct Straggler {
  int rank = -1;
  int64_t ms = 0;
};
Straggler parse_straggler(const std::string& text);

// (name, value) pairs of every option in effect (the option table's rows but the planned ones), in the
// table's order, values printed as a user would type them; tensor_format is resolved (AUTO -> NHWC/NCHW).
std::vector<std::pair<std::string, std::string>> options_list(const TrainOptions& o);

}  // namespace dtnn
