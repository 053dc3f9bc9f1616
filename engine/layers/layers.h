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
  // Channel groups: 1 is a standard convolution; G splits the C input and K output channels into G
  // independent convolutions; 0 means depthwise (G = C, set at build; nfilters must be a multiple of C).
  // PyDTNN's grouping="pointwise" is a standard 1x1 convolution.
  int64_t groups = 1;
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

// BatchNormalization over channels (spatial inputs: per channel over N*H*W; flat inputs: per feature).
struct BatchNormSpec {
  double momentum = 0.9;   // running = momentum * running + (1 - momentum) * batch statistic
  double epsilon = 1e-5;
  bool sync_stats = false; // statistics over every rank's batch (also forced by --sync_batchnorm)
};
std::unique_ptr<Layer> make_batchnorm(const BatchNormSpec& spec = {});

// Blocks: every path receives the block's input; an empty path is the identity.
//   AdditionBlock      y = sum of the paths' outputs (all of the same shape)   (ResNet)
//   ConcatenationBlock y = the paths' outputs concatenated along channels      (DenseNet, Inception)
std::unique_ptr<Layer> make_addition_block(std::vector<Path> paths);
std::unique_ptr<Layer> make_concatenation_block(std::vector<Path> paths);
// Layer fusion (PyDTNN's --enable_fused_* options): rewrites, in place and before build, the sequences
//   Conv2D, BatchNormalization, Relu -> Conv2DBatchNormalizationRelu   (conv_bn_relu)
//   Conv2D, Relu                     -> Conv2DRelu                     (conv_relu)
//   Conv2D, BatchNormalization       -> Conv2DBatchNormalization       (conv_bn)
//   BatchNormalization, Relu         -> BatchNormalizationRelu         (bn_relu)
// in that order of preference, inside blocks too. A fused layer owns the original layers (same ids,
// parameters and weight-file keys, so weight files work with and without fusion). In inference it folds
// BatchNormalization into the convolution's weights and bias and applies ReLU in the same pass; in
// training it runs the same computation as the separate layers (exactly the unfused results).
struct FusionOptions {
  bool bn_relu = false, conv_relu = false, conv_bn = false, conv_bn_relu = false;
  // AdditionBlock + Relu: the block's last addition writes relu(sum) (one pass over the activation less
  // in forward; bit-identical results); in training, a batch normalization ending the block's first path of
  // two computes relu(its output + the other path's) in its own output pass (ResidualReluNorm), so the
  // addition's pass goes too. Off here; `dtnn train` turns it on (--enable_fused_add_relu).
  bool add_relu = false;
  bool any() const { return bn_relu || conv_relu || conv_bn || conv_bn_relu || add_relu; }
};
void fuse_layers(Path& layers, const FusionOptions& options);

// Builds a Path from layers (a std::vector of unique_ptr cannot come from an initializer list).
template <typename... L>
Path path(L&&... layers) {
  Path p;
  (p.push_back(std::forward<L>(layers)), ...);
  return p;
}
// Activations by PyDTNN name: "relu", "sigmoid", "tanh", "softmax". Throws dtnn::Error otherwise.
std::unique_ptr<Layer> make_activation(const std::string& name);

}  // namespace dtnn
