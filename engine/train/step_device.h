// StepDevice: the part of a training or evaluation step that depends on where the model lives — a batch's
// inputs and labels to the model, the loss, its gradient and the metrics, the pass's running sums, and the
// step's trace — so the trainer's loops read the same on CPUs and GPUs.
//
// CPU (cpu_step.cpp): inputs copied into model.input() (one memcpy), labels read in place, the loss and
// metrics computed on the host, the running sums kept in double on the host.
// GPU (gpu_step.cpp): the loader's two batch buffers are page-locked and each batch is copied to the device
// asynchronously (gpu::InputStager: an event marks when the copy has read its buffer, before the loader may
// refill it), so the copy overlaps the previous step's kernels; the loss, metric sums and the pass's running
// sums stay on the device, read back only when the progress line is due and at the end of a pass, so steps
// are queued without waiting for the GPU. DTNN_CUDA_PROFILE_STEP=k puts training step k in the CUDA profiler's
// window.
//
// The tail (loss, metric sums, sample count: Trainer::reduce_tail_floats floats after the gradient slab, in
// the model's memory) is filled before backward, so it rides with the first gradient bucket. Nothing is
// allocated after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/loader.h"
#include "models/model.h"
#include "train/losses.h"

namespace dtnn {

class Tracer;
class GpuTrace;

struct StepLoss {
  LossKind loss;
  std::vector<MetricKind> metrics;
  int64_t classes = 0;
  // Categorical cross-entropy over a final Softmax: computed from the logits, the gradient entering below it.
  bool fused_softmax = false;
};

class StepDevice {
 public:
  virtual ~StepDevice() = default;

  // Records steps, losses and (through the model) layers into `tracer` (null: none); returns the device
  // timeline the distribution records its communication into (GPU with a tracer; else null).
  virtual GpuTrace* set_tracer(Tracer* tracer) = 0;
  virtual void flush_trace() {}  // GPU: the device events still pending, into the tracer
  virtual int wait_lane() const { return 0; }  // the tracer's lane for a data wait (GPU: lane 0 is the stream)
  // Evaluation passes are traced as one event: the model's per-layer tracing off, then on again.
  virtual void pause_layer_tracing() = 0;
  virtual void resume_layer_tracing() = 0;
  // The loader is about to refill the slot the previous batch came from (GPU: waits until its upload read it).
  virtual void before_refill() {}

  virtual void begin_pass() = 0;  // the running sums to zero
  virtual void begin_step(int64_t step) = 0;
  virtual void load(const Batch& batch) = 0;  // the batch's inputs (and labels) into the model
  // Training, after the forward pass of n samples: into `tail`, the loss with its gradient (divided by
  // global_n) in the model's gradient buffers, the metric sums and n.
  virtual void loss(int64_t n, int64_t global_n, float* tail) = 0;
  virtual void no_samples(float* tail) = 0;  // a rank with no samples this step: zero gradients and tail
  // After the update: the step's tail (summed over the ranks when the distribution does) into the running
  // sums; `global_n` is the step's global batch, `began` when the step began (the CPU trace's step event).
  virtual void end_step(const float* tail, int64_t global_n, double began) = 0;
  // Evaluation, after the forward pass of the batch: its loss and metric sums into the running sums.
  virtual void add_evaluation(const Batch& batch) = 0;

  // Samples in the running sums so far.
  virtual int64_t done() const = 0;
  // The running means into `means` (loss then metrics); the GPU reads them only when `due`. Whether `means`
  // is current.
  virtual bool means(bool due, std::vector<double>& means) = 0;
  // The pass's sums and samples (GPU: waits for the device).
  virtual void totals(std::vector<double>& sums, int64_t* done) = 0;
};

// The StepDevice of `model`'s device. GPU: pins the loader's buffers.
std::unique_ptr<StepDevice> make_step_device(Model& model, const StepLoss& loss, BatchLoader& loader);
std::unique_ptr<StepDevice> make_cpu_step(Model& model, const StepLoss& loss);
std::unique_ptr<StepDevice> make_gpu_step(Model& model, const StepLoss& loss, BatchLoader& loader);

}  // namespace dtnn
