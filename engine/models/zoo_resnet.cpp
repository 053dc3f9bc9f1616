// ResNets: the ImageNet ResNet-18/34/50/101/152 (torchvision's), PyDTNN's CIFAR-10 ResNet-18..152
// (kuangliu-style: ImageNet widths on a 32x32 stride-1 stem), He et al.'s CIFAR ResNet-6n+2
// (20, 32, 44, 56, 110, 1202), and d2l's ResNet-18 for Fashion-MNIST.
//
// A residual block is AdditionBlock([residual path], [shortcut]) followed by ReLU; the shortcut is the
// identity (empty path) or a projection (1x1 conv with the block's stride + BN).
#include "models/zoo.h"

namespace dtnn::zoo {
namespace {

struct Conv {
  bool bias;
  Init init;
};

// Basic block: conv3x3/s - BN - ReLU - conv3x3 - BN (+ shortcut), then ReLU.
void basic_block(Model& m, int64_t filters, int64_t stride, bool project, Conv c) {
  Path residual = path(conv(filters, 3, stride, 1, c.bias, c.init), bn(), relu(),
                       conv(filters, 3, 1, 1, c.bias, c.init), bn());
  Path shortcut;
  if (project) shortcut = path(conv(filters, 1, stride, 0, c.bias, c.init), bn());
  std::vector<Path> paths;
  paths.push_back(std::move(residual));
  paths.push_back(std::move(shortcut));
  m.add(make_addition_block(std::move(paths)), "relu");
}

// Bottleneck block, v1.5 (the stride on the 3x3): conv1x1 n - BN - ReLU - conv3x3/s n - BN - ReLU -
// conv1x1 4n - BN (+ shortcut), then ReLU.
void bottleneck_block(Model& m, int64_t filters, int64_t stride, bool project, Conv c) {
  Path residual = path(conv(filters, 1, 1, 0, c.bias, c.init), bn(), relu(),
                       conv(filters, 3, stride, 1, c.bias, c.init), bn(), relu(),
                       conv(4 * filters, 1, 1, 0, c.bias, c.init), bn());
  Path shortcut;
  if (project) shortcut = path(conv(4 * filters, 1, stride, 0, c.bias, c.init), bn());
  std::vector<Path> paths;
  paths.push_back(std::move(residual));
  paths.push_back(std::move(shortcut));
  m.add(make_addition_block(std::move(paths)), "relu");
}

// Four stages of 64, 128, 256, 512 filters (stride 1, 2, 2, 2) with blocks[i] blocks each. A block
// projects its shortcut when its output shape differs from its input's (stride 2, or a channel change:
// the first bottleneck block of stage 1 goes from 64 to 256 channels).
void four_stages(Model& m, const int (&blocks)[4], bool bottleneck, Conv c) {
  const int64_t filters[] = {64, 128, 256, 512};
  int64_t channels = 64;  // the stem's
  for (int s = 0; s < 4; ++s) {
    for (int b = 0; b < blocks[s]; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      const int64_t out = bottleneck ? 4 * filters[s] : filters[s];
      const bool project = stride != 1 || out != channels;
      if (bottleneck) bottleneck_block(m, filters[s], stride, project, c);
      else basic_block(m, filters[s], stride, project, c);
      channels = out;
    }
  }
}

// torchvision's ImageNet ResNet (convs without bias, he_uniform; FC glorot): 224x224x3, conv7x7/2 p3 64
// - BN - ReLU - maxpool 3x3/2 p1, four stages, global average pool, FC1000.
void resnet_imagenet(Model& m, const int (&blocks)[4], bool bottleneck) {
  const Conv c{false, Init::he_uniform};
  m.add(make_input(224, 224, 3));
  m.add(conv(64, 7, 2, 3, false, c.init));
  m.add(bn(), "relu");
  m.add(max_pool(3, 2, 1));
  four_stages(m, blocks, bottleneck, c);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(1000), "softmax");
}

// PyDTNN's CIFAR-10 ResNet-18..152 (resnet18.py ... resnet152.py), 32x32x3: conv3x3 p1 64 + BN + ReLU
// stem, the four ImageNet stages (he_uniform convs with biases, as declared), global average pool,
// FC(512 or 2048) - BN - ReLU, FC10. Fixed: PyDTNN had no ReLU after the stem's BN.
void resnet_cifar10_wide(Model& m, const int (&blocks)[4], bool bottleneck) {
  const Conv c{true, Init::he_uniform};
  m.add(make_input(32, 32, 3));
  m.add(conv(64, 3, 1, 1, true, c.init));
  m.add(bn(), "relu");
  four_stages(m, blocks, bottleneck, c);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(bottleneck ? 2048 : 512));
  m.add(bn(), "relu");
  m.add(make_fc(10), "softmax");
}

