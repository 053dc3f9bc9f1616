// MobileNet v1 (width multiplier 1): a 3x3/2 stem and 13 depthwise-separable blocks, each a depthwise
// 3x3 conv (Conv2DSpec::groups = 0) - BN - ReLU followed by a pointwise 1x1 conv - BN - ReLU, no biases.
// Widths 64, 128 x2, 256 x2, 512 x6, 1024 x2; the first block of each multi-block group has stride 2.
#include "models/zoo.h"

namespace dtnn::zoo {
namespace {

struct Group {
  int64_t filters;
  int blocks;
};
const Group kLayout[] = {{64, 1}, {128, 2}, {256, 2}, {512, 6}, {1024, 2}};

void separable_blocks(Model& m, int64_t channels, double bn_epsilon, Init init) {
  for (const Group& g : kLayout) {
    for (int b = 0; b < g.blocks; ++b) {
      const int64_t stride = (g.blocks > 1 && b == 0) ? 2 : 1;
      m.add(depthwise_conv(channels, 3, stride, 1, false, init));
      m.add(bn(bn_epsilon), "relu");
      m.add(conv(g.filters, 1, 1, 0, false, init));
      m.add(bn(bn_epsilon), "relu");
      channels = g.filters;
    }
  }
}

}  // namespace

// PyDTNN mobilenetv1_cifar10 (mobilenetv1.py), 32x32x3: conv3x3/2 p1 32 + ReLU (no bias, no BN), the
// 13 blocks (16x16 -> 1x1x1024), average pool over the 1x1 map, FC1024 (no activation, as declared),
// FC10; glorot initialisation. Fixed: PyDTNN's depthwise conv had no backward (and ran only in NCHW),
// so the model could not train; here it trains in both layouts.
void build_mobilenetv1_cifar10(Model& m) {
  m.add(make_input(32, 32, 3));
  m.add(conv(32, 3, 2, 1, false), "relu");
  separable_blocks(m, 32, 1e-5, Init::glorot_uniform);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(1024));
  m.add(make_fc(10), "softmax");
}

// Keras MobileNet (alpha 1, 224x224x3, include_top): conv3x3/2 p1 32 - BN - ReLU, the 13 blocks
// (7x7x1024), global average pool, Dropout 0.001, FC1000; BN epsilon 0.001 (Keras's), he_uniform convs.
// Keras's ReLU6 is a ReLU here, and its final 1x1 conv on the pooled vector is the equivalent FC.
// Trainable parameters: 4,231,976, as Keras reports.
void build_mobilenetv1_imagenet(Model& m) {
  m.add(make_input(224, 224, 3));
  m.add(conv(32, 3, 2, 1, false, Init::he_uniform));
  m.add(bn(1e-3), "relu");
  separable_blocks(m, 32, 1e-3, Init::he_uniform);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_dropout(0.001));
  m.add(make_fc(1000), "softmax");
}

}  // namespace dtnn::zoo
