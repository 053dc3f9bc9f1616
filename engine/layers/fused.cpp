// Fused layers: Conv2D [+ BatchNormalization] [+ Relu] and BatchNormalization + Relu as one layer; an
// AdditionBlock absorbs the Relu after it (layers/blocks.cpp applies it in its last addition).
//
// PyDTNN fused only for inference (its fused layers raised "cannot be used in training mode", and the
// pre-training evaluation fused the model for good, so --evaluate plus fusion crashed training). Here:
//   - inference: BN's running statistics are folded into the convolution (w'[k] = w[k] * scale[k],
//     b'[k] = b[k] * scale[k] + shift[k]) so one convolution pass writes the normalised output, and ReLU
//     is applied in place right after; BN + ReLU without a convolution is one pass max(0, x*scale+shift);
//   - training: the member layers run one after the other over the fused layer's own buffers, so results
//     are exactly those of the unfused model (batch statistics cannot be folded into the weights), except
//     that the CPU's batch normalization applies the ReLU in its own passes (layers/fusable.h,
//     ReluAbsorbingNorm: the same floats, without the ReLU's two passes forward and three backward).
// On the GPU the members always run one after the other (cuDNN's convolution and batch normalization;
// no folding), in inference too.
// The folded weights are recomputed on every inference call (a K x C x R x S sweep, small next to the
// convolution), into a buffer allocated at build.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

class Fused final : public Layer, public MomentsConsumer {
 public:
  Fused(std::unique_ptr<Layer> conv, std::unique_ptr<Layer> bn, std::unique_ptr<Layer> relu)
      : conv_(std::move(conv)), bn_(std::move(bn)), relu_(std::move(relu)) {
    id = (conv_ ? conv_ : bn_)->id;  // the wrapper shows under its first member's id
  }
  std::string type() const override {
    return std::string(conv_ ? "Conv2D" : "") + (bn_ ? "BatchNormalization" : "") + (relu_ ? "Relu" : "");
  }
  std::vector<Layer*> children() const override {
    std::vector<Layer*> out;
    for (Layer* l : {conv_.get(), bn_.get(), relu_.get()})
      if (l) out.push_back(l);
    return out;
  }
  void init_params(Rng& rng) override {
    for (Layer* l : children()) l->init_params(rng);
  }
  double forward_flops() const override {
    double f = 0.0;
    for (Layer* l : children()) f += l->forward_flops();
    return f;
  }
  bool backward_reads_output() const override { return relu_ != nullptr; }
  std::string describe() const override { return conv_ ? conv_->describe() : bn_->describe(); }
  std::string algorithm_name() const override { return conv_ ? conv_->algorithm_name() : ""; }
  std::string algorithm_note() const override { return conv_ ? conv_->algorithm_note() : ""; }
  std::string algorithm_choice() const override { return conv_ ? conv_->algorithm_choice() : ""; }
  std::string problem_string() const override { return conv_ ? conv_->problem_string() : ""; }
  Shape weights_shape() const override { return conv_ ? conv_->weights_shape() : Shape{}; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = ctx.layout;
    Shape shape = in;
    if (conv_) shape = conv_->build(shape, ctx);
    const Shape conv_out = shape;
    auto* absorbing = bn_ && relu_ ? dynamic_cast<ReluAbsorbingNorm*>(bn_.get()) : nullptr;
    if (absorbing) absorbing->request_relu();
    if (bn_) shape = bn_->build(shape, ctx);
    if (conv_ && bn_) link_moments(*conv_, *bn_);
    bn_relu_ = absorbing && absorbing->applies_relu();
    if (relu_) shape = relu_->build(shape, ctx);
    const Layout layout = shape.rank() == 3 ? ctx.layout : Layout::flat;
    const Shape full = shape.prepend(ctx.max_batch);
    gpu_ = ctx.gpu();
    // The gradients between the members live only inside this layer's backward: the next nesting level's
    // chain slots (gradient_scratch.h).
    if (conv_ && bn_) {  // the convolution's output, which BN's backward reads, and its gradient
      mid_ = ctx.zeros(conv_out.prepend(ctx.max_batch), layout);
      dmid_ = ctx.gradient(ctx.level + 1, GradientScratch::kChainB, conv_out.prepend(ctx.max_batch), layout);
    }
    if (relu_ && !bn_relu_) dpre_ = ctx.gradient(ctx.level + 1, GradientScratch::kChainA, full, layout);  // before the ReLU
    if (bn_) {
      const auto* affine = dynamic_cast<const InferenceAffine*>(bn_.get());
      DTNN_CHECK(affine, "fusion: ", bn_->type(), " has no inference affine form");
      scale_ = Tensor::zeros(Shape{affine->channels()});
      shift_ = Tensor::zeros(Shape{affine->channels()});
    }
    if (conv_ && bn_) {
      const auto* conv = dynamic_cast<const FoldableConv*>(conv_.get());
      DTNN_CHECK(conv, "fusion: ", conv_->type(), " cannot take folded weights");
      folded_w_ = Tensor::zeros(Shape{conv->conv_problem().w_numel()});
      folded_b_ = Tensor::zeros(Shape{conv->conv_problem().k});
    }
    return out_sample_ = shape;
  }

