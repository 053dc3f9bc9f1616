// Model: a sequential list of layers with PyDTNN's numbering, and the memory they all share.
//
// build() sizes everything once for the largest batch:
//   - one parameter slab and one gradient slab (each parameter 64-byte aligned inside), so the optimizer
//     runs over one flat array and data parallelism needs a single allreduce; the gradient slab has
//     `reduce_tail` extra floats after the gradients where the trainer packs loss/metric sums, so they
//     travel in the same allreduce;
//   - one activation buffer per layer output and one gradient buffer per layer input that needs one
//     (the first computing layer gets no dx, as in PyDTNN; Flatten gets views, not buffers; ReLU-like
//     layers run in place over the previous layer's buffers when that is safe: Layer::can_run_in_place);
//     the gradient buffers are slots of one GradientScratch that consecutive layers take in turn
//     (layers/gradient_scratch.h), so a gradient is readable only until the layer below has consumed it;
//   - one workspace shared by every layer (convolution scratch: sized for the largest).
// Activation i is the output of layer i; activation 0 is the input batch, written by the caller.
//
// On the GPU (BuildContext::device == gpu) the slabs, activations, workspace and every layer buffer live
// in one device arena owned by the model. The parameter and
// state slabs also keep a host copy: init_params() writes it and build() uploads it; download() refreshes
// it from the device (before saving weights or checkpoints), upload() sends it back (after loading). On
// the CPU the host copy IS the slab and both calls do nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/gpu_ops.h"
#include "layers/layer.h"
#include "layers/layers.h"
#include "trace/gpu_trace.h"
#include "trace/tracer.h"

namespace dtnn {

// Told by Model::backward after each top-level layer's backward pass (the overlapped gradient reduction
// starts a bucket's sum as soon as its last layer is done). Must not allocate.
class BackwardHook {
 public:
  virtual void after_layer(size_t layer) = 0;

 protected:
  ~BackwardHook() = default;
};

class Model {
 public:
  explicit Model(std::string name) : name_(std::move(name)) {}

  // Appends a layer (ids follow PyDTNN: Input is 0, each layer and each activation gets the next id).
  void add(std::unique_ptr<Layer> layer, const std::string& activation = "");

  // Replaces the Input layer's image size by h x w (channels kept): --resize trains a model on images of
  // another size than its builder declares. Before build(); throws dtnn::Error for a flat input.
  void resize_input(int64_t h, int64_t w);

  // Applies the layer-fusion pass (layers.h) to the layers added so far; before build().
  void fuse(const FusionOptions& options);
  void build(const BuildContext& ctx, uint64_t seed, int64_t reduce_tail = 0);
  // Seeds per-layer randomness (dropout) for this rank; different ranks get different streams.
  void seed_layers(uint64_t seed, int rank);

  // Input batch buffer (max_batch samples) and views of the first n samples of each boundary.
  const Tensor& input() const { return acts_[0]; }
  Tensor output(int64_t n) const { return acts_.back().batch(n); }
  Tensor activation(size_t i, int64_t n) const { return acts_[i].batch(n); }
  Tensor gradient(size_t i, int64_t n) const { return grads_[i].empty() ? Tensor() : grads_[i].batch(n); }

  // Runs layers 1..L-1 on the first n samples of input().
  void forward(int64_t n, Mode mode);
  // Back-propagates from gradient(top) (the gradient w.r.t. layer top's output, filled by the caller)
  // down to layer 1, leaving every parameter gradient in the gradient slab. With a hook, calls
  // hook->after_layer(i) once layer i's backward has finished (i = top..1, reshapes included): from then on
  // gradient slab range [param_begin(i), param_begin(i + 1)) holds its final values.
  void backward(int64_t n, size_t top, BackwardHook* hook = nullptr);

  const std::string& name() const { return name_; }
  size_t num_layers() const { return layers_.size(); }  // top-level layers (a block counts once)
  // Every layer after build(): each top-level layer followed by its block children, depth-first (the
  // order of PyDTNN's ids). Weight files, the model table and seeding walk this list.
  const std::vector<Layer*>& all_layers() const { return all_; }
  Layer& layer(size_t i) { return *layers_[i]; }
  const Layer& layer(size_t i) const { return *layers_[i]; }
  Shape input_shape() const { return layers_.front()->output_shape(); }
  Shape output_shape() const { return layers_.back()->output_shape(); }
  int64_t max_batch() const { return ctx_.max_batch; }
  Layout layout() const { return ctx_.layout; }

  // Wall time spent in each layer's forward and backward since build (or the last reset), in seconds,
  // and the number of timed calls; rank 0 reports them per layer (steady_clock, two reads per call).
  struct LayerTime {
    double forward_s = 0.0, backward_s = 0.0;
    int64_t forward_calls = 0, backward_calls = 0;
  };
  const std::vector<LayerTime>& layer_times() const { return times_; }
  void reset_layer_times();

