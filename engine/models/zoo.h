// The model zoo's builders (one per PyDTNN model name, listed in models/registry.cpp) and the small
// helpers they share. Internal to engine/models: callers use model_zoo() / create_model().
//
// Every builder appends layers to an empty Model in PyDTNN's order: Input (HWC, as PyDTNN writes it),
// the body, and a last FC followed by Softmax (the trainer fuses Softmax with the cross entropy).
#pragma once

#include <memory>

#include "layers/layers.h"
#include "models/model.h"

namespace dtnn::zoo {

// ---- helpers --------------------------------------------------------------------------------------

inline std::unique_ptr<Layer> conv(int64_t nfilters, Pair filter, Pair stride = 1, Pair padding = 0,
                                   bool use_bias = true, Init weights = Init::glorot_uniform) {
  Conv2DSpec s;
  s.nfilters = nfilters;
  s.filter_shape = filter;
  s.stride = stride;
  s.padding = padding;
  s.use_bias = use_bias;
  s.weights_initializer = weights;
  return make_conv2d(s);
}

// Depthwise convolution: one filter per input channel (Conv2DSpec::groups = 0), nfilters = C.
inline std::unique_ptr<Layer> depthwise_conv(int64_t channels, Pair filter, Pair stride, Pair padding,
                                             bool use_bias, Init weights) {
  Conv2DSpec s;
  s.nfilters = channels;
  s.groups = 0;
  s.filter_shape = filter;
  s.stride = stride;
  s.padding = padding;
  s.use_bias = use_bias;
  s.weights_initializer = weights;
  return make_conv2d(s);
}

inline std::unique_ptr<Layer> bn(double epsilon = 1e-5) {
  BatchNormSpec s;
  s.epsilon = epsilon;
  return make_batchnorm(s);
}

inline std::unique_ptr<Layer> relu() { return make_activation("relu"); }

inline std::unique_ptr<Layer> max_pool(Pair shape, Pair stride, Pair padding = 0) {
  Pool2DSpec s;
  s.pool_shape = shape;
  s.stride = stride;
  s.padding = padding;
  return make_max_pool2d(s);
}

inline std::unique_ptr<Layer> avg_pool(Pair shape, Pair stride, Pair padding = 0) {
  Pool2DSpec s;
  s.pool_shape = shape;
  s.stride = stride;
  s.padding = padding;
  return make_avg_pool2d(s);
}

// Global average pooling: pool_shape 0 = the whole input extent.
inline std::unique_ptr<Layer> global_avg_pool() { return avg_pool({0, 0}, 1); }

// ---- builders -------------------------------------------------------------------------------------

// zoo_alexnet.cpp
void build_alexnet_imagenet(Model& m);
void build_alexnet_cifar10(Model& m);

// zoo_vgg.cpp
void build_vgg1(Model& m);
void build_vgg2(Model& m);
void build_vgg3(Model& m);
void build_vgg3do(Model& m);
void build_vgg3do2(Model& m);
void build_vgg3dobn(Model& m);
void build_vgg11(Model& m);
void build_vgg11_imagenet(Model& m);
void build_vgg11bn_imagenet(Model& m);
void build_vgg11_cifar10(Model& m);
void build_vgg11bn_cifar10(Model& m);
void build_vgg16(Model& m);
void build_vgg16_imagenet(Model& m);
void build_vgg16bn_imagenet(Model& m);
void build_vgg16_cifar10(Model& m);
void build_vgg16bn_cifar10(Model& m);
void build_vgg19_imagenet(Model& m);
void build_vgg19bn_imagenet(Model& m);
void build_vgg19_cifar10(Model& m);
void build_vgg19bn_cifar10(Model& m);

// zoo_resnet.cpp
void build_resnet18_imagenet(Model& m);
void build_resnet34_imagenet(Model& m);
void build_resnet50_imagenet(Model& m);
void build_resnet101_imagenet(Model& m);
void build_resnet152_imagenet(Model& m);
void build_resnet18_cifar10(Model& m);
void build_resnet34_cifar10(Model& m);
void build_resnet50_cifar10(Model& m);
void build_resnet101_cifar10(Model& m);
void build_resnet152_cifar10(Model& m);
void build_resnet18_d2l(Model& m);
void build_resnet20_cifar10(Model& m);
void build_resnet32_cifar10(Model& m);
void build_resnet44_cifar10(Model& m);
void build_resnet56_cifar10(Model& m);
void build_resnet110_cifar10(Model& m);
void build_resnet1202_cifar10(Model& m);

// zoo_densenet.cpp
void build_densenet_cifar10(Model& m);
void build_densenet121_cifar10(Model& m);
void build_densenet161_cifar10(Model& m);
void build_densenet169_cifar10(Model& m);
void build_densenet201_cifar10(Model& m);
void build_densenet121_imagenet(Model& m);
void build_densenet161_imagenet(Model& m);
void build_densenet169_imagenet(Model& m);
void build_densenet201_imagenet(Model& m);

// zoo_inception.cpp
void build_googlenet_cifar10(Model& m);
void build_googlenet_imagenet(Model& m);
void build_inceptionv3_cifar10(Model& m);
void build_inceptionv3_imagenet(Model& m);

// zoo_mobilenet.cpp
void build_mobilenetv1_cifar10(Model& m);
void build_mobilenetv1_imagenet(Model& m);

}  // namespace dtnn::zoo
