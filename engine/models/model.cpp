#include "models/model.h"

#include <chrono>

#include "core/error.h"
#include "layers/layers.h"

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

void Model::fuse(const FusionOptions& options) {
  DTNN_CHECK(!built_, "model ", name_, ": fuse() after build()");
  if (options.any()) fuse_layers(layers_, options);
}

void Model::build(const BuildContext& ctx, uint64_t seed, int64_t reduce_tail) {
  DTNN_CHECK(!built_, "model ", name_, " built twice");
  DTNN_CHECK(ctx.max_batch > 0, "batch size must be positive (got ", ctx.max_batch, ")");
  ctx_ = ctx;
  Shape shape;
  for (auto& layer : layers_) shape = layer->build(shape, ctx);
  all_.clear();
  for (auto& layer : layers_) {
    all_.push_back(layer.get());
    for (Layer* child : layer->children()) all_.push_back(child);
  }

  // Parameter and gradient slabs, each parameter starting on a 64-byte boundary; buffers likewise in
  // the state slab.
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
  grads_slab_ = Tensor::zeros(Shape{slab_size_ + reduce_tail});
  state_ = Tensor::zeros(Shape{std::max<int64_t>(state_size_, 1)});
  int64_t offset = 0, state_offset = 0;
  for (Layer* layer : all_) {
    for (Param& p : layer->params()) {
      p.value = Tensor::wrap(params_.data() + offset, p.shape);
      p.grad = Tensor::wrap(grads_slab_.data() + offset, p.shape);
      offset += padded(p);
    }
    for (Param& b : layer->buffers()) {
      b.value = Tensor::wrap(state_.data() + state_offset, b.shape);
      state_offset += padded(b);
    }
  }
  Rng rng(seed);
  for (auto& layer : layers_) layer->init_params(rng);

  // Activations and their gradients.
  const auto full = [&](const Shape& sample, Layout) { return sample.prepend(ctx.max_batch); };
  const auto layout_of = [&](const Shape& sample) { return sample.rank() == 3 ? ctx.layout : Layout::flat; };
  acts_.clear();
  grads_.clear();
  bool seen_compute = false;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Shape out = layers_[i]->output_shape();
    const Layout layout = layout_of(out);
    if (i > 0 && layers_[i]->is_reshape()) {
      acts_.push_back(acts_[i - 1].reshaped(full(out, layout), layout));
      grads_.push_back(grads_[i - 1].empty() ? Tensor() : grads_[i - 1].reshaped(full(out, layout), layout));
      continue;
    }
    // In place: y aliases x and the layer's dx aliases its dy (so grads_[i] is grads_[i-1]'s memory).
    // Only after a layer that does not read its own output in backward, and never over the input batch.
    const bool in_place = i > 1 && layers_[i]->can_run_in_place() && !layers_[i - 1]->is_reshape() &&
                          !layers_[i - 1]->backward_reads_output() && layers_[i]->output_shape() == layers_[i - 1]->output_shape();
    if (in_place) {
      acts_.push_back(acts_[i - 1].view());
      grads_.push_back(grads_[i - 1].view());
      continue;
    }
    acts_.push_back(Tensor::zeros(full(out, layout), layout));
    // Layer i's output gradient exists when some computing layer after Input precedes layer i+1, i.e.
    // when layer i itself is (or follows) a computing layer.
    if (i > 0) seen_compute = true;
    grads_.push_back(seen_compute ? Tensor::zeros(full(out, layout), layout) : Tensor());
  }
  times_.assign(layers_.size(), LayerTime{});
  built_ = true;
}

void Model::reset_layer_times() { times_.assign(layers_.size(), LayerTime{}); }

namespace {
double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void Model::seed_layers(uint64_t seed, int rank) {
  const Rng base(seed ^ 0x5EEDDA7Aull);
  for (Layer* layer : all_) {
    Rng r = base.fork(static_cast<uint64_t>(rank) * 1000003ull + static_cast<uint64_t>(layer->id));
    layer->seed(r.next_u64());
  }
}

void Model::forward(int64_t n, Mode mode) {
  DTNN_ASSERT(built_ && n <= ctx_.max_batch);
  for (size_t i = 1; i < layers_.size(); ++i) {
    if (layers_[i]->is_reshape()) continue;
    const double t0 = seconds_now();
    layers_[i]->forward(acts_[i - 1].batch(n), acts_[i].batch(n), mode);
    times_[i].forward_s += seconds_now() - t0;
    ++times_[i].forward_calls;
  }
}

void Model::backward(int64_t n, size_t top) {
  DTNN_ASSERT(built_ && n <= ctx_.max_batch && top < layers_.size());
  for (size_t i = top; i >= 1; --i) {
    if (layers_[i]->is_reshape()) continue;
    const double t0 = seconds_now();
    layers_[i]->backward(acts_[i - 1].batch(n), acts_[i].batch(n), grads_[i].batch(n), gradient(i - 1, n));
    times_[i].backward_s += seconds_now() - t0;
    ++times_[i].backward_calls;
  }
}

}  // namespace dtnn
