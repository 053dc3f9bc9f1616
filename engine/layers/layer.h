// Layer: one node of a sequential model, with forward and backward over a batch.
//
// Life cycle: the Model calls build() once with the per-sample input shape, the tensor layout and the
// largest batch it will ever pass; the layer computes its output shape and declares its parameters
// (shape and initializer) in params_. The Model then places every parameter and gradient in one slab
// (so one allreduce covers them), points Param::value/grad at it and calls init_params(). After that no
// layer allocates: forward/backward get views of Model-owned activations whose dimension 0 may be any
// batch size up to max_batch.
//
// Devices: with BuildContext::device == gpu every tensor a layer sees (x, y, dy, dx, parameters, its own
// buffers from BuildContext::zeros) is GPU memory, and the layer queues GPU work (backend/gpu_ops.h, the
// GPU convolution algorithms) on the backend's one stream without synchronising. init_params() always
// writes host memory (the Model uploads it).
//
// backward() overwrites the parameter gradients with this batch's gradient and, when dx is not empty,
// overwrites dx with the gradient with respect to the input. It may use what forward() stashed (masks,
// argmax indices), so it must follow a forward() in train mode on the same batch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "layers/gradient_scratch.h"
#include "tensor/tensor.h"

namespace dtnn {

class Communicator;
class Layer;
namespace gpu {
class Arena;
}
// A chain of layers: a block's path, or a model's top-level list.
using Path = std::vector<std::unique_ptr<Layer>>;

enum class Mode { train, evaluate };

// Scratch memory shared by every layer of a model (they run one at a time: on the CPU, and on the GPU's one
// stream): a layer reserve()s what one of its calls needs while it is built; the Model allocates the largest
// request once after build, and layers read data() at each call (it may move: grow_cpu) and use it only
// inside forward/backward, never to keep anything from one call to the next.
struct SharedWorkspace {
  int64_t floats = 0;    // reserved; once allocated, the size of data
  float* data = nullptr;
  Tensor storage;        // data's memory (on the model's device), set by Model::build
  void reserve(int64_t f) { floats = f > floats ? f : floats; }
  // CPU: at least f floats from now on (contents not kept). For a batch smaller than the one the model was
  // built for whose algorithm needs more (Conv2D::ws_for): once per such batch size, on its first call.
  void grow_cpu(int64_t f);
};

// What every layer's build() needs to know about the model it is part of.
struct BuildContext {
  Layout layout = Layout::nhwc;
  int64_t max_batch = 1;
  std::string conv_algo = "auto";  // --conv_algo
  // --dtype=bfloat16 (CPU): convolutions (conv_algo is then cpu.onednn_bf16) and fully-connected layers multiply
  // in bfloat16; their inputs, outputs, weights and gradients, and every other layer, stay float32.
  bool bf16 = false;
  // Data-parallel ranks, for layers that communicate inside a step (synchronised BatchNormalization).
  // Null: one process. Must outlive the model.
  Communicator* comm = nullptr;
  bool sync_batchnorm = false;     // --sync_batchnorm: every BatchNormalization uses global statistics
  Device device = Device::cpu;     // --enable_gpu
  gpu::Arena* arena = nullptr;     // the model's device memory (device == gpu); set by Model::build
  SharedWorkspace* workspace = nullptr;  // scratch shared by the layers (null: each its own); set by Model::build
                                         // (on the GPU always: cuDNN's and batch normalization's scratch)
  // Activation-gradient memory shared by the layers (layers/gradient_scratch.h; null: each buffer its own),
  // set by Model::build unless private_scratch; `level` is the nesting level of the chain being built (the
  // model's layers 0, a block's paths one more than the block).
  GradientScratch* gradients = nullptr;
  int level = 0;
  // Every activation gradient, and on the CPU every convolution's workspace, in memory of its own rather than
  // shared: the same results (tests/models/test_gradient_scratch.cpp holds the two builds to
  // it), and every activation gradient still readable after a whole backward pass (tests that compare them
  // all). Costs the memory sharing saves.
  bool private_scratch = false;
  // What zeros() and gradient() handed out, in floats (Model::build counts its buffers; null: not counted).
  struct Counters {
    int64_t floats = 0;              // every zeros() buffer
    int64_t private_gradients = 0;   // of which activation gradients of their own (no scratch)
    int64_t private_workspaces = 0;  // and workspaces of their own (no shared workspace)
  };
  Counters* counters = nullptr;
  // Shapes only (models/plan.h): the layers declare their shapes and parameters, zeros() below hands out
  // storage-less tensors, and a layer that runs after such a build is a bug. For listings of the zoo, whose
  // scratch and activation buffers (an ImageNet convolution's im2col is 100+ MB at batch 1) cost seconds.
  bool plan_only = false;
  // A zero-filled buffer on the model's device (GPU: carved from the arena; freed with the model); plan_only:
  // the shape without storage.
  Tensor zeros(const Shape& shape, Layout layout = Layout::flat) const;
  // An activation-gradient buffer of `full` (dimension 0: max_batch) in `slot` of nesting level `level`
  // (GradientScratch::Slot): the shared scratch's, or zeros() of its own when there is no scratch.
  GradientBuffer gradient(int level, int slot, const Shape& full, Layout layout) const;
  bool gpu() const { return device == Device::gpu; }
};

// normal_0_01: N(0, 0.01^2), not truncated, whatever the fans: d2l's init_weights (PyTorch edition) and
// NormalInitializer(0.01) (DJL edition), the initialisation of its ResNet-18 on Fashion-MNIST.
enum class Init { zeros, ones, glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, normal_0_01 };
Init parse_init(const std::string& name);  // PyDTNN initializer names; throws dtnn::Error otherwise
const char* init_name(Init init);
// Fills dst[0..n) with draws of the initializer for the given fans (Keras definitions; the normal
// variants are truncated at two standard deviations).
void init_fill(Init init, int64_t fan_in, int64_t fan_out, Rng& rng, float* dst, int64_t n);

// A trainable parameter (in the Model's parameter and gradient slabs) or, in Layer::buffers(), a
// non-trainable state array (in the Model's state slab; grad stays empty).
struct Param {
  std::string name;  // PyDTNN variable name: "weights", "biases", "gamma", "running_mean"
  Shape shape;
  Init init = Init::zeros;
  int64_t fan_in = 0, fan_out = 0;
  Tensor value;  // views into the Model's parameter slab (on the model's device)
  Tensor grad;   // views into the Model's gradient slab (on the model's device)
  Tensor host;   // the value's host copy (== value on the CPU; on the GPU valid after Model::download())
};

class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string type() const = 0;  // PyDTNN canonical name: "Conv2D", "FC", "Relu", ...
  // Computes and returns the per-sample output shape; allocates internal per-batch buffers.
  virtual Shape build(const Shape& in_sample, const BuildContext& ctx) = 0;
  virtual void forward(const Tensor& x, const Tensor& y, Mode mode) = 0;
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) = 0;

  // Layers whose output is their input reinterpreted (Flatten) get views instead of buffers and are
  // never called.
  virtual bool is_reshape() const { return false; }
  // Elementwise layers that may run with y aliasing x and dx aliasing dy (their backward reads only y,
  // dy or their own state). The Model lets them do so when the layer before does not need its own
  // output in backward: fewer buffers, so the activations of a step stay in cache.
  virtual bool can_run_in_place() const { return false; }
  // True when backward() reads this layer's output y (activations).
  virtual bool backward_reads_output() const { return false; }
  // True when a training forward/backward runs collectives of BuildContext::comm (synchronised
  // BatchNormalization): every rank must then run every step, none may sit one out with no samples.
  virtual bool communicates_in_step() const { return false; }
  // Draws initial parameter values (and sets buffers to their initial values). The default fills each
  // Param in storage order; layers whose storage order depends on the layout override it so both
  // layouts start from the same logical weights. Blocks initialise their children in id order.
  virtual void init_params(Rng& rng);
  // The "Parameters" column of the model table, e.g. "padd=(1,1), stride=(1,1), dilat=(1,1)".
  virtual std::string describe() const { return ""; }
  // The layer's weights shape for the model table (empty shape when it has none).
  virtual Shape weights_shape() const { return params_.empty() ? Shape{} : params_[0].shape; }
  // The convolution algorithm a layer runs ("" for layers without one), and why it is not the requested one.
  virtual std::string algorithm_name() const { return {}; }
  virtual std::string algorithm_note() const { return {}; }
  // How the algorithm was chosen: "requested", "fallback", "heuristic", "best_of (timed)", ... (conv_select.h).
  virtual std::string algorithm_choice() const { return {}; }
  // The canonical problem string of the layer's convolution at the build batch size ("" for others).
  virtual std::string problem_string() const { return {}; }
  // Forward floating-point operations per sample (a multiply-add counts 2), children included;
  // 0 for layers whose cost is only memory traffic.
  virtual double forward_flops() const { return 0.0; }
  // The most operation events (trace/op_trace.h) one forward plus one backward of this layer records at
  // the build batch size, its children's not included (the Model sums over every layer); 0 for layers that
  // record none. After build().
  virtual int64_t trace_op_events() const { return 0; }
  // Seeds per-layer randomness (dropout); called once after build.
  virtual void seed(uint64_t) {}
  // Every layer inside a block (AdditionBlock, ConcatenationBlock), nested blocks' layers included,
  // depth-first in PyDTNN's id order; empty for plain layers. Parameters, buffers and ids of children belong to the children.
  virtual std::vector<Layer*> children() const { return {}; }
  // Blocks apply f to each of their paths (before build); used by the fusion pass to rewrite them.
  virtual void transform_paths(const std::function<void(Path&)>& f) {}
  // The fusion pass offers the Relu that follows this layer; a layer that can apply it itself (an
  // AdditionBlock: y = relu(sum of paths) in its last addition pass) takes ownership and returns true.
  virtual bool absorb_relu(std::unique_ptr<Layer>& relu) { return false; }

  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }
  std::vector<Param>& buffers() { return buffers_; }
  const std::vector<Param>& buffers() const { return buffers_; }
  int64_t num_params() const;      // this layer's trainable values plus those of its children
  int64_t num_own_params() const;  // this layer's trainable values only
  const Shape& output_shape() const { return out_sample_; }
  int id = 0;  // PyDTNN layer id (Input is 0), used in weight-file keys

 protected:
  std::vector<Param> params_;
  std::vector<Param> buffers_;  // non-trainable state (BatchNormalization's running statistics)
  Shape out_sample_;
  Layout layout_ = Layout::nhwc;
};

}  // namespace dtnn
