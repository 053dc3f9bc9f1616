// VGG: PyDTNN's small CIFAR VGGs (vgg1, vgg2, vgg3 and the dropout/BN variants) and VGG-11/16/19 for
// ImageNet (224x224x3) and CIFAR-10 (32x32x3), each with and without BatchNormalization.
//
// The ImageNet models are torchvision's VGG (the 7x7 adaptive pool is the identity at 224x224), so their
// parameter counts are the canonical ones: vgg11 132,863,336, vgg16 138,357,544, vgg19 143,667,240,
// vgg11_bn 132,868,840, vgg16_bn 138,365,992, vgg19_bn 143,678,248. As in torchvision, the BN variants
// keep the conv biases.
#include <vector>

#include "models/zoo.h"

namespace dtnn::zoo {
namespace {

struct Stage {
  int layers;
  int64_t filters;
};
const std::vector<Stage> kVgg11 = {{1, 64}, {1, 128}, {2, 256}, {2, 512}, {2, 512}};
const std::vector<Stage> kVgg16 = {{2, 64}, {2, 128}, {3, 256}, {3, 512}, {3, 512}};
const std::vector<Stage> kVgg19 = {{2, 64}, {2, 128}, {4, 256}, {4, 512}, {4, 512}};

// Per stage: `layers` x (conv3x3 p1 [+ BN] + ReLU), then maxpool 2/2.
void features(Model& m, const std::vector<Stage>& cfg, bool batchnorm, Init init) {
  for (const Stage& s : cfg) {
    for (int l = 0; l < s.layers; ++l) {
      if (batchnorm) {
        m.add(conv(s.filters, 3, 1, 1, true, init));
        m.add(bn(), "relu");
      } else {
        m.add(conv(s.filters, 3, 1, 1, true, init), "relu");
      }
    }
    m.add(max_pool(2, 2));
  }
}

// PyDTNN's ImageNet VGG head (= torchvision's classifier): FC4096-ReLU-Drop .5 twice, FC1000.
void vgg_imagenet(Model& m, const std::vector<Stage>& cfg, bool batchnorm, Init init) {
  m.add(make_input(224, 224, 3));
  features(m, cfg, batchnorm, init);
  m.add(make_flatten());
  m.add(make_fc(4096, true, init), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(4096, true, init), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(1000, true, init), "softmax");
}

// PyDTNN's CIFAR-10 VGG heads (he_uniform everywhere; the 32x32 input leaves 1x1x512 after 5 pools):
//   plain (vgg16_cifar10):  FC512-ReLU-Drop .5 - FC512-ReLU-Drop .5 - FC10
//   BN (vgg11bn, vgg16bn):  Drop .5 - FC512-BN-ReLU - Drop .5 - FC512-BN-ReLU - FC10
void vgg_cifar10(Model& m, const std::vector<Stage>& cfg, bool batchnorm) {
  const Init he = Init::he_uniform;
  m.add(make_input(32, 32, 3));
  features(m, cfg, batchnorm, he);
  m.add(make_flatten());
  if (batchnorm) {
    m.add(make_dropout(0.5));
    m.add(make_fc(512, true, he));
    m.add(bn(), "relu");
    m.add(make_dropout(0.5));
    m.add(make_fc(512, true, he));
    m.add(bn(), "relu");
  } else {
    m.add(make_fc(512, true, he), "relu");
    m.add(make_dropout(0.5));
    m.add(make_fc(512, true, he), "relu");
    m.add(make_dropout(0.5));
  }
  m.add(make_fc(10, true, he), "softmax");
}

// PyDTNN vgg1/vgg2/vgg3 family: `stages` of 2 x (conv3x3 p1 he + ReLU) with 32, 64, 128 filters, each
// followed by maxpool 2/2 and, when dropout[i] > 0, Dropout(dropout[i]); then FC128 he + ReLU,
// Dropout(fc_dropout) when > 0, and FC10 (glorot) + softmax.
void vgg_small(Model& m, int stages, const double* dropout, double fc_dropout) {
  const Init he = Init::he_uniform;
  m.add(make_input(32, 32, 3));
  const int64_t filters[] = {32, 64, 128};
  for (int s = 0; s < stages; ++s) {
    m.add(conv(filters[s], 3, 1, 1, true, he), "relu");
    m.add(conv(filters[s], 3, 1, 1, true, he), "relu");
    m.add(max_pool(2, 2));
    if (dropout && dropout[s] > 0) m.add(make_dropout(dropout[s]));
  }
  m.add(make_flatten());
  m.add(make_fc(128, true, he), "relu");
  if (fc_dropout > 0) m.add(make_dropout(fc_dropout));
  m.add(make_fc(10), "softmax");
}

}  // namespace

void build_vgg1(Model& m) { vgg_small(m, 1, nullptr, 0.0); }
void build_vgg2(Model& m) { vgg_small(m, 2, nullptr, 0.0); }
void build_vgg3(Model& m) { vgg_small(m, 3, nullptr, 0.0); }

// vgg3 + Dropout .2 after each pool and after FC128.
void build_vgg3do(Model& m) {
  const double rates[] = {0.2, 0.2, 0.2};
  vgg_small(m, 3, rates, 0.2);
}

// vgg3 + Dropout .2/.3/.4 after the pools and .5 after FC128.
void build_vgg3do2(Model& m) {
  const double rates[] = {0.2, 0.3, 0.4};
  vgg_small(m, 3, rates, 0.5);
}

// PyDTNN vgg3dobn: per stage (32, 64, 128 filters) 2 x (conv3x3 p1 he - ReLU - BN) - mp2/2 - Dropout
// .2/.3/.4; FC512 he - ReLU - BN - Dropout .5 - FC10 he - softmax. (BN after the ReLU, as declared.)
void build_vgg3dobn(Model& m) {
  const Init he = Init::he_uniform;
  m.add(make_input(32, 32, 3));
  const int64_t filters[] = {32, 64, 128};
  const double rates[] = {0.2, 0.3, 0.4};
  for (int s = 0; s < 3; ++s) {
    for (int l = 0; l < 2; ++l) {
      m.add(conv(filters[s], 3, 1, 1, true, he), "relu");
      m.add(bn());
    }
    m.add(max_pool(2, 2));
    m.add(make_dropout(rates[s]));
  }
  m.add(make_flatten());
  m.add(make_fc(512, true, he), "relu");
  m.add(bn());
  m.add(make_dropout(0.5));
  m.add(make_fc(10, true, he), "softmax");
}

// PyDTNN vgg11 / vgg16: glorot initialisation. The _imagenet names (and vgg19, whose PyDTNN file
// already used it) use he_uniform; the bn variants are dtnn additions (torchvision's vgg*_bn).
void build_vgg11(Model& m) { vgg_imagenet(m, kVgg11, false, Init::glorot_uniform); }
void build_vgg11_imagenet(Model& m) { vgg_imagenet(m, kVgg11, false, Init::he_uniform); }
void build_vgg11bn_imagenet(Model& m) { vgg_imagenet(m, kVgg11, true, Init::he_uniform); }
void build_vgg16(Model& m) { vgg_imagenet(m, kVgg16, false, Init::glorot_uniform); }
void build_vgg16_imagenet(Model& m) { vgg_imagenet(m, kVgg16, false, Init::he_uniform); }
void build_vgg16bn_imagenet(Model& m) { vgg_imagenet(m, kVgg16, true, Init::he_uniform); }
void build_vgg19_imagenet(Model& m) { vgg_imagenet(m, kVgg19, false, Init::he_uniform); }
void build_vgg19bn_imagenet(Model& m) { vgg_imagenet(m, kVgg19, true, Init::he_uniform); }

// CIFAR-10: vgg16_cifar10 has 15,245,130 parameters (PyDTNN's README); vgg19_cifar10 and
// vgg19bn_cifar10 are dtnn additions with the same heads.
void build_vgg11_cifar10(Model& m) { vgg_cifar10(m, kVgg11, false); }
void build_vgg11bn_cifar10(Model& m) { vgg_cifar10(m, kVgg11, true); }
void build_vgg16_cifar10(Model& m) { vgg_cifar10(m, kVgg16, false); }
void build_vgg16bn_cifar10(Model& m) { vgg_cifar10(m, kVgg16, true); }
void build_vgg19_cifar10(Model& m) { vgg_cifar10(m, kVgg19, false); }
void build_vgg19bn_cifar10(Model& m) { vgg_cifar10(m, kVgg19, true); }

}  // namespace dtnn::zoo
