// GoogLeNet (Inception v1) and Inception v3, built from ConcatenationBlocks of conv - BN - ReLU paths.
//
// The ImageNet variants are torchvision's (GoogLeNet and Inception3, both without the auxiliary
// classifiers; convs without bias, BN epsilon 0.001), so their parameter counts are the canonical
// 6,624,904 and 23,834,568. Where torchvision's max pools use ceil_mode, these use padding 1 instead,
// which gives the same output sizes (padded positions never win a max).
#include "models/zoo.h"

namespace dtnn::zoo {
namespace {

struct Cbr {  // how a conv - BN - ReLU unit is declared
  bool bias;
  double bn_epsilon;
};

void cbr(Path& p, int64_t filters, Pair filter, Pair stride, Pair padding, Cbr c) {
  p.push_back(conv(filters, filter, stride, padding, c.bias, Init::he_uniform));
  p.push_back(bn(c.bn_epsilon));
  p.push_back(relu());
}

Path cbr(int64_t filters, Pair filter, Pair stride, Pair padding, Cbr c) {
  Path p;
  cbr(p, filters, filter, stride, padding, c);
  return p;
}

void cbr(Model& m, int64_t filters, Pair filter, Pair stride, Pair padding, Cbr c) {
  m.add(conv(filters, filter, stride, padding, c.bias, Init::he_uniform));
  m.add(bn(c.bn_epsilon), "relu");
}

std::unique_ptr<Layer> concat(std::vector<Path> paths) { return make_concatenation_block(std::move(paths)); }

// ---- GoogLeNet --------------------------------------------------------------------------------------

struct InceptionV1 {
  int64_t n1x1, n3x3red, n3x3, n5x5red, n5x5, pool_planes;
};
// 3a, 3b, (pool), 4a..4e, (pool), 5a, 5b
const InceptionV1 k3[2] = {{64, 96, 128, 16, 32, 32}, {128, 128, 192, 32, 96, 64}};
const InceptionV1 k4[5] = {{192, 96, 208, 16, 48, 64},
                           {160, 112, 224, 24, 64, 64},
                           {128, 128, 256, 24, 64, 64},
                           {112, 144, 288, 32, 64, 64},
                           {256, 160, 320, 32, 128, 128}};
const InceptionV1 k5[2] = {{256, 160, 320, 32, 128, 128}, {384, 192, 384, 48, 128, 128}};

// Branches: 1x1; 1x1 -> 3x3; 1x1 -> `five_by_five_convs` x 3x3 (the "5x5" branch); maxpool 3/1 p1 -> 1x1.
void inception_v1(Model& m, const InceptionV1& b, int five_by_five_convs, Cbr c) {
  std::vector<Path> paths;
  paths.push_back(cbr(b.n1x1, 1, 1, 0, c));
  Path p3 = cbr(b.n3x3red, 1, 1, 0, c);
  cbr(p3, b.n3x3, 3, 1, 1, c);
  paths.push_back(std::move(p3));
  Path p5 = cbr(b.n5x5red, 1, 1, 0, c);
  for (int i = 0; i < five_by_five_convs; ++i) cbr(p5, b.n5x5, 3, 1, 1, c);
  paths.push_back(std::move(p5));
  Path pp;
  pp.push_back(max_pool(3, 1, 1));
  cbr(pp, b.pool_planes, 1, 1, 0, c);
  paths.push_back(std::move(pp));
  m.add(concat(std::move(paths)));
}

void googlenet_modules(Model& m, int five_by_five_convs, Cbr c, bool torchvision_pools) {
  for (const InceptionV1& b : k3) inception_v1(m, b, five_by_five_convs, c);
  m.add(max_pool(3, 2, 1));
  for (const InceptionV1& b : k4) inception_v1(m, b, five_by_five_convs, c);
  // torchvision: MaxPool2d(2, 2, ceil_mode=True), 14x14 -> 7x7; PyDTNN: maxpool 3/2 p1 (also halves).
  if (torchvision_pools) m.add(max_pool(2, 2));
  else m.add(max_pool(3, 2, 1));
  for (const InceptionV1& b : k5) inception_v1(m, b, five_by_five_convs, c);
}

// ---- Inception v3 -----------------------------------------------------------------------------------

const Cbr kV3{false, 1e-3};

// InceptionA (Mixed_5b/c/d): 1x1 64 | 1x1 48 -> 5x5 p2 64 | 1x1 64 -> 3x3 96 -> 3x3 96 | avgpool 3/1 p1
// -> 1x1 pool_features.
void inception_a(Model& m, int64_t pool_features) {
  std::vector<Path> paths;
  paths.push_back(cbr(64, 1, 1, 0, kV3));
  Path p5 = cbr(48, 1, 1, 0, kV3);
  cbr(p5, 64, 5, 1, 2, kV3);
  paths.push_back(std::move(p5));
  Path p3 = cbr(64, 1, 1, 0, kV3);
  cbr(p3, 96, 3, 1, 1, kV3);
  cbr(p3, 96, 3, 1, 1, kV3);
  paths.push_back(std::move(p3));
  Path pp;
  pp.push_back(avg_pool(3, 1, 1));
  cbr(pp, pool_features, 1, 1, 0, kV3);
  paths.push_back(std::move(pp));
  m.add(concat(std::move(paths)));
}

// InceptionB (Mixed_6a, grid reduction): 3x3/2 384 | 1x1 64 -> 3x3 p1 96 -> 3x3/2 96 | maxpool 3/2.
void inception_b(Model& m) {
  std::vector<Path> paths;
  paths.push_back(cbr(384, 3, 2, 0, kV3));
  Path p3 = cbr(64, 1, 1, 0, kV3);
  cbr(p3, 96, 3, 1, 1, kV3);
  cbr(p3, 96, 3, 2, 0, kV3);
  paths.push_back(std::move(p3));
  paths.push_back(path(max_pool(3, 2)));
  m.add(concat(std::move(paths)));
}

// InceptionC (Mixed_6b..e): 1x1 192 | 1x1 c7 -> 1x7 c7 -> 7x1 192 | 1x1 c7 -> 7x1 c7 -> 1x7 c7 -> 7x1 c7
// -> 1x7 192 | avgpool 3/1 p1 -> 1x1 192. A 1x7 filter pads (0, 3), a 7x1 filter (3, 0).
void inception_c(Model& m, int64_t c7) {
  const Pair k1x7{1, 7}, k7x1{7, 1}, p1x7{0, 3}, p7x1{3, 0};
  std::vector<Path> paths;
  paths.push_back(cbr(192, 1, 1, 0, kV3));
  Path p7 = cbr(c7, 1, 1, 0, kV3);
  cbr(p7, c7, k1x7, 1, p1x7, kV3);
  cbr(p7, 192, k7x1, 1, p7x1, kV3);
  paths.push_back(std::move(p7));
  Path p77 = cbr(c7, 1, 1, 0, kV3);
  cbr(p77, c7, k7x1, 1, p7x1, kV3);
  cbr(p77, c7, k1x7, 1, p1x7, kV3);
  cbr(p77, c7, k7x1, 1, p7x1, kV3);
  cbr(p77, 192, k1x7, 1, p1x7, kV3);
  paths.push_back(std::move(p77));
  Path pp;
  pp.push_back(avg_pool(3, 1, 1));
  cbr(pp, 192, 1, 1, 0, kV3);
  paths.push_back(std::move(pp));
  m.add(concat(std::move(paths)));
}

// InceptionD (Mixed_7a, grid reduction): 1x1 192 -> 3x3/2 320 | 1x1 192 -> 1x7 192 -> 7x1 192 -> 3x3/2
// 192 | maxpool 3/2.
void inception_d(Model& m) {
  std::vector<Path> paths;
  Path p3 = cbr(192, 1, 1, 0, kV3);
  cbr(p3, 320, 3, 2, 0, kV3);
  paths.push_back(std::move(p3));
  Path p7 = cbr(192, 1, 1, 0, kV3);
  cbr(p7, 192, {1, 7}, 1, {0, 3}, kV3);
  cbr(p7, 192, {7, 1}, 1, {3, 0}, kV3);
  cbr(p7, 192, 3, 2, 0, kV3);
  paths.push_back(std::move(p7));
  paths.push_back(path(max_pool(3, 2)));
  m.add(concat(std::move(paths)));
}

// The split 1x3 / 3x1 pair of InceptionE, as a nested ConcatenationBlock.
std::unique_ptr<Layer> split_1x3_3x1(int64_t filters) {
  std::vector<Path> paths;
  paths.push_back(cbr(filters, {1, 3}, 1, {0, 1}, kV3));
  paths.push_back(cbr(filters, {3, 1}, 1, {1, 0}, kV3));
  return concat(std::move(paths));
}

// InceptionE (Mixed_7b/c): 1x1 320 | 1x1 384 -> [1x3 384 | 3x1 384] | 1x1 448 -> 3x3 p1 384 -> [1x3 384 |
// 3x1 384] | avgpool 3/1 p1 -> 1x1 192. 2048 channels out.
void inception_e(Model& m) {
  std::vector<Path> paths;
  paths.push_back(cbr(320, 1, 1, 0, kV3));
  Path p3 = cbr(384, 1, 1, 0, kV3);
  p3.push_back(split_1x3_3x1(384));
  paths.push_back(std::move(p3));
  Path pd = cbr(448, 1, 1, 0, kV3);
  cbr(pd, 384, 3, 1, 1, kV3);
  pd.push_back(split_1x3_3x1(384));
  paths.push_back(std::move(pd));
  Path pp;
  pp.push_back(avg_pool(3, 1, 1));
  cbr(pp, 192, 1, 1, 0, kV3);
  paths.push_back(std::move(pp));
  m.add(concat(std::move(paths)));
}

void inceptionv3_modules(Model& m) {
  inception_a(m, 32);
  inception_a(m, 64);
  inception_a(m, 64);
  inception_b(m);
  inception_c(m, 128);
  inception_c(m, 160);
  inception_c(m, 160);
  inception_c(m, 192);
  inception_d(m);
  inception_e(m);
  inception_e(m);
}

}  // namespace

// PyDTNN googlenet_cifar10 (kuangliu's CIFAR GoogLeNet), 32x32x3: conv3x3 p1 192 - BN - ReLU (no
// downsampling), 3a, 3b, maxpool 3/2 p1, 4a..4e, maxpool 3/2 p1, 5a, 5b (8x8x1024), avgpool 8x8,
// FC1024 - BN - ReLU, FC10. Convs with bias, he_uniform; the "5x5" branch is two 3x3 convs.
void build_googlenet_cifar10(Model& m) {
  const Cbr c{true, 1e-5};
  m.add(make_input(32, 32, 3));
  cbr(m, 192, 3, 1, 1, c);
  googlenet_modules(m, 2, c, false);
  m.add(avg_pool(8, 1));
  m.add(make_flatten());
  m.add(make_fc(1024));
  m.add(bn(), "relu");
  m.add(make_fc(10), "softmax");
}

// torchvision's GoogLeNet without auxiliary classifiers, 224x224x3: conv7x7/2 p3 64 - maxpool 3/2 p1 -
// conv1x1 64 - conv3x3 p1 192 - maxpool 3/2 p1 - 3a, 3b - maxpool 3/2 p1 - 4a..4e - maxpool 2/2 - 5a, 5b -
// global average pool - Dropout .2 - FC1000; every conv is conv (no bias) - BN (eps 0.001) - ReLU, and
// the "5x5" branch is a single 3x3 conv, as in torchvision.
// Fixed against PyDTNN's googlenet_imagenet, which was the CIFAR network (3x3 stem without downsampling,
// so the modules ran at 224x224 and avgpool 8x8/1 left a 49x49 map) with FC1000.
void build_googlenet_imagenet(Model& m) {
  const Cbr c{false, 1e-3};
  m.add(make_input(224, 224, 3));
  cbr(m, 64, 7, 2, 3, c);
  m.add(max_pool(3, 2, 1));
  cbr(m, 64, 1, 1, 0, c);
  cbr(m, 192, 3, 1, 1, c);
  m.add(max_pool(3, 2, 1));
  googlenet_modules(m, 1, c, true);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_dropout(0.2));
  m.add(make_fc(1000), "softmax");
}