// He et al. (2016) CIFAR ResNet-(6n+2): 32x32x3, conv3x3 p1 16 - BN - ReLU, three stages of n basic
// blocks with 16, 32, 64 filters (stride 1, 2, 2), global average pool, FC10. Convs without bias
// (every one feeds a BN), he_uniform. Shortcuts: projection (1x1 conv/s + BN, "option B") where the
// stride or the channel count changes (the first block of stages 2 and 3), identity elsewhere.
// Differences from PyDTNN's resnet{20,...,1202}_cifar10, on purpose:
//   - a ReLU after the stem's BN (PyDTNN had none);
//   - the head is GAP + FC10 (PyDTNN: GAP + FC64 - BN - ReLU + FC10);
//   - convs have no bias (PyDTNN's had one, redundant before BN);
//   - resnet44 has 7 blocks per stage (PyDTNN's had 9, i.e. it was a ResNet-56);
//   - resnet56/110/1202 project only where the shape changes (PyDTNN also projected in the first block
//     of stage 1, 16 -> 16 channels at stride 1).
// Parameters: 2,752 more than the option-A (zero-padding shortcut) original, e.g. ResNet-20 272,474.
void resnet_cifar10_6n2(Model& m, int n) {
  const Conv c{false, Init::he_uniform};
  m.add(make_input(32, 32, 3));
  m.add(conv(16, 3, 1, 1, false, c.init));
  m.add(bn(), "relu");
  const int64_t filters[] = {16, 32, 64};
  int64_t channels = 16;
  for (int s = 0; s < 3; ++s) {
    for (int b = 0; b < n; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      basic_block(m, filters[s], stride, stride != 1 || filters[s] != channels, c);
      channels = filters[s];
    }
  }
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(10), "softmax");
}

// d2l's "slightly modified ResNet-18" (Dive into Deep Learning, concise multi-GPU training; the PyTorch and
// DJL editions agree): Fashion-MNIST as it is, 28x28x1; conv3x3/1 p1 64 (bias) - BN - ReLU, no max pooling;
// four stages of two residual blocks, 64/128/256/512 channels, the first block of stages 2-4 at stride 2
// with a 1x1 strided convolution (bias, no BN: d2l's Residual(use_1x1conv=True)) as its shortcut; global
// average pooling, FC10. Every conv has a bias (d2l's nn.Conv2d default), even before BN. Weights are
// N(0, 0.01^2) as d2l's init_weights sets them, biases zero (DJL's default; PyTorch's edition keeps its
// default uniform biases). 11,175,818 trainable parameters: stem 768, stages 148,224 + 525,952 +
// 2,100,480 + 8,395,264, FC 5,130 (BN gamma and beta count, running statistics do not).
void resnet18_d2l(Model& m) {
  const Init w = Init::normal_0_01;
  m.add(make_input(28, 28, 1));
  m.add(conv(64, 3, 1, 1, true, w));
  m.add(bn(), "relu");
  const int64_t filters[] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    for (int b = 0; b < 2; ++b) {
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      Path residual = path(conv(filters[s], 3, stride, 1, true, w), bn(), relu(),
                           conv(filters[s], 3, 1, 1, true, w), bn());
      Path shortcut;
      if (stride != 1) shortcut = path(conv(filters[s], 1, stride, 0, true, w));
      std::vector<Path> paths;
      paths.push_back(std::move(residual));
      paths.push_back(std::move(shortcut));
      m.add(make_addition_block(std::move(paths)), "relu");
    }
  }
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(10, true, w), "softmax");
}

const int kBlocks18[4] = {2, 2, 2, 2};
const int kBlocks34[4] = {3, 4, 6, 3};
const int kBlocks50[4] = {3, 4, 6, 3};
const int kBlocks101[4] = {3, 4, 23, 3};
const int kBlocks152[4] = {3, 8, 36, 3};

}  // namespace

// ImageNet. Fixed against PyDTNN: resnet18/34/101/152_imagenet had the CIFAR stem (conv3x3/1 + BN, no
// downsampling, so 224x224 maps all the way to stage 1) and resnet50_imagenet a stem without BN/ReLU;
// all had biased convs before BN. Now torchvision's architecture and parameter counts: 11,689,512,
// 21,797,672, 25,557,032, 44,549,160, 60,192,808. (resnet50_imagenet is PyDTNN's resnet50v15_imagenet.)
void build_resnet18_imagenet(Model& m) { resnet_imagenet(m, kBlocks18, false); }
void build_resnet34_imagenet(Model& m) { resnet_imagenet(m, kBlocks34, false); }
void build_resnet50_imagenet(Model& m) { resnet_imagenet(m, kBlocks50, true); }
void build_resnet101_imagenet(Model& m) { resnet_imagenet(m, kBlocks101, true); }
void build_resnet152_imagenet(Model& m) { resnet_imagenet(m, kBlocks152, true); }

void build_resnet18_cifar10(Model& m) { resnet_cifar10_wide(m, kBlocks18, false); }
void build_resnet34_cifar10(Model& m) { resnet_cifar10_wide(m, kBlocks34, false); }
void build_resnet50_cifar10(Model& m) { resnet_cifar10_wide(m, kBlocks50, true); }
void build_resnet101_cifar10(Model& m) { resnet_cifar10_wide(m, kBlocks101, true); }
void build_resnet152_cifar10(Model& m) { resnet_cifar10_wide(m, kBlocks152, true); }

void build_resnet18_d2l(Model& m) { resnet18_d2l(m); }

void build_resnet20_cifar10(Model& m) { resnet_cifar10_6n2(m, 3); }
void build_resnet32_cifar10(Model& m) { resnet_cifar10_6n2(m, 5); }
void build_resnet44_cifar10(Model& m) { resnet_cifar10_6n2(m, 7); }
void build_resnet56_cifar10(Model& m) { resnet_cifar10_6n2(m, 9); }
void build_resnet110_cifar10(Model& m) { resnet_cifar10_6n2(m, 18); }
void build_resnet1202_cifar10(Model& m) { resnet_cifar10_6n2(m, 200); }

}  // namespace dtnn::zoo
