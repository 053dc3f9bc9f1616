// What the layer-fusion pass (layers/fused.cpp) needs from the layers it fuses, beyond Layer.
#pragma once

#include "backend/batchnorm.h"
#include "conv/conv_problem.h"
#include "layers/layer.h"

namespace dtnn {

// A convolution that can run with other weights and bias than its own parameters (the fused layer
// passes weights with BatchNormalization folded in). w has the layer's weight layout; bias K floats.
class FoldableConv {
 public:
  virtual ~FoldableConv() = default;
  virtual const ConvProblem& conv_problem() const = 0;  // at the build batch size
  virtual bool has_bias() const = 0;
  virtual void forward_with(const Tensor& x, const Tensor& y, const float* w, const float* bias) = 0;
};

// A per-channel affine map in inference: y = x * scale[c] + shift[c] (BatchNormalization with its
// running statistics).
class InferenceAffine {
 public:
  virtual ~InferenceAffine() = default;
  virtual void inference_affine(float* scale, float* shift) const = 0;  // channels() floats each
  virtual int64_t channels() const = 0;
};

// A normalization that can apply the ReLU after it inside its own passes in training and inference (the CPU's
// batch normalization: backend/batchnorm.h, BatchNormShape::relu), so the ReLU's passes over the activation
// disappear and the results stay bit for bit those of the two layers. request_relu() before build();
// applies_relu() after it: false where the backend cannot (the GPU), and the caller then runs its ReLU.
class ReluAbsorbingNorm {
 public:
  virtual ~ReluAbsorbingNorm() = default;
  virtual void request_relu() = 0;
  virtual bool applies_relu() const = 0;
};

// A normalization that adds a residual and applies a ReLU to the sum in its own output pass in training:
// y = max(0, normalised x + r), bit for bit the normalization followed by an AdditionBlock's last addition and
// the ReLU the block absorbed (BatchNormOp::forward_training_residual_relu), one pass over the activation fewer.
// residual_relu() after build(): false where the backend cannot (the GPU, or a normalization with its own ReLU).
class ResidualReluNorm {
 public:
  virtual ~ResidualReluNorm() = default;
  virtual bool residual_relu() const = 0;
  virtual void forward_residual_relu(const Tensor& x, const Tensor& r, const Tensor& y) = 0;  // training
};

// A layer that can compute, in its training forward pass, the per-channel moments of its output for the batch
// normalization after it (Conv2D whose algorithm has ConvAlgorithm::forward_moments), so that normalization reads
// its input once instead of twice. produce_moments(slot) after both are built: true when every training forward
// will fill *slot (sized here) and mark it for its output, and every other forward mark it invalid; false when
// it cannot (its algorithm, the GPU).
class MomentsProducer {
 public:
  virtual ~MomentsProducer() = default;
  virtual bool produce_moments(ChannelMoments* slot) = 0;
};

// A batch normalization that can take its training statistics from the layer before it (ChannelMoments, only for
// the tensor they name). moments_slot() after build(): null where its backend cannot (BatchNormOp::accepts_moments).
class MomentsConsumer {
 public:
  virtual ~MomentsConsumer() = default;
  virtual ChannelMoments* moments_slot() = 0;
};

// A layer whose backward can add a tensor to its input gradient in the pass that writes it: dx = its own dx + add,
// bit for bit backward() followed by dx += add (Conv2D whose algorithm has ConvAlgorithm::backward_data_add: a
// residual block's identity path without the addition's pass). backward_adding() needs a non-empty dx; it returns
// false, having computed nothing, where the layer cannot (its algorithm, the GPU), and the caller then adds.
class AddingBackward {
 public:
  virtual ~AddingBackward() = default;
  virtual bool backward_adding(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                               const float* add) = 0;
};

// Links two built layers where a's output is b's input: a computes the moments b normalises with, if both can.
inline void link_moments(Layer& a, Layer& b) {
  auto* producer = dynamic_cast<MomentsProducer*>(&a);
  auto* consumer = dynamic_cast<MomentsConsumer*>(&b);
  if (!producer || !consumer) return;
  if (ChannelMoments* slot = consumer->moments_slot()) producer->produce_moments(slot);
}

}  // namespace dtnn
