// Optimizers, with PyDTNN's option names and update rules. They update one flat parameter array from
// one flat gradient array (the Model's slabs), element by element, keeping their state in slabs of the
// same size allocated at construction. For every element, with lr the current learning rate and t the
// step count including this step (t = 1 on the first step):
//
//   sgd      v = momentum*v + g
//            plain:    w -= lr * (decay*w + v)
//            nesterov: w -= lr * (decay*w + g + momentum*v)
//   rmsprop  c = rho*c + (1-rho)*g^2
//            w -= lr * (decay*w + g / sqrt(c + epsilon))
//   adam     m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g^2
//            w -= lr * (decay*w + (m / (1-beta1^t)) / sqrt(v / (1-beta2^t) + epsilon))
//   nadam    as adam, with the numerator (m + (1-beta1)*g) / (1-beta1^t)
//
// epsilon sits inside the square root (rmsprop, adam, nadam), as in PyDTNN. Later PyDTNN versions
// "unrolled" nadam into m + (1-beta1)*g/(1-beta1^t), which contradicts the formula their own comment
// states; dtnn follows the stated formula above.
// `decay` is an L2 term applied to every trainable value (biases included), as in PyDTNN.
// Defaults (PyDTNN's launcher): learning_rate 0.01, momentum 0.9, nesterov false, decay 0, rho 0.9,
// beta2 0.999, epsilon 1e-7. beta1 defaults to 0.9 (PyDTNN's 0.99 is a known trap; pass --beta1=0.99
// to reproduce it).
//
// Devices: an optimizer made for the GPU keeps its state slabs in device memory and step() takes device
// pointers (the fused update kernels of backend/gpu_ops.h, same float arithmetic).
//
// Checkpoints: state() names every state slab (PyDTNN's names: velocity; cache; m, v) and steps() is
// the step counter t; restoring both (and the learning rate) continues a run bit-identically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace dtnn {

struct OptimizerOptions {
  std::string name = "sgd";  // sgd | rmsprop | adam | nadam
  double learning_rate = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  double decay = 0.0;
  double rho = 0.9;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;
  // One update of w[0..n) with gradient g[0..n); n is the size given at construction. Counts the step.
  void step(float* w, const float* g) {
    begin_step();
    update_range(w, g, 0, size_);
  }
  // The same step in pieces (the overlapped reduction updates each bucket as its sum arrives):
  // begin_step() counts the step, then update_range() updates elements [begin, end) of w from g (the
  // whole arrays are passed; state slabs are indexed alike). The ranges of one step must cover [0, n)
  // once; the result is bit-identical to step() whatever the split (every rule is element-wise).
  void begin_step() { ++steps_; }
  void update_range(float* w, const float* g, int64_t begin, int64_t end) {
    if (end > begin) update(w + begin, g + begin, begin, end - begin);
  }
  int64_t size() const { return size_; }
  double learning_rate() const { return lr_; }
  void set_learning_rate(double lr) { lr_ = lr; }

  // Checkpointing: the named state slabs (each max(size, 1) floats, owned by the optimizer) and the
  // number of steps taken. A restored optimizer needs its slabs overwritten and set_steps().
  virtual std::vector<std::pair<std::string, Tensor*>> state() = 0;
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  // The update of elements [offset, offset + n) of one step: w and g point at element `offset`; the
  // state slabs are indexed from `offset`. steps_ already counts the step.
  virtual void update(float* w, const float* g, int64_t offset, int64_t n) = 0;
  double lr_ = 0.01;
  int64_t steps_ = 0;
  int64_t size_ = 0;
};

// Throws dtnn::Error for an unknown name (listing the known ones) or an invalid value.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, int64_t size,
                                          Device device = Device::cpu);

}  // namespace dtnn
