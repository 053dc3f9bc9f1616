#include "models/model.h"

#include "core/clock.h"
#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"
#include "trace/op_trace.h"

namespace dtnn {

void Model::add(std::unique_ptr<Layer> layer, const std::string& activation) {
  DTNN_CHECK(!built_, "model ", name_, ": add() after build()");
  DTNN_CHECK(!layers_.empty() || layer->type() == "Input", "model ", name_, ": the first layer must be Input");
  // PyDTNN numbering: the layer, then its block children depth-first, then the next layer.
  layer->id = next_id_++;
  for (Layer* child : layer->children()) child->id = next_id_++;
  layers_.push_back(std::move(layer));
  if (!activation.empty()) add(make_activation(activation));
}

void Model::resize_input(int64_t h, int64_t w) {
  DTNN_CHECK(!built_ && !layers_.empty(), "model ", name_, ": resize_input() before build(), after the Input layer");
  const Shape in = layers_.front()->output_shape();  // HWC, as the builders declare it
  DTNN_CHECK(in.rank() == 3, "model ", name_, " takes flat inputs: its image size cannot change");
  const int id = layers_.front()->id;
  layers_.front() = make_input(h, w, in[2]);
  layers_.front()->id = id;
}

void Model::fuse(const FusionOptions& options) {
  DTNN_CHECK(!built_, "model ", name_, ": fuse() after build()");
  if (options.any()) fuse_layers(layers_, options);
}

void Model::build(const BuildContext& ctx, uint64_t seed, int64_t reduce_tail) {
  DTNN_CHECK(!built_, "model ", name_, " built twice");
  DTNN_CHECK(ctx.max_batch > 0, "batch size must be positive (got ", ctx.max_batch, ")");
  ctx_ = ctx;
  const bool gpu = ctx.device == Device::gpu;
  if (gpu) {
    arena_ = std::make_unique<gpu::Arena>();
    ctx_.arena = arena_.get();
  }
  ctx_.workspace = gpu || !ctx.private_scratch ? &workspace_ : nullptr;
  ctx_.level = 0;
  ctx_.gradients = ctx.private_scratch ? nullptr : &gradients_;
  BuildContext::Counters counted;
  ctx_.counters = &counted;
  Shape shape;
  for (auto& layer : layers_) shape = layer->build(shape, ctx_);
  for (size_t i = 1; i < layers_.size(); ++i) link_moments(*layers_[i - 1], *layers_[i]);
  all_.clear();
  for (auto& layer : layers_) {
    all_.push_back(layer.get());
    for (Layer* child : layer->children()) all_.push_back(child);
  }
  const int64_t before_slabs = counted.floats;
  build_slabs(seed, reduce_tail);
  const int64_t slab_floats = counted.floats - before_slabs;
  build_activations();
  memory_.activations = (counted.floats - slab_floats - counted.private_gradients - counted.private_workspaces) * 4;
  memory_.gradients = (counted.private_gradients + gradients_.floats()) * 4;
  memory_.workspace = (counted.private_workspaces + workspace_.floats) * 4;
  memory_.parameters = (2 * slab_size_ + reduce_tail + state_size_) * 4;
  workspace_.floats = std::max<int64_t>(workspace_.floats, 1);
  workspace_.storage = ctx_.zeros(Shape{workspace_.floats});
  workspace_.data = workspace_.storage.data();
  gradients_.allocate(ctx_);
  ctx_.counters = nullptr;
  times_.assign(layers_.size(), LayerTime{});
  time_layers_ = !gpu;
  built_ = true;
}

// Parameter and gradient slabs, each parameter starting on a 64-byte boundary; buffers likewise in the state
// slab. Parameters are initialised on the host, then (GPU) uploaded.
void Model::build_slabs(uint64_t seed, int64_t reduce_tail) {
  const bool gpu = ctx_.device == Device::gpu;
  const auto padded = [](const Param& p) { return (p.shape.numel() + 15) / 16 * 16; };
  slab_size_ = 0;
  num_params_ = 0;
  state_size_ = 0;
  for (Layer* layer : all_) {
    for (Param& p : layer->params()) {
      num_params_ += p.shape.numel();
      slab_size_ += padded(p);
    }
    for (Param& b : layer->buffers()) state_size_ += padded(b);
  }
  params_ = Tensor::zeros(Shape{std::max<int64_t>(slab_size_, 1)});
  state_ = Tensor::zeros(Shape{std::max<int64_t>(state_size_, 1)});
  grads_slab_ = ctx_.zeros(Shape{slab_size_ + reduce_tail});
  dev_params_ = gpu ? ctx_.zeros(params_.shape()) : params_.view();
  dev_state_ = gpu ? ctx_.zeros(state_.shape()) : state_.view();
  int64_t offset = 0, state_offset = 0;
  // all_ lists each top-level layer followed by its children, so a top-level layer's parameters are one
  // contiguous range of the slab.
  param_begin_.clear();
  for (Layer* layer : all_) {
    if (param_begin_.size() < layers_.size() && layer == layers_[param_begin_.size()].get())
      param_begin_.push_back(offset);
    for (Param& p : layer->params()) {
      p.host = Tensor::wrap(params_.data() + offset, p.shape);
      p.value = p.host.view();  // init_params() writes the host copy
      p.grad = Tensor::wrap(grads_slab_.data() + offset, p.shape, Layout::flat, ctx_.device);
      offset += padded(p);
    }
    for (Param& b : layer->buffers()) {
      b.host = Tensor::wrap(state_.data() + state_offset, b.shape);
      b.value = b.host.view();
      state_offset += padded(b);
    }
  }
  param_begin_.push_back(offset);
  DTNN_ASSERT(param_begin_.size() == layers_.size() + 1 && offset == slab_size_);
  Rng rng(seed);
  for (auto& layer : layers_) layer->init_params(rng);
  if (!gpu) return;
  offset = state_offset = 0;  // from now on layers see the device copies
  for (Layer* layer : all_) {
    for (Param& p : layer->params()) {
      p.value = Tensor::wrap(dev_params_.data() + offset, p.shape, Layout::flat, Device::gpu);
      offset += padded(p);
    }
    for (Param& b : layer->buffers()) {
      b.value = Tensor::wrap(dev_state_.data() + state_offset, b.shape, Layout::flat, Device::gpu);
      state_offset += padded(b);
    }
  }
  upload();
}

// Activations and their gradients.
void Model::build_activations() {
  const auto full = [&](const Shape& sample, Layout) { return sample.prepend(ctx_.max_batch); };
  const auto layout_of = [&](const Shape& sample) { return sample.rank() == 3 ? ctx_.layout : Layout::flat; };
  acts_.clear();
  grads_.clear();
  bool seen_compute = false;
  int buffers = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Shape out = layers_[i]->output_shape();
    const Layout layout = layout_of(out);
    if (i > 0 && layers_[i]->is_reshape()) {
      acts_.push_back(acts_[i - 1].reshaped(full(out, layout), layout));
      grads_.push_back(grads_[i - 1].alias(full(out, layout), layout));
      continue;
    }
    // In place: y aliases x and the layer's dx aliases its dy (so grads_[i] is grads_[i-1]'s memory).
    // Only after a layer that does not read its own output in backward, and never over the input batch.
    const bool in_place = i > 1 && layers_[i]->can_run_in_place() && !layers_[i - 1]->is_reshape() &&
                          !layers_[i - 1]->backward_reads_output() && layers_[i]->output_shape() == layers_[i - 1]->output_shape();
    if (in_place) {
      acts_.push_back(acts_[i - 1].view());
      grads_.push_back(grads_[i - 1]);
      continue;
    }
    acts_.push_back(ctx_.zeros(full(out, layout), layout));
    // Layer i's output gradient exists when some computing layer after Input precedes layer i+1, i.e.
    // when layer i itself is (or follows) a computing layer. Consecutive buffers alternate between the
    // scratch's two chain slots: layer i reads one and writes the other (gradient_scratch.h).
    if (i > 0) seen_compute = true;
    const int slot = GradientScratch::chain_slot(buffers++);
    grads_.push_back(seen_compute ? ctx_.gradient(0, slot, full(out, layout), layout) : GradientBuffer());
  }
}

