// DenseNet-BC: PyDTNN's CIFAR-10 DenseNets and torchvision's ImageNet DenseNet-121/161/169/201.
//
// A dense layer is ConcatenationBlock([BN - ReLU - conv1x1 4k - BN - ReLU - conv3x3 p1 k], []): the
// empty path is the identity, so each layer appends k channels to its input. A transition is BN - ReLU
// - conv1x1 floor(C/2) - avgpool 2/2. Convs have no bias and use he_uniform.
#include "models/zoo.h"

namespace dtnn::zoo {
namespace {

void dense_layer(Model& m, int64_t growth) {
  const Init he = Init::he_uniform;
  std::vector<Path> paths;
  paths.push_back(path(bn(), relu(), conv(4 * growth, 1, 1, 0, false, he), bn(), relu(),
                       conv(growth, 3, 1, 1, false, he)));
  paths.push_back(Path());
  m.add(make_concatenation_block(std::move(paths)));
}

// Dense blocks with transitions between them; returns the channel count after the last block.
int64_t dense_blocks(Model& m, int64_t channels, int64_t growth, const int (&blocks)[4]) {
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < blocks[i]; ++j) dense_layer(m, growth);
    channels += blocks[i] * growth;
    if (i < 3) {
      channels /= 2;  // compression 0.5
      m.add(bn(), "relu");
      m.add(conv(channels, 1, 1, 0, false, Init::he_uniform));
      m.add(avg_pool(2, 2));
    }
  }
  return channels;
}

// PyDTNN's densenet*_cifar10 (densenet121.py ...), 32x32x3: stem conv3x3 p1 2k (no downsampling), dense
// blocks, BN - ReLU - avgpool 4x4 (the whole 4x4 map), FC10 (glorot).
void densenet_cifar10(Model& m, int64_t growth, const int (&blocks)[4]) {
  m.add(make_input(32, 32, 3));
  m.add(conv(2 * growth, 3, 1, 1, false, Init::he_uniform));
  dense_blocks(m, 2 * growth, growth, blocks);
  m.add(bn(), "relu");
  m.add(avg_pool(4, 1));
  m.add(make_flatten());
  m.add(make_fc(10), "softmax");
}

// torchvision's DenseNet, 224x224x3: conv7x7/2 p3 2k - BN - ReLU - maxpool 3x3/2 p1, dense blocks,
// BN - ReLU - global average pool - FC1000.
// Fixed against PyDTNN's densenet*_imagenet, which kept the CIFAR stem (conv3x3/1, no pooling), so its
// last block ran at 28x28 and its final avgpool 4x4/1 left a 25x25 map feeding a huge FC.
void densenet_imagenet(Model& m, int64_t growth, const int (&blocks)[4]) {
  m.add(make_input(224, 224, 3));
  m.add(conv(2 * growth, 7, 2, 3, false, Init::he_uniform));
  m.add(bn(), "relu");
  m.add(max_pool(3, 2, 1));
  dense_blocks(m, 2 * growth, growth, blocks);
  m.add(bn(), "relu");
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(1000), "softmax");
}

const int kBlocks121[4] = {6, 12, 24, 16};
const int kBlocks161[4] = {6, 12, 36, 24};
const int kBlocks169[4] = {6, 12, 32, 32};
const int kBlocks201[4] = {6, 12, 48, 32};

}  // namespace

// PyDTNN densenet_cifar10: k = 12, blocks [6, 12, 24, 16].
void build_densenet_cifar10(Model& m) { densenet_cifar10(m, 12, kBlocks121); }
void build_densenet121_cifar10(Model& m) { densenet_cifar10(m, 32, kBlocks121); }
void build_densenet161_cifar10(Model& m) { densenet_cifar10(m, 48, kBlocks161); }
void build_densenet169_cifar10(Model& m) { densenet_cifar10(m, 32, kBlocks169); }
void build_densenet201_cifar10(Model& m) { densenet_cifar10(m, 32, kBlocks201); }

// Canonical counts (torchvision): 7,978,856, 28,681,000, 14,149,480, 20,013,928.
void build_densenet121_imagenet(Model& m) { densenet_imagenet(m, 32, kBlocks121); }
void build_densenet161_imagenet(Model& m) { densenet_imagenet(m, 48, kBlocks161); }
void build_densenet169_imagenet(Model& m) { densenet_imagenet(m, 32, kBlocks169); }
void build_densenet201_imagenet(Model& m) { densenet_imagenet(m, 32, kBlocks201); }

}  // namespace dtnn::zoo
