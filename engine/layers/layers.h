// Constructors of every layer type, with PyDTNN's names and defaults. Model builders (engine/models)
// compose these; shapes are given as PyDTNN writes them (HWC for inputs, (h, w) pairs for filters).
#pragma once

#include <memory>
#include <string>

#include "layers/layer.h"

namespace dtnn {

struct Pair {
  int64_t v = 0, h = 0;  // vertical, horizontal
  Pair() = default;
  Pair(int64_t both) : v(both), h(both) {}  // NOLINT: an int means the same value for both, as in PyDTNN
  Pair(int64_t vv, int64_t hh) : v(vv), h(hh) {}
};

struct Conv2DSpec {
  int64_t nfilters = 1;
  Pair filter_shape{3, 3};
  Pair padding{0};
  Pair stride{1};
  Pair dilation{1};
  bool use_bias = true;
  Init weights_initializer = Init::glorot_uniform;
  Init biases_initializer = Init::zeros;
};

struct Pool2DSpec {
  Pair pool_shape{2, 2};  // 0 in a dimension means the whole input extent (global pooling)
  Pair padding{0};
  Pair stride{1};         // PyDTNN's default stride is 1
  Pair dilation{1};
};

std::unique_ptr<Layer> make_input(int64_t h, int64_t w, int64_t c);   // HWC, as PyDTNN writes it
std::unique_ptr<Layer> make_input_flat(int64_t features);
std::unique_ptr<Layer> make_fc(int64_t units, bool use_bias = true, Init weights = Init::glorot_uniform,
                               Init biases = Init::zeros);
std::unique_ptr<Layer> make_conv2d(const Conv2DSpec& spec);
std::unique_ptr<Layer> make_max_pool2d(const Pool2DSpec& spec);
std::unique_ptr<Layer> make_avg_pool2d(const Pool2DSpec& spec);
std::unique_ptr<Layer> make_flatten();
std::unique_ptr<Layer> make_dropout(double rate);
// Activations by PyDTNN name: "relu", "sigmoid", "tanh", "softmax". Throws dtnn::Error otherwise.
std::unique_ptr<Layer> make_activation(const std::string& name);

}  // namespace dtnn