void Model::download() const {
  if (ctx_.device != Device::gpu) return;
  params_.copy_from(dev_params_);
  state_.copy_from(dev_state_);
}

void Model::upload() {
  if (ctx_.device != Device::gpu) return;
  dev_params_.copy_from(params_);
  dev_state_.copy_from(state_);
}

size_t Model::device_bytes() const { return arena_ ? arena_->bytes_reserved() : 0; }

int64_t Model::trace_op_events() const {
  int64_t n = 0;
  for (const Layer* l : all_) n += l->trace_op_events();
  return n;
}

void Model::reset_layer_times() { times_.assign(layers_.size(), LayerTime{}); }

void Model::seed_layers(uint64_t seed, int rank) {
  const Rng base(seed ^ 0x5EEDDA7Aull);
  for (Layer* layer : all_) {
    Rng r = base.fork(static_cast<uint64_t>(rank) * 1000003ull + static_cast<uint64_t>(layer->id));
    layer->seed(r.next_u64());
  }
}

void Model::forward(int64_t n, Mode mode) {
  DTNN_ASSERT(built_ && n <= ctx_.max_batch);
  const bool sync = time_layers_ && ctx_.device == Device::gpu;
  const OpTracing ops(tracer_);  // the algorithms' phases go to the tracer (none without one)
  for (size_t i = 1; i < layers_.size(); ++i) {
    if (layers_[i]->is_reshape()) continue;
    if (gpu_trace_) {  // device time by CUDA events (trace/gpu_trace.h); host clocks would time the launches
      const int begin = gpu_trace_->mark();
      layers_[i]->forward(acts_[i - 1].batch(n), acts_[i].batch(n), mode);
      gpu_trace_->span(TraceKind::forward, layers_[i]->id, begin);
      continue;
    }
    if (!time_layers_ && !tracer_) {
      layers_[i]->forward(acts_[i - 1].batch(n), acts_[i].batch(n), mode);
      continue;
    }
    if (sync) gpu::synchronize();
    const double t0 = now_s();
    {
      const OpLayer at(layers_[i]->id);
      layers_[i]->forward(acts_[i - 1].batch(n), acts_[i].batch(n), mode);
    }
    if (sync) gpu::synchronize();
    const double t1 = now_s();
    if (tracer_) tracer_->add(TraceKind::forward, layers_[i]->id, t0, t1);
    if (!time_layers_) continue;
    times_[i].forward_s += t1 - t0;
    ++times_[i].forward_calls;
  }
}