// torchvision's Inception3 without auxiliary logits, 299x299x3: conv3x3/2 32 - conv3x3 32 - conv3x3 p1 64
// - maxpool 3/2 - conv1x1 80 - conv3x3 192 - maxpool 3/2 (35x35x192), Mixed_5b..7c, global average pool,
// Dropout .5, FC1000. Every conv is conv (no bias) - BN (eps 0.001) - ReLU.
// Fixed against PyDTNN's inceptionv3_imagenet: it had no BN and no ReLU anywhere in the body, swapped
// paddings on the 1x7/7x1 convs ((1,7) with padding (3,0)), a padded 1x1 in Mixed_7a/7b, a 224x224
// input, and an FC1024 - BN - ReLU head. (torchvision's branch avg pools count the padding; dtnn's
// average pool divides by the in-bounds elements, PyDTNN's semantics: only border values differ.)
void build_inceptionv3_imagenet(Model& m) {
  m.add(make_input(299, 299, 3));
  cbr(m, 32, 3, 2, 0, kV3);
  cbr(m, 32, 3, 1, 0, kV3);
  cbr(m, 64, 3, 1, 1, kV3);
  m.add(max_pool(3, 2));
  cbr(m, 80, 1, 1, 0, kV3);
  cbr(m, 192, 3, 1, 0, kV3);
  m.add(max_pool(3, 2));
  inceptionv3_modules(m);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_dropout(0.5));
  m.add(make_fc(1000), "softmax");
}

