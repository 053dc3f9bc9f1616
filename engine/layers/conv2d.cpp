// Conv2D: the convolution itself is delegated to a ConvAlgorithm chosen at build time (--conv_algo);
// this layer sizes its workspace for the largest batch (in the model's shared one, or its own when built
// outside a model) and handles the bias.
// Weights are stored in PyDTNN's CPU layouts: NHWC (C, R, S, K), NCHW (K, C, R, S).
#include <cstdio>
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/conv_algorithm.h"
#include "conv/conv_select.h"
#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

class Conv2D final : public Layer, public FoldableConv, public MomentsProducer, public AddingBackward {
 public:
  explicit Conv2D(const Conv2DSpec& spec) : spec_(spec) {}
  std::string type() const override { return "Conv2D"; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = ctx.layout;
    DTNN_CHECK(in.rank() == 3, "Conv2D needs a 3-D per-sample input, got ", in.str());
    ConvProblem& p = problem_;
    p.layout = ctx.layout;
    p.n = ctx.max_batch;
    p.c = layout_ == Layout::nhwc ? in[2] : in[0];
    p.h = layout_ == Layout::nhwc ? in[0] : in[1];
    p.w = layout_ == Layout::nhwc ? in[1] : in[2];
    p.k = spec_.nfilters;
    p.r = spec_.filter_shape.v;
    p.s = spec_.filter_shape.h;
    p.stride_h = spec_.stride.v;
    p.stride_w = spec_.stride.h;
    p.pad_h = spec_.padding.v;
    p.pad_w = spec_.padding.h;
    p.dil_h = spec_.dilation.v;
    p.dil_w = spec_.dilation.h;
    p.groups = spec_.groups == 0 ? p.c : spec_.groups;  // 0: depthwise
    p.validate();
    const ConvChoice choice = select_conv_algorithm(ctx.conv_algo, p, ctx.device);
    for (int d = 0; d < 3; ++d) algo_[d] = choice.algo[d];
    algo_how_ = choice.how;
    if (ctx.gpu() || choice.how == "fallback") algo_note_ = choice.note;
    const int64_t need = workspace_need(p);
    gpu_ = ctx.gpu();
    checked_n_ = p.n;
    checked_threads_ = cpu::threads();
    shared_ = ctx.workspace;  // the model's (algorithms keep nothing in it from one call to the next)
    if (shared_) {
      shared_->reserve(need);
    } else {
      workspace_ = ctx.zeros(Shape{need});
      if (ctx.counters) ctx.counters->private_workspaces += need;
    }
    // Fans per output unit: the inputs (and outputs) one filter tap connects within its group.
    const int64_t rs = p.r * p.s, fan_in = p.c / p.groups * rs, fan_out = p.k / p.groups * rs;
    params_.push_back({"weights", p.w_shape(), spec_.weights_initializer, fan_in, fan_out, {}, {}, {}});
    if (spec_.use_bias) params_.push_back({"biases", Shape{p.k}, spec_.biases_initializer, fan_in, fan_out, {}, {}, {}});
    return out_sample_ = p.y_shape().drop_dim0();
  }