void Model::backward(int64_t n, size_t top, BackwardHook* hook) {
  DTNN_ASSERT(built_ && n <= ctx_.max_batch && top < layers_.size());
  const bool sync = time_layers_ && ctx_.device == Device::gpu;
  const OpTracing ops(tracer_);
  for (size_t i = top; i >= 1; --i) {
    if (layers_[i]->is_reshape()) {
    } else if (gpu_trace_) {
      const int begin = gpu_trace_->mark();
      layers_[i]->backward(acts_[i - 1].batch(n), acts_[i].batch(n), grads_[i].batch(n), gradient(i - 1, n));
      gpu_trace_->span(TraceKind::backward, layers_[i]->id, begin);
    } else if (!time_layers_ && !tracer_) {
      layers_[i]->backward(acts_[i - 1].batch(n), acts_[i].batch(n), grads_[i].batch(n), gradient(i - 1, n));
    } else {
      if (sync) gpu::synchronize();
      const double t0 = now_s();
      {
        const OpLayer at(layers_[i]->id);
        layers_[i]->backward(acts_[i - 1].batch(n), acts_[i].batch(n), grads_[i].batch(n), gradient(i - 1, n));
      }
      if (sync) gpu::synchronize();
      const double t1 = now_s();
      if (tracer_) tracer_->add(TraceKind::backward, layers_[i]->id, t0, t1);
      if (time_layers_) {
        times_[i].backward_s += t1 - t0;
        ++times_[i].backward_calls;
      }
    }
    if (hook) hook->after_layer(i);
  }
}

}  // namespace dtnn
