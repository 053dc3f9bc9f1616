// A zoo model's shapes, parameter count and forward cost without building it: each layer's build()
// declares its output and parameter shapes, and nothing else happens (no parameter slab, no weight
// initialisation, no activation buffers). For listings (`dtnn models`) and whole-zoo tests, where full
// builds would cost seconds and gigabytes (an ImageNet VGG's slabs alone are over a gigabyte).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dtnn {

struct ModelPlan {
  std::string name, dataset;   // as listed in model_zoo()
  Shape input;                 // per sample, HWC (NHWC build)
  Shape output;                // per sample
  int64_t params = 0;          // trainable values: what Model::num_params() reports after build
  double forward_flops = 0.0;  // per sample, a multiply-add counts 2
  // Every convolution layer's canonical problem string at batch 1, NHWC, in layer order (blocks'
  // children included); one entry per layer, so repeated shapes repeat.
  std::vector<std::string> conv_problems;
};

// Throws dtnn::Error for an unknown name (listing the known ones), like create_model.
ModelPlan plan_model(const std::string& name);

}  // namespace dtnn