  // Weights are drawn in the logical (K, C, R, S) order whatever the layout, so an NHWC and an NCHW
  // model built with the same seed hold the same convolution.
  void init_params(Rng& rng) override {
    const ConvProblem& p = problem_;
    std::vector<float> kcrs(p.w_numel());
    init_fill(params_[0].init, params_[0].fan_in, params_[0].fan_out, rng, kcrs.data(), p.w_numel());
    float* w = params_[0].value.data();
    int64_t i = 0;
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t c = 0; c < p.c / p.groups; ++c)
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) w[conv_weight_index(p, k, c, r, s)] = kcrs[i++];
    if (spec_.use_bias)
      init_fill(params_[1].init, params_[1].fan_in, params_[1].fan_out, rng, params_[1].value.data(), p.k);
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const float* w = params_[0].value.data();
    const float* bias = spec_.use_bias ? params_[1].value.data() : nullptr;
    if (moments_ && mode == Mode::train && x.dim(0) > 0 && forward_moments(x, y, w, bias)) return;
    if (moments_) moments_->of = nullptr;
    forward_with(x, y, w, bias);
  }

  bool produce_moments(ChannelMoments* slot) override {
    if (gpu_ || !algo_[0]->has_forward_moments(problem_)) return false;
    slot->mean.assign(problem_.k, 0.0);
    slot->m2.assign(problem_.k, 0.0);
    moments_ = slot;
    return true;
  }

  const ConvProblem& conv_problem() const override { return problem_; }
  bool has_bias() const override { return spec_.use_bias; }
  void forward_with(const Tensor& x, const Tensor& y, const float* w, const float* bias) override {
    const ConvProblem p = problem_.with_batch(x.dim(0));
    const OpLayer at(id);  // the algorithm's phases carry this layer's id (inside a block too)
    algo_[0]->forward(p, x.data(), w, bias, y.data(), ws_for(p));
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    const ConvProblem p = problem_.with_batch(x.dim(0));
    const OpLayer at(id);
    float* ws = ws_for(p);
    float* db = spec_.use_bias ? params_[1].grad.data() : nullptr;
    if (algo_[1] == algo_[2]) {  // one algorithm: it may prepare dy once for both directions
      algo_[2]->backward(p, x.data(), dy.data(), params_[0].value.data(), dx.empty() ? nullptr : dx.data(),
                         params_[0].grad.data(), db, ws);
      return;
    }
    algo_[2]->backward_filter(p, x.data(), dy.data(), params_[0].grad.data(), db, ws);
    if (!dx.empty()) algo_[1]->backward_data(p, dy.data(), params_[0].value.data(), dx.data(), ws);
  }

  bool backward_adding(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx, const float* add) override {
    const ConvProblem p = problem_.with_batch(x.dim(0));
    if (gpu_ || dx.empty() || !algo_[1]->has_backward_data_add(p)) return false;
    const OpLayer at(id);
    float* ws = ws_for(p);
    algo_[2]->backward_filter(p, x.data(), dy.data(), params_[0].grad.data(),
                              spec_.use_bias ? params_[1].grad.data() : nullptr, ws);
    return algo_[1]->backward_data_add(p, dy.data(), params_[0].value.data(), add, dx.data(), ws);
  }

  std::string describe() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "padd=(%lld,%lld), stride=(%lld,%lld), dilat=(%lld,%lld)",
                  (long long)problem_.pad_h, (long long)problem_.pad_w, (long long)problem_.stride_h,
                  (long long)problem_.stride_w, (long long)problem_.dil_h, (long long)problem_.dil_w);
    std::string d = buf;
    if (problem_.groups == problem_.c && problem_.c > 1) d += ", depthwise";
    else if (problem_.groups > 1) d += ", groups=" + std::to_string(problem_.groups);
    return d;
  }

  double forward_flops() const override { return problem_.with_batch(1).flops(ConvDir::fwd); }
  int64_t trace_op_events() const override {
    return algo_[0]->op_events(problem_, ConvDir::fwd) + algo_[1]->op_events(problem_, ConvDir::bwd_data) +
           algo_[2]->op_events(problem_, ConvDir::bwd_filter);
  }

  // One name, or "fwd/bwd_data/bwd_filter" names when the directions differ (GPU, CPU best_of).
  std::string algorithm_name() const override {
    return conv_direction_names(algo_);
  }
  std::string problem_string() const override { return problem_.str(); }
  std::string algorithm_note() const override { return algo_note_; }
  std::string algorithm_choice() const override { return algo_how_; }

 private:
  // The forward pass with the moments of y for the normalization after it (MomentsProducer); false, having
  // computed nothing, where the algorithm declines.
  bool forward_moments(const Tensor& x, const Tensor& y, const float* w, const float* bias) {
    const ConvProblem p = problem_.with_batch(x.dim(0));
    const OpLayer at(id);
    if (!algo_[0]->forward_moments(p, x.data(), w, bias, y.data(), ws_for(p), moments_->mean.data(),
                                   moments_->m2.data()))
      return false;
    moments_->of = y.data();
    moments_->n = p.n;
    moments_->count = static_cast<double>(p.n * p.p() * p.q());
    return true;
  }

  float* ws() const { return shared_ ? shared_->data : workspace_.data(); }
  // The most any of the three directions' algorithms needs for problem p (at least one float).
  int64_t workspace_need(const ConvProblem& p) const {
    int64_t need = 1;
    for (const ConvAlgorithm* a : algo_) need = std::max(need, a->workspace_floats(p));
    return need;
  }
  // The workspace for a call on batch p.n. A CPU algorithm's need is not always largest at the largest
  // batch: oneDNN picks its implementation, hence its scratchpad and weight formats, per batch size (on 2
  // threads a 32x32x32 -> 32 3x3 layer needs 39,008 floats at batch 2 and 30,752 at batch 3), so a short
  // batch may need more than build() sized, and writing past it corrupted the heap. Checked when the batch
  // size or thread count changes; the buffer then grows, once per such batch size, on its first call (as
  // oneDNN creates its primitives for a new batch size on the first call). The GPU algorithms fall back
  // to one that fits instead (conv/gpu/cudnn_conv.cu).
  float* ws_for(const ConvProblem& p) {
    if (gpu_ || (p.n == checked_n_ && cpu::threads() == checked_threads_)) return ws();
    const int64_t need = workspace_need(p);
    if (shared_)
      shared_->grow_cpu(need);
    else if (need > workspace_.numel())
      workspace_ = Tensor::zeros(Shape{need});
    checked_n_ = p.n;
    checked_threads_ = cpu::threads();
    return ws();
  }

  Conv2DSpec spec_;
  ConvProblem problem_;
  const ConvAlgorithm* algo_[3] = {nullptr, nullptr, nullptr};  // fwd, bwd_data, bwd_filter
  std::string algo_note_, algo_how_;
  bool gpu_ = false;
  int64_t checked_n_ = 0;             // ws_for: the batch size and thread count the workspace fits
  int checked_threads_ = 0;
  Tensor workspace_;                  // this layer's own (built outside a model)
  SharedWorkspace* shared_ = nullptr;  // the model's shared scratch
  ChannelMoments* moments_ = nullptr;  // the next normalization's, when this layer computes them (produce_moments)
};

}  // namespace

std::unique_ptr<Layer> make_conv2d(const Conv2DSpec& spec) {
  DTNN_CHECK(spec.nfilters > 0, "Conv2D: nfilters must be positive (got ", spec.nfilters, ")");
  DTNN_CHECK(spec.groups >= 0, "Conv2D: groups must be positive, or 0 for depthwise (got ", spec.groups, ")");
  return std::make_unique<Conv2D>(spec);
}

}  // namespace dtnn
