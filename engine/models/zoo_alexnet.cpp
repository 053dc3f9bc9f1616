// AlexNet, as PyDTNN declares it (alexnet.py, alexnet_cifar10.py): no LRN, no channel groups, glorot
// initialisation, biases everywhere.
#include "models/zoo.h"

namespace dtnn::zoo {

// PyDTNN alexnet / alexnet_imagenet, 227x227x3: conv11x11/4 96 - mp3/2 - conv5x5 p2 256 - mp3/2 -
// conv3x3 p1 384, 384, 256 - mp3/2 - FC4096 - Drop .5 - FC4096 - Drop .5 - FC1000, ReLU after every
// conv and hidden FC. The one-tower (96-filter, ungrouped) AlexNet: 62,378,344 parameters.
void build_alexnet_imagenet(Model& m) {
  m.add(make_input(227, 227, 3));
  m.add(conv(96, 11, 4, 0), "relu");
  m.add(max_pool(3, 2));
  m.add(conv(256, 5, 1, 2), "relu");
  m.add(max_pool(3, 2));
  m.add(conv(384, 3, 1, 1), "relu");
  m.add(conv(384, 3, 1, 1), "relu");
  m.add(conv(256, 3, 1, 1), "relu");
  m.add(max_pool(3, 2));
  m.add(make_flatten());
  m.add(make_fc(4096), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(4096), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(1000), "softmax");
}

// PyDTNN alexnet_cifar10, 32x32x3: conv3x3/2 p1 64 - mp2/2 - conv3x3 p1 192 - mp2/2 - conv3x3 p1 384,
// 256, 256 - mp2/2 (2x2x256) - FC4096 - Drop .5 - FC4096 - Drop .5 - FC10.
void build_alexnet_cifar10(Model& m) {
  m.add(make_input(32, 32, 3));
  m.add(conv(64, 3, 2, 1), "relu");
  m.add(max_pool(2, 2));
  m.add(conv(192, 3, 1, 1), "relu");
  m.add(max_pool(2, 2));
  m.add(conv(384, 3, 1, 1), "relu");
  m.add(conv(256, 3, 1, 1), "relu");
  m.add(conv(256, 3, 1, 1), "relu");
  m.add(max_pool(2, 2));
  m.add(make_flatten());
  m.add(make_fc(4096), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(4096), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(10), "softmax");
}

}  // namespace dtnn::zoo