// Inception v3 for 32x32x3 CIFAR-10: the canonical modules above (Mixed_5* at 32x32, 6* at 15x15, 7* at
// 7x7) behind a CIFAR stem that keeps the 32x32 resolution (conv3x3 p1 32, 32, 64 - conv1x1 80 - conv3x3
// p1 192: the ImageNet stem without its stride-2 conv, its unpadded convs and its max pools), global
// average pool, then PyDTNN's head FC1024 - BN - ReLU - FC10.
// Fixed against PyDTNN's inceptionv3_cifar10, which took 299x299 inputs (not CIFAR-10's) and had the
// body bugs listed for inceptionv3_imagenet.
void build_inceptionv3_cifar10(Model& m) {
  m.add(make_input(32, 32, 3));
  cbr(m, 32, 3, 1, 1, kV3);
  cbr(m, 32, 3, 1, 1, kV3);
  cbr(m, 64, 3, 1, 1, kV3);
  cbr(m, 80, 1, 1, 0, kV3);
  cbr(m, 192, 3, 1, 1, kV3);
  inceptionv3_modules(m);
  m.add(global_avg_pool());
  m.add(make_flatten());
  m.add(make_fc(1024));
  m.add(bn(), "relu");
  m.add(make_fc(10), "softmax");
}

}  // namespace dtnn::zoo