  // BatchNormalization + Relu takes the moments of its input from the layer before, as the normalization does.
  ChannelMoments* moments_slot() override {
    auto* bn = !conv_ ? dynamic_cast<MomentsConsumer*>(bn_.get()) : nullptr;
    return bn ? bn->moments_slot() : nullptr;
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const int64_t n = x.dim(0);
    if (mode == Mode::evaluate && !gpu_ && !(bn_relu_ && !conv_)) {  // BN + ReLU alone: the BN op's own pass
      forward_inference(x, y);
      return;
    }
    if (conv_ && bn_) {
      const Tensor mid = mid_.batch(n);
      conv_->forward(x, mid, mode);
      bn_->forward(mid, y, mode);
    } else {
      (conv_ ? conv_ : bn_)->forward(x, y, mode);
    }
    if (relu_ && !bn_relu_) relu_->forward(y, y, mode);
  }

  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0);
    Tensor g = dy.view();
    if (relu_ && !bn_relu_) {
      g = dpre_.batch(n);
      relu_->backward(y, y, dy, g);
    }
    if (conv_ && bn_) {
      const Tensor mid = mid_.batch(n), dmid = dmid_.batch(n);
      bn_->backward(mid, y, g, dmid);
      conv_->backward(x, mid, dmid, dx);
    } else {
      (conv_ ? conv_ : bn_)->backward(x, y, g, dx);
    }
  }

 private:
  void forward_inference(const Tensor& x, const Tensor& y) {
    if (bn_) dynamic_cast<const InferenceAffine*>(bn_.get())->inference_affine(scale_.data(), shift_.data());
    if (conv_ && bn_) {
      auto* conv = dynamic_cast<FoldableConv*>(conv_.get());
      fold(*conv);
      conv->forward_with(x, y, folded_w_.data(), folded_b_.data());
    } else if (conv_) {
      conv_->forward(x, y, Mode::evaluate);
    }
    const bool affine_pass = bn_ && !conv_;
    if (affine_pass || relu_) affine_relu(affine_pass ? x.data() : y.data(), y.data(), y, affine_pass, relu_ != nullptr);
  }

  // w'[k] = w[k] * scale[k], b'[k] = b[k] * scale[k] + shift[k].
  void fold(const FoldableConv& conv) {
    const ConvProblem& p = conv.conv_problem();
    const auto& params = conv_->params();
    const float* w = params[0].value.data();
    const float* b = conv.has_bias() ? params[1].value.data() : nullptr;
    const float* scale = scale_.data();
    float* fw = folded_w_.data();
    const int64_t K = p.k, per_k = p.w_numel() / K;
    if (p.layout == Layout::nhwc) {  // (C/G, R, S, K): k is the fastest index
      for (int64_t i = 0; i < per_k; ++i)
        for (int64_t k = 0; k < K; ++k) fw[i * K + k] = w[i * K + k] * scale[k];
    } else {  // (K, C/G, R, S)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < per_k; ++i) fw[k * per_k + i] = w[k * per_k + i] * scale[k];
    }
    for (int64_t k = 0; k < K; ++k) folded_b_.data()[k] = (b ? b[k] * scale[k] : 0.0f) + shift_.data()[k];
  }

  // out = max(0, in * scale[c] + shift[c]) (affine and/or relu), per channel in the output's layout.
  void affine_relu(const float* in, float* out, const Tensor& y, bool affine, bool relu) const {
    const int64_t C = y.shape().rank() == 4 ? y.c() : y.dim(1);
    const int64_t S = y.numel() / (y.dim(0) * C);  // spatial positions per channel and sample
    const float* scale = affine ? scale_.data() : nullptr;
    const float* shift = affine ? shift_.data() : nullptr;
    const float lo = relu ? 0.0f : -std::numeric_limits<float>::infinity();
    const bool channels_last = y.layout() != Layout::nchw;
    for (int64_t b = 0; b < y.dim(0); ++b)
      for (int64_t outer = 0; outer < (channels_last ? S : C); ++outer) {
        const int64_t inner = channels_last ? C : S;
        const int64_t o = (b * (channels_last ? S : C) + outer) * inner;
        if (!affine) {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[o + i] = std::max(lo, in[o + i]);
        } else if (channels_last) {
#pragma omp simd
          for (int64_t c = 0; c < inner; ++c) out[o + c] = std::max(lo, in[o + c] * scale[c] + shift[c]);
        } else {
          const float a = scale[outer], s = shift[outer];
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[o + i] = std::max(lo, in[o + i] * a + s);
        }
      }
  }

  std::unique_ptr<Layer> conv_, bn_, relu_;
  bool gpu_ = false;
  bool bn_relu_ = false;  // bn_ applies relu_ in its own passes (training; inference folds it anyway)
  Tensor mid_, scale_, shift_, folded_w_, folded_b_;
  GradientBuffer dmid_, dpre_;
};

