// The model zoo, in one list. Each builder mirrors PyDTNN's create_<name>(model) file (research notes:
// models are declared with HWC input shapes; "activation" arguments append a separate activation layer),
// with PyDTNN's bugs fixed and canonical ImageNet architectures where PyDTNN's were not; every builder
// says what it changed. The builders live in zoo_*.cpp, one family per file.
#include "core/error.h"
#include "layers/layers.h"
#include "models/model.h"
#include "models/plan.h"
#include "models/zoo.h"

namespace dtnn {
namespace {

// PyDTNN simplemlp: Flatten -> 3 x (FC512 + ReLU) -> FC10 + softmax.
void build_simplemlp(Model& m) {
  m.add(make_input(28, 28, 1));
  m.add(make_flatten());
  m.add(make_fc(512), "relu");
  m.add(make_fc(512), "relu");
  m.add(make_fc(512), "relu");
  m.add(make_fc(10), "softmax");
}

// PyDTNN simplecnn: conv3x3 4 + ReLU -> conv3x3 8 + ReLU -> maxpool 2/2 -> FC128 + ReLU -> Dropout 0.5
// -> FC10 + softmax (202,458 parameters).
void build_simplecnn(Model& m) {
  m.add(make_input(28, 28, 1));
  Conv2DSpec conv;
  conv.filter_shape = {3, 3};
  conv.padding = 1;
  conv.stride = 1;
  conv.nfilters = 4;
  m.add(make_conv2d(conv), "relu");
  conv.nfilters = 8;
  m.add(make_conv2d(conv), "relu");
  Pool2DSpec pool;
  pool.pool_shape = {2, 2};
  pool.stride = 2;
  m.add(make_max_pool2d(pool));
  m.add(make_flatten());
  m.add(make_fc(128), "relu");
  m.add(make_dropout(0.5));
  m.add(make_fc(10), "softmax");
}

}  // namespace

const std::vector<ModelInfo>& model_zoo() {
  using namespace zoo;
  static const std::vector<ModelInfo> models = {
      // MNIST (28x28x1)
      {"simplecnn", "mnist", build_simplecnn},
      {"simplemlp", "mnist", build_simplemlp},
      // AlexNet
      {"alexnet", "imagenet", build_alexnet_imagenet},
      {"alexnet_imagenet", "imagenet", build_alexnet_imagenet},
      {"alexnet_cifar10", "cifar10", build_alexnet_cifar10},
      // VGG
      {"vgg1", "cifar10", build_vgg1},
      {"vgg2", "cifar10", build_vgg2},
      {"vgg3", "cifar10", build_vgg3},
      {"vgg3do", "cifar10", build_vgg3do},
      {"vgg3do2", "cifar10", build_vgg3do2},
      {"vgg3dobn", "cifar10", build_vgg3dobn},
      {"vgg11", "imagenet", build_vgg11},
      {"vgg11_imagenet", "imagenet", build_vgg11_imagenet},
      {"vgg11bn_imagenet", "imagenet", build_vgg11bn_imagenet},
      {"vgg11_cifar10", "cifar10", build_vgg11_cifar10},
      {"vgg11bn_cifar10", "cifar10", build_vgg11bn_cifar10},
      {"vgg16", "imagenet", build_vgg16},
      {"vgg16_imagenet", "imagenet", build_vgg16_imagenet},
      {"vgg16bn_imagenet", "imagenet", build_vgg16bn_imagenet},
      {"vgg16_cifar10", "cifar10", build_vgg16_cifar10},
      {"vgg16bn_cifar10", "cifar10", build_vgg16bn_cifar10},
      {"vgg19", "imagenet", build_vgg19_imagenet},
      {"vgg19_imagenet", "imagenet", build_vgg19_imagenet},
      {"vgg19bn_imagenet", "imagenet", build_vgg19bn_imagenet},
      {"vgg19_cifar10", "cifar10", build_vgg19_cifar10},
      {"vgg19bn_cifar10", "cifar10", build_vgg19bn_cifar10},
      // ResNet
      {"resnet18_imagenet", "imagenet", build_resnet18_imagenet},
      {"resnet34_imagenet", "imagenet", build_resnet34_imagenet},
      {"resnet50_imagenet", "imagenet", build_resnet50_imagenet},
      {"resnet50v15_imagenet", "imagenet", build_resnet50_imagenet},  // PyDTNN's name: the same v1.5 model
      {"resnet101_imagenet", "imagenet", build_resnet101_imagenet},
      {"resnet152_imagenet", "imagenet", build_resnet152_imagenet},
      {"resnet18_cifar10", "cifar10", build_resnet18_cifar10},
      {"resnet34_cifar10", "cifar10", build_resnet34_cifar10},
      {"resnet50_cifar10", "cifar10", build_resnet50_cifar10},
      {"resnet101_cifar10", "cifar10", build_resnet101_cifar10},
      {"resnet152_cifar10", "cifar10", build_resnet152_cifar10},
      {"resnet20_cifar10", "cifar10", build_resnet20_cifar10},
      {"resnet18_d2l", "mnist", build_resnet18_d2l},  // d2l's, for Fashion-MNIST as it is (28x28x1)
      {"resnet32_cifar10", "cifar10", build_resnet32_cifar10},
      {"resnet44_cifar10", "cifar10", build_resnet44_cifar10},
      {"resnet56_cifar10", "cifar10", build_resnet56_cifar10},
      {"resnet110_cifar10", "cifar10", build_resnet110_cifar10},
      {"resnet1202_cifar10", "cifar10", build_resnet1202_cifar10},
      // DenseNet
      {"densenet_cifar10", "cifar10", build_densenet_cifar10},
      {"densenet121_cifar10", "cifar10", build_densenet121_cifar10},
      {"densenet161_cifar10", "cifar10", build_densenet161_cifar10},
      {"densenet169_cifar10", "cifar10", build_densenet169_cifar10},
      {"densenet201_cifar10", "cifar10", build_densenet201_cifar10},
      {"densenet121_imagenet", "imagenet", build_densenet121_imagenet},
      {"densenet161_imagenet", "imagenet", build_densenet161_imagenet},
      {"densenet169_imagenet", "imagenet", build_densenet169_imagenet},
      {"densenet201_imagenet", "imagenet", build_densenet201_imagenet},
      // Inception
      {"googlenet_cifar10", "cifar10", build_googlenet_cifar10},
      {"googlenet_imagenet", "imagenet", build_googlenet_imagenet},
      {"inceptionv3_cifar10", "cifar10", build_inceptionv3_cifar10},
      {"inceptionv3_imagenet", "imagenet", build_inceptionv3_imagenet},
      // MobileNet
      {"mobilenetv1_cifar10", "cifar10", build_mobilenetv1_cifar10},
      {"mobilenetv1_imagenet", "imagenet", build_mobilenetv1_imagenet},
  };
  return models;
}

std::unique_ptr<Model> create_model(const std::string& name) {
  std::string known;
  for (const ModelInfo& info : model_zoo()) {
    if (name == info.name) {
      auto model = std::make_unique<Model>(name);
      info.build(*model);
      return model;
    }
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  fail("unknown model '", name, "' (known: ", known, ")");
}

ModelPlan plan_model(const std::string& name) {
  auto model = create_model(name);
  ModelPlan p;
  p.name = name;
  for (const ModelInfo& info : model_zoo())
    if (name == info.name) p.dataset = info.dataset;
  BuildContext ctx;  // NHWC, batch 1, no buffers
  ctx.plan_only = true;
  Shape shape;
  for (size_t i = 0; i < model->num_layers(); ++i) {
    Layer& layer = model->layer(i);
    shape = layer.build(shape, ctx);
    if (i == 0) p.input = shape;
    p.params += layer.num_params();  // a block counts its children's
    p.forward_flops += layer.forward_flops();
    std::vector<Layer*> all = {&layer};
    for (Layer* child : layer.children()) all.push_back(child);
    for (const Layer* l : all)
      if (!l->problem_string().empty()) p.conv_problems.push_back(l->problem_string());
  }
  p.output = shape;
  return p;
}

}  // namespace dtnn
