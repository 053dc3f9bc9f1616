// Optimizers, with PyDTNN's option names and update rules. They update one flat parameter array from
// one flat gradient array (the Model's slabs), element by element, keeping their state in slabs of the
// same size allocated at construction. For every element, with lr the current learning rate:
//
//   sgd      v = momentum*v + g
//            plain:    w -= lr * (decay*w + v)
//            nesterov: w -= lr * (decay*w + g + momentum*v)
//   adam     t += 1 (per step);  m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g^2
//            w -= lr * (decay*w + (m / (1-beta1^t)) / sqrt(v / (1-beta2^t) + epsilon))
//            (epsilon inside the square root, as PyDTNN does)
//
// `decay` is an L2 term applied to every trainable value (biases included), as in PyDTNN.
// Defaults (PyDTNN's launcher): learning_rate 0.01, momentum 0.9, nesterov false, decay 0,
// beta2 0.999, epsilon 1e-7. beta1 defaults to 0.9 (PyDTNN's 0.99 is a known trap; pass --beta1=0.99
// to reproduce it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tensor/tensor.h"

namespace dtnn {

struct OptimizerOptions {
  std::string name = "sgd";
  double learning_rate = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  double decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;
  // One update of w[0..n) with gradient g[0..n); n is the size given at construction.
  virtual void step(float* w, const float* g) = 0;
  double learning_rate() const { return lr_; }
  void set_learning_rate(double lr) { lr_ = lr; }

 protected:
  double lr_ = 0.01;
};

// Throws dtnn::Error for an unknown name or an invalid value.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, int64_t size);

}  // namespace dtnn