bool is(const Path& layers, size_t i, const char* type) { return i < layers.size() && layers[i]->type() == type; }

// in_block: `layers` is a path of a block. There an AdditionBlock + Relu ending the path stays unfused: the
// fused block masks its dy in place, and the dy of a path's last layer is the enclosing block's, which its
// other paths (an identity shortcut) still read.
void fuse_path(Path& layers, const FusionOptions& o, bool in_block) {
  Path out;
  for (size_t i = 0; i < layers.size();) {
    std::unique_ptr<Layer> fused;
    if (o.conv_bn_relu && is(layers, i, "Conv2D") && is(layers, i + 1, "BatchNormalization") && is(layers, i + 2, "Relu")) {
      fused = std::make_unique<Fused>(std::move(layers[i]), std::move(layers[i + 1]), std::move(layers[i + 2]));
      i += 3;
    } else if (o.conv_relu && is(layers, i, "Conv2D") && is(layers, i + 1, "Relu")) {
      fused = std::make_unique<Fused>(std::move(layers[i]), nullptr, std::move(layers[i + 1]));
      i += 2;
    } else if (o.conv_bn && is(layers, i, "Conv2D") && is(layers, i + 1, "BatchNormalization")) {
      fused = std::make_unique<Fused>(std::move(layers[i]), std::move(layers[i + 1]), nullptr);
      i += 2;
    } else if (o.bn_relu && is(layers, i, "BatchNormalization") && is(layers, i + 1, "Relu")) {
      fused = std::make_unique<Fused>(nullptr, std::move(layers[i]), std::move(layers[i + 1]));
      i += 2;
    } else if (o.add_relu && is(layers, i, "AdditionBlock") && is(layers, i + 1, "Relu") &&
               !(in_block && i + 2 == layers.size()) && layers[i]->absorb_relu(layers[i + 1])) {
      layers[i]->transform_paths([&](Path& p) { fuse_path(p, o, true); });
      out.push_back(std::move(layers[i]));
      i += 2;
      continue;
    }
    if (fused) {
      out.push_back(std::move(fused));
      continue;
    }
    layers[i]->transform_paths([&](Path& p) { fuse_path(p, o, true); });
    out.push_back(std::move(layers[i++]));
  }
  layers = std::move(out);
}

}  // namespace

void fuse_layers(Path& layers, const FusionOptions& o) { fuse_path(layers, o, false); }

}  // namespace dtnn
