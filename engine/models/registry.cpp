// The model zoo, in one list. Each builder mirrors PyDTNN's create_<name>(model) file (research notes:
// models are declared with HWC input shapes; "activation" arguments append a separate activation layer).
#include "core/error.h"
#include "layers/layers.h"
#include "models/model.h"

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
  static const std::vector<ModelInfo> zoo = {
      {"simplecnn", "mnist", build_simplecnn},
      {"simplemlp", "mnist", build_simplemlp},
  };
  return zoo;
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

}  // namespace dtnn