  int64_t num_params() const { return num_params_; }  // trainable values (excluding alignment padding)
  int64_t slab_size() const { return slab_size_; }    // floats in the slabs, padding included
  // Where top-level layer i's parameters (its block children's included) start in the slabs; they end
  // where layer i + 1's start, and param_begin(num_layers()) == slab_size(). Increasing in i.
  int64_t param_begin(size_t i) const { return param_begin_[i]; }
  Device device() const { return ctx_.device; }
  // The slabs on the model's device.
  float* param_slab() const { return dev_params_.data(); }
  float* grad_slab() const { return grads_slab_.data(); }
  float* reduce_tail() const { return grads_slab_.data() + slab_size_; }
  // Host copies of the parameter and state slabs (the slabs themselves on the CPU).
  float* host_param_slab() const { return params_.data(); }
  float* host_state_slab() const { return state_size_ ? state_.data() : nullptr; }
  void download() const;  // device -> host copies (GPU; waits for the device)
  void upload();          // host copies -> device (GPU)
  // Bytes of device memory the model holds (0 on the CPU).
  size_t device_bytes() const;
  // Bytes of the buffers build() sized, on the model's device: activations (with the layers' own buffers:
  // block outputs, dropout masks, ...), activation gradients, the shared workspace, and the parameter and
  // gradient slabs with the state. Zero before build(); for a plan-only build (BuildContext::plan_only),
  // what a real build would allocate.
  struct Memory {
    int64_t activations = 0, gradients = 0, workspace = 0, parameters = 0;
    int64_t total() const { return activations + gradients + workspace + parameters; }
  };
  const Memory& memory() const { return memory_; }
  // Floats in the shared workspace now: what build() reserved, or more once a smaller batch's convolution
  // needed more (SharedWorkspace::grow_cpu).
  int64_t workspace_floats() const { return workspace_.floats; }
  // Non-trainable state (BatchNormalization running statistics): one slab of state_size() floats that
  // weight files, checkpoints and early stopping save and restore with the parameters. Empty (nullptr,
  // size 0) for models without such state.
  float* state_slab() const { return state_size_ ? dev_state_.data() : nullptr; }
  int64_t state_size() const { return state_size_; }
  // Per-layer timing (layer_times()): on by default on the CPU; on the GPU it synchronises after every
  // layer call (exact times, slower steps), so training leaves it off unless asked (--gpu_layer_times).
  void set_time_layers(bool on) { time_layers_ = on; }
  bool time_layers() const { return time_layers_; }
  // Records every layer's forward and backward into `tracer` (null: none), and inside them the phases of
  // their algorithms (trace/op_trace.h); it must outlive its use.
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  // GPU models: times every layer's forward and backward by CUDA events on the stream instead (null: none).
  void set_gpu_trace(GpuTrace* trace) { gpu_trace_ = trace; }
  // The most phase events (TraceKind::op) one training step's forward and backward record: the sum of
  // every layer's Layer::trace_op_events(). After build().
  int64_t trace_op_events() const;

 private:
  // build()'s stages: the parameter, gradient and state slabs (parameters initialised from `seed`; GPU: on the
  // device), then the activations and their gradients.
  void build_slabs(uint64_t seed, int64_t reduce_tail);
  void build_activations();

  std::string name_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Layer*> all_;
  int next_id_ = 0;
  BuildContext ctx_;
  std::vector<Tensor> acts_;
  std::vector<GradientBuffer> grads_;
  std::vector<LayerTime> times_;
  std::vector<int64_t> param_begin_;  // num_layers() + 1 offsets
  Tensor params_, grads_slab_, state_;   // host (params_, state_) and device-side gradient slab
  Tensor dev_params_, dev_state_;         // views of the slabs on the model's device
  std::unique_ptr<gpu::Arena> arena_;
  SharedWorkspace workspace_;
  GradientScratch gradients_;    // the activation gradients' memory (unless BuildContext::private_scratch)
  Memory memory_;
  int64_t num_params_ = 0, slab_size_ = 0, state_size_ = 0;
  bool built_ = false, time_layers_ = true;
  Tracer* tracer_ = nullptr;
  GpuTrace* gpu_trace_ = nullptr;
};

// The model zoo: one builder per PyDTNN model name (models/registry.cpp).
struct ModelInfo {
  const char* name;
  const char* dataset;  // the dataset whose shape it expects
  void (*build)(Model&);
};
const std::vector<ModelInfo>& model_zoo();
// Creates the named model, not yet built. Throws dtnn::Error listing the known names.
std::unique_ptr<Model> create_model(const std::string& name);

}  // namespace dtnn
