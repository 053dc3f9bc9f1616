// BatchNormalization, per channel (spatial inputs: over N*H*W; flat inputs (N, F): per feature over N).
// The formulas and the kernels are the backends' (backend/batchnorm.h; backend/cpu/batchnorm.cpp,
// backend/gpu/batchnorm.cu): the layer declares the parameters, makes one BatchNormOp for its device in
// build() and calls it.
//
// Differences from PyDTNN (research notes §3.3), on purpose:
//   - running_var starts at 1 (PyDTNN: 0, so early inference divides by sqrt(eps)); running_mean at 0;
//   - the running variance is the unbiased one (PyDTNN's CPU path used the biased one, its cuDNN path
//     the unbiased one);
//   - sync_stats (or --sync_batchnorm) really synchronises: the per-channel sums of each pass and of the
//     backward's dgamma/dbeta are allreduced, so a 2-rank run normalises exactly like a 1-rank run over
//     the global batch. The parameter gradients stay local sums; the trainer's allreduce adds them up.
// gamma and beta are trainable parameters (in the Model's slab); the running statistics are buffers
// (the Model's state slab), saved in weight files as PyDTNN's running_mean/running_var keys.
#include <cstdio>

#include "backend/cpu/batchnorm.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"
#include "parallel/communicator.h"

namespace dtnn {
namespace {

class BatchNorm final : public Layer,
                        public InferenceAffine,
                        public ReluAbsorbingNorm,
                        public ResidualReluNorm,
                        public MomentsConsumer {
 public:
  explicit BatchNorm(const BatchNormSpec& spec) : spec_(spec) {}
  std::string type() const override { return "BatchNormalization"; }
  bool communicates_in_step() const override { return sync_; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = in.rank() == 3 ? ctx.layout : Layout::flat;
    DTNN_CHECK(in.rank() == 1 || in.rank() == 3, "BatchNormalization needs a flat or 3-D input, got ", in.str());
    const bool nhwc = layout_ == Layout::nhwc;
    channels_ = in.rank() == 1 ? in[0] : (nhwc ? in[2] : in[0]);
    spatial_ = in.numel() / channels_;
    sync_ = (spec_.sync_stats || ctx.sync_batchnorm) && ctx.comm && ctx.comm->size() > 1;
    comm_ = ctx.comm;
    gpu_ = ctx.gpu();
    relu_ = relu_requested_ && !gpu_;
    const Shape c{channels_};
    params_.push_back({"gamma", c, Init::ones, 0, 0, {}, {}, {}});
    params_.push_back({"beta", c, Init::zeros, 0, 0, {}, {}, {}});
    buffers_.push_back({"running_mean", c, Init::zeros, 0, 0, {}, {}, {}});
    buffers_.push_back({"running_var", c, Init::ones, 0, 0, {}, {}, {}});
    BatchNormShape shape;
    shape.layout = layout_;
    shape.c = channels_;
    shape.h = in.rank() == 3 ? (nhwc ? in[0] : in[1]) : 1;
    shape.w = in.rank() == 3 ? (nhwc ? in[1] : in[2]) : 1;
    shape.max_batch = ctx.max_batch;
    shape.epsilon = spec_.epsilon;
    shape.momentum = spec_.momentum;
    shape.relu = relu_;
    const BatchNormReduce reduce = sync_ ? &BatchNorm::allreduce : nullptr;
    op_ = gpu_ ? gpu::make_batchnorm(shape, reduce, this) : cpu::make_batchnorm(shape, reduce, this);
    if (gpu_) {
      scratch_ = ctx.workspace;  // dx of backward when the model wants none (cuDNN always writes one)
      scratch_->reserve(in.numel() * ctx.max_batch);
    }
    return out_sample_ = in;
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const float* gamma = params_[0].value.data();
    const float* beta = params_[1].value.data();
    float* rmean = buffers_[0].value.data();
    float* rvar = buffers_[1].value.data();
    take_moments(x, mode);
    if (mode == Mode::evaluate)
      op_->forward_inference(x.dim(0), x.data(), y.data(), gamma, beta, rmean, rvar);
    else
      op_->forward_training(x.dim(0), x.data(), y.data(), gamma, beta, rmean, rvar);
  }

  ChannelMoments* moments_slot() override { return op_ && op_->accepts_moments() ? &moments_ : nullptr; }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    float* out = !dx.empty() ? dx.data() : scratch_ ? scratch_->data : nullptr;
    op_->backward(x.dim(0), x.data(), dy.data(), out, params_[0].value.data(), params_[0].grad.data(),
                  params_[1].grad.data());
  }

  bool residual_relu() const override { return op_ && op_->has_residual_relu(); }
  void forward_residual_relu(const Tensor& x, const Tensor& r, const Tensor& y) override {
    take_moments(x, Mode::train);
    DTNN_CHECK(op_->forward_training_residual_relu(x.dim(0), x.data(), r.data(), y.data(), params_[0].value.data(),
                                                   params_[1].value.data(), buffers_[0].value.data(),
                                                   buffers_[1].value.data()),
               "BatchNormalization: this backend cannot add a residual in its output pass");
  }

  void request_relu() override { relu_requested_ = true; }
  bool applies_relu() const override { return relu_; }

  int64_t channels() const override { return channels_; }
  void inference_affine(float* scale, float* shift) const override {
    cpu::batchnorm_inference_affine(channels_, spec_.epsilon, params_[0].value.data(), params_[1].value.data(),
                                    buffers_[0].value.data(), buffers_[1].value.data(), scale, shift);
  }

  double forward_flops() const override { return 2.0 * spatial_ * channels_; }

  std::string describe() const override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "momentum=%.2f, eps=%g%s", spec_.momentum, spec_.epsilon, sync_ ? ", sync" : "");
    return buf;
  }

 private:
  // Synchronised statistics: sums `count` floats over the ranks, on the model's device.
  static void allreduce(void* self, float* values, int64_t count) {
    BatchNorm* bn = static_cast<BatchNorm*>(self);
    if (bn->gpu_)
      bn->comm_->allreduce_sum_device(values, count);
    else
      bn->comm_->allreduce_sum(values, count);
  }

  // The moments the layer before wrote into moments_ (MomentsProducer), handed to the op when they describe x in
  // a training pass; invalid afterwards either way, so a stale set is never used.
  void take_moments(const Tensor& x, Mode mode) {
    if (moments_.of && mode == Mode::train && moments_.of == x.data() && moments_.n == x.dim(0))
      op_->use_moments(&moments_);
    moments_.of = nullptr;
  }

  BatchNormSpec spec_;
  ChannelMoments moments_;
  std::unique_ptr<BatchNormOp> op_;  // the backend's: backend/cpu/batchnorm.cpp or backend/gpu/batchnorm.cu
  SharedWorkspace* scratch_ = nullptr;
  int64_t channels_ = 0, spatial_ = 0;
  bool sync_ = false, gpu_ = false;
  bool relu_requested_ = false, relu_ = false;  // the ReLU after it, absorbed (ReluAbsorbingNorm)
  Communicator* comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_batchnorm(const BatchNormSpec& spec) {
  DTNN_CHECK(spec.momentum >= 0.0 && spec.momentum <= 1.0, "BatchNormalization: momentum must be in [0, 1] (got ",
             spec.momentum, ")");
  DTNN_CHECK(spec.epsilon > 0.0, "BatchNormalization: epsilon must be positive (got ", spec.epsilon, ")");
  return std::make_unique<BatchNorm>(spec);
}

}  // namespace dtnn
