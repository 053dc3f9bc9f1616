// AdditionBlock and ConcatenationBlock: layers made of parallel paths (PyDTNN §3.6).
//
// Every path is a chain of layers that receives the block's input x; an empty path is the identity.
//   AdditionBlock:      y = sum_p path_p(x)          dx = sum_p dpath_p/dx (dy)
//   ConcatenationBlock: y = concat_C(path_p(x))      dx = sum_p dpath_p/dx (dy restricted to p's channels)
// A Chain owns the buffers between its layers (sized for the largest batch at build, never reallocated)
// and runs elementwise layers in place where it is safe, with the rules the Model uses. The block owns
// one output buffer per path (except that the first path of an AdditionBlock writes y directly when its
// last layer does not read its own output in backward), a dx accumulator, and for concatenation one
// dy slice per path. An AdditionBlock of one path and the identity lets the path's first layer add dy to dx in
// the pass that writes dx (layers/fusable.h, AddingBackward) instead of adding it in a pass of its own.
//
// Ids follow PyDTNN: a block's children are numbered depth-first right after the block itself (the Model
// assigns them). Parameters belong to the children; a block has none of its own.
#include <cstring>

#include "backend/cpu/blas.h"
#include "backend/cpu/elementwise.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/fusable.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

// A sequence of layers between an external input x and an external output y.
class Chain {
 public:
  explicit Chain(Path layers) : layers_(std::move(layers)) {
    for (const auto& l : layers_) {
      DTNN_CHECK(l != nullptr, "block path holds a null layer");
      DTNN_CHECK(!l->is_reshape(), "a block path cannot hold ", l->type(), " (blocks keep the input's shape kind)");
      DTNN_CHECK(l->type() != "Input", "a block path cannot hold an Input layer");
    }
  }
  bool empty() const { return layers_.empty(); }
  Path& layers() { return layers_; }
  bool last_reads_output() const { return !empty() && layers_.back()->backward_reads_output(); }

  Shape build(const Shape& in, const BuildContext& ctx) {
    Shape shape = in;
    const auto layout_of = [&](const Shape& s) { return s.rank() == 3 ? ctx.layout : Layout::flat; };
    acts_.clear();
    grads_.clear();
    int buffers = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      const Shape prev = shape;
      shape = layers_[i]->build(shape, ctx);
      if (i + 1 == layers_.size()) break;  // the last layer writes the caller's y
      const bool in_place = i > 0 && layers_[i]->can_run_in_place() && !layers_[i - 1]->backward_reads_output() &&
                            shape == prev;
      if (in_place) {
        acts_.push_back(acts_[i - 1].view());
        grads_.push_back(grads_[i - 1]);
      } else {
        acts_.push_back(ctx.zeros(shape.prepend(ctx.max_batch), layout_of(shape)));
        grads_.push_back(ctx.gradient(ctx.level, GradientScratch::chain_slot(buffers++), shape.prepend(ctx.max_batch),
                                      layout_of(shape)));
      }
    }
    for (size_t i = 1; i < layers_.size(); ++i) link_moments(*layers_[i - 1], *layers_[i]);
    return shape;
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) {
    const int64_t n = x.dim(0);
    const size_t L = layers_.size();
    for (size_t i = 0; i < L; ++i)
      layers_[i]->forward(i == 0 ? x.view() : acts_[i - 1].batch(n), i + 1 == L ? y.view() : acts_[i].batch(n), mode);
  }

  // The chain's last layer when it can add a residual and apply a ReLU in its output pass (after build()).
  ResidualReluNorm* residual_relu_tail() const {
    auto* norm = empty() ? nullptr : dynamic_cast<ResidualReluNorm*>(layers_.back().get());
    return norm && norm->residual_relu() ? norm : nullptr;
  }

  // Training: forward(), with y = max(0, the last layer's output + r) written by that layer
  // (residual_relu_tail() must be non-null).
  void forward_residual_relu(const Tensor& x, const Tensor& y, const Tensor& r) {
    const int64_t n = x.dim(0);
    const size_t L = layers_.size();
    for (size_t i = 0; i + 1 < L; ++i)
      layers_[i]->forward(i == 0 ? x.view() : acts_[i - 1].batch(n), acts_[i].batch(n), Mode::train);
    residual_relu_tail()->forward_residual_relu(L == 1 ? x.view() : acts_[L - 2].batch(n), r, y);
  }

  // dx may be empty (no input gradient wanted); parameter gradients are always computed. With `add` (non-empty dx),
  // the first layer may add it to dx in its own pass (AddingBackward): returns whether it did, the caller adding
  // it otherwise.
  bool backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const float* add = nullptr) {
    const int64_t n = x.dim(0);
    const size_t L = layers_.size();
    for (size_t i = L; i-- > 0;) {
      const Tensor in = i == 0 ? x.view() : acts_[i - 1].batch(n), out = i + 1 == L ? y.view() : acts_[i].batch(n);
      const Tensor g = i + 1 == L ? dy.view() : grads_[i].batch(n), dg = i == 0 ? dx.view() : grads_[i - 1].batch(n);
      auto* adding = i == 0 && add ? dynamic_cast<AddingBackward*>(layers_[0].get()) : nullptr;
      if (adding && adding->backward_adding(in, out, g, dg, add)) return true;
      layers_[i]->backward(in, out, g, dg);
    }
    return false;
  }

  void collect(std::vector<Layer*>& out) const {
    for (const auto& l : layers_) {
      out.push_back(l.get());
      for (Layer* c : l->children()) out.push_back(c);
    }
  }
  void init_params(Rng& rng) {
    for (auto& l : layers_) l->init_params(rng);
  }
  int64_t num_params() const {
    int64_t n = 0;
    for (const auto& l : layers_) n += l->num_params();
    return n;
  }
  double forward_flops() const {
    double f = 0.0;
    for (const auto& l : layers_) f += l->forward_flops();
    return f;
  }

 private:
  Path layers_;
  std::vector<Tensor> acts_;            // boundaries between layers i and i+1
  std::vector<GradientBuffer> grads_;
};

// dst += src, dst = relu(dst + src) and dst = src over n floats, on the block's device (the kernels of
// backend/cpu/elementwise.h and backend/gpu_ops.h).
void add_into(float* dst, const float* src, int64_t n, bool gpu) {
  gpu ? gpu::add_into(dst, src, n) : cpu::add_into(dst, src, n);
}

void add_relu_into(float* dst, const float* src, int64_t n, bool gpu) {
  gpu ? gpu::add_relu_into(dst, src, n) : cpu::add_relu_into(dst, src, n);
}

void copy_floats(float* dst, const float* src, int64_t n, bool gpu) {
  if (gpu) return gpu::copy_device(dst, src, static_cast<size_t>(n) * sizeof(float));
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

class Block : public Layer {
 public:
  explicit Block(std::vector<Path> paths) {
    for (Path& p : paths) paths_.emplace_back(std::move(p));
  }
  std::vector<Layer*> children() const override {
    std::vector<Layer*> out;
    for (const Chain& c : paths_) c.collect(out);
    return out;
  }
  void init_params(Rng& rng) override {
    for (Chain& c : paths_) c.init_params(rng);
  }
  void transform_paths(const std::function<void(Path&)>& f) override {
    for (Chain& c : paths_) f(c.layers());
  }
  double forward_flops() const override {
    double f = 0.0;
    for (const Chain& c : paths_) f += c.forward_flops();
    return f;
  }
  std::string describe() const override { return std::to_string(paths_.size()) + " paths"; }

 protected:
  // Builds every path on `in` (as chains of the next nesting level: their gradients are live while this
  // block's dy and dx are) and returns their output shapes (the identity's is `in`).
  std::vector<Shape> build_paths(const Shape& in, const BuildContext& ctx) {
    layout_ = in.rank() == 3 ? ctx.layout : Layout::flat;
    in_sample_ = in;
    ctx_ = &ctx;
    gpu_ = ctx.gpu();
    BuildContext inner = ctx;
    inner.level = ctx.level + 1;
    std::vector<Shape> shapes;
    for (Chain& c : paths_) shapes.push_back(c.empty() ? in : c.build(in, inner));
    dx_acc_ = inner_gradient(GradientScratch::kAccumulator, in);
    return shapes;
  }
  // A buffer for max_batch samples of `sample` on the model's device (only inside build()).
  Tensor full(const Shape& sample, int64_t max_batch) const {
    return ctx_->zeros(sample.prepend(max_batch), sample.rank() == 3 ? layout_ : Layout::flat);
  }
  // A gradient buffer of max_batch samples of `sample` live only during this block's backward (only
  // inside build()).
  GradientBuffer inner_gradient(int slot, const Shape& sample) const {
    return ctx_->gradient(ctx_->level + 1, slot, sample.prepend(ctx_->max_batch),
                          sample.rank() == 3 ? layout_ : Layout::flat);
  }

  const BuildContext* ctx_ = nullptr;  // valid during build() only
  bool gpu_ = false;
  std::vector<Chain> paths_;
  Shape in_sample_;
  GradientBuffer dx_acc_;
};

class AdditionBlock final : public Block {
 public:
  using Block::Block;
  std::string type() const override { return relu_ ? "AdditionBlockRelu" : "AdditionBlock"; }
  // Fused with the Relu after it (fuse_layers, FusionOptions::add_relu): y = relu(sum of the paths), the
  // ReLU applied by the last addition; backward masks dy with y > 0 in place, then runs the paths as
  // before. Masking in place needs dy to be read by nobody after this layer: true for the model's and a
  // path's inner gradient buffers, not for the last layer of a path (its dy is the enclosing block's,
  // shared with the other paths), so fuse_layers never fuses a block that ends a path.
  bool absorb_relu(std::unique_ptr<Layer>& relu) override {
    if (relu_ || !relu || relu->type() != "Relu") return false;
    relu_ = std::move(relu);
    return true;
  }
  bool backward_reads_output() const override { return relu_ != nullptr; }
  std::vector<Layer*> children() const override {
    std::vector<Layer*> out = Block::children();
    if (relu_) out.push_back(relu_.get());  // numbered after the block's paths, as when it followed the block
    return out;
  }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    const std::vector<Shape> shapes = build_paths(in, ctx);
    for (size_t p = 1; p < shapes.size(); ++p)
      DTNN_CHECK(shapes[p] == shapes[0], "AdditionBlock: path ", p, " gives ", shapes[p].str(), " but path 0 gives ",
                 shapes[0].str());
    // The first non-identity path computes into y (directly when its output is not needed afterwards).
    first_ = -1;
    for (size_t p = 0; p < paths_.size(); ++p)
      if (!paths_[p].empty()) {
        first_ = static_cast<int>(p);
        break;
      }
    DTNN_CHECK(first_ >= 0, "AdditionBlock: every path is the identity");
    direct_ = !paths_[first_].last_reads_output();
    last_added_ = -1;
    for (size_t p = 0; p < paths_.size(); ++p)
      if (static_cast<int>(p) != first_) last_added_ = static_cast<int>(p);
    if (relu_) relu_->build(shapes[0], ctx);
    // Two paths, the ReLU absorbed, the first path writing y and ending in a normalization that can add:
    // that normalization's output pass computes relu(its output + the other path's) (ResidualReluNorm).
    residual_relu_ = relu_ && direct_ && paths_.size() == 2 && paths_[first_].residual_relu_tail() != nullptr;
    outs_.clear();
    for (size_t p = 0; p < paths_.size(); ++p)
      outs_.push_back(paths_[p].empty() || (static_cast<int>(p) == first_ && direct_) ? Tensor()
                                                                                      : full(shapes[0], ctx.max_batch));
    return out_sample_ = shapes[0];
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    if (residual_relu_ && mode == Mode::train) return forward_residual_relu(x, y);
    const int64_t n = x.dim(0), count = y.numel();
    Chain& first = paths_[first_];
    if (direct_) {
      first.forward(x, y, mode);
    } else {
      first.forward(x, outs_[first_].batch(n), mode);
      copy_floats(y.data(), outs_[first_].data(), count, gpu_);
    }
    for (size_t p = 0; p < paths_.size(); ++p) {
      if (static_cast<int>(p) == first_) continue;
      const float* src = x.data();
      if (!paths_[p].empty()) {
        const Tensor out = outs_[p].batch(n);
        paths_[p].forward(x, out, mode);
        src = out.data();
      }
      if (relu_ && static_cast<int>(p) == last_added_)
        add_relu_into(y.data(), src, count, gpu_);
      else
        add_into(y.data(), src, count, gpu_);
    }
    if (relu_ && last_added_ < 0) relu_->forward(y, y, mode);  // a single path: nothing to add; in place
  }

  // The other path first (or x itself), then the first path, whose normalization adds it and clamps.
  void forward_residual_relu(const Tensor& x, const Tensor& y) {
    const int64_t n = x.dim(0);
    const int other = 1 - first_;
    const bool identity = paths_[other].empty();
    const Tensor residual = identity ? x.view() : outs_[other].batch(n);
    if (!identity) paths_[other].forward(x, residual, Mode::train);
    paths_[first_].forward_residual_relu(x, y, residual);
  }

  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0), count = x.numel();
    if (relu_) relu_->backward(Tensor(), y, dy, dy);  // dy = y > 0 ? dy : 0, in place (Relu reads only y)
    // A path and the identity (ResNets' blocks): the path's first layer may add dy, the identity's gradient, to dx
    // in the pass that writes it (AddingBackward), the same floats as the addition below.
    const bool shortcut = paths_.size() == 2 && paths_[0].empty() != paths_[1].empty() && !dx.empty();
    bool dx_written = false, identity_added = false;
    for (size_t p = 0; p < paths_.size(); ++p) {
      if (paths_[p].empty()) continue;
      const Tensor out = outs_[p].empty() ? y.view() : outs_[p].batch(n);  // y only when never read
      if (dx.empty()) {
        paths_[p].backward(x, out, dy, Tensor());
      } else if (!dx_written) {
        identity_added = paths_[p].backward(x, out, dy, dx, shortcut ? dy.data() : nullptr);
        dx_written = true;
      } else {
        const Tensor acc = dx_acc_.batch(n);
        paths_[p].backward(x, out, dy, acc);
        add_into(dx.data(), acc.data(), count, gpu_);
      }
    }
    if (dx.empty() || identity_added) return;
    for (size_t p = 0; p < paths_.size(); ++p)
      if (paths_[p].empty()) add_into(dx.data(), dy.data(), count, gpu_);  // identity: dy passes straight through
  }

 private:
  int first_ = 0, last_added_ = -1;  // the path computed into y first; the path added last (-1: none)
  bool residual_relu_ = false;  // training: the first path's normalization adds the other path and clamps
  bool direct_ = false;
  std::vector<Tensor> outs_;
  std::unique_ptr<Layer> relu_;  // the absorbed Relu: its passes for a single path and for dy's mask
};

class ConcatenationBlock final : public Block {
 public:
  using Block::Block;
  std::string type() const override { return "ConcatenationBlock"; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    const std::vector<Shape> shapes = build_paths(in, ctx);
    const auto channels = [&](const Shape& s) { return s.rank() == 1 ? s[0] : (layout_ == Layout::nhwc ? s[2] : s[0]); };
    const auto spatial = [&](const Shape& s) { return s.numel() / channels(s); };
    channels_.clear();
    int64_t total = 0;
    for (size_t p = 0; p < shapes.size(); ++p) {
      DTNN_CHECK(shapes[p].rank() == shapes[0].rank(), "ConcatenationBlock: path ", p, " gives ", shapes[p].str(),
                 ", which cannot be concatenated with ", shapes[0].str(), " along channels");
      if (shapes[p].rank() == 3)
        DTNN_CHECK(layout_ == Layout::nhwc ? (shapes[p][0] == shapes[0][0] && shapes[p][1] == shapes[0][1])
                                           : (shapes[p][1] == shapes[0][1] && shapes[p][2] == shapes[0][2]),
                   "ConcatenationBlock: path ", p, " gives ", shapes[p].str(), " but path 0 gives ", shapes[0].str(),
                   " (spatial sizes differ)");
      channels_.push_back(channels(shapes[p]));
      total += channels(shapes[p]);
    }
    spatial_ = spatial(shapes[0]);
    Shape out = shapes[0];
    if (out.rank() == 1)
      out[0] = total;
    else if (layout_ == Layout::nhwc)
      out[2] = total;
    else
      out[0] = total;
    outs_.clear();
    dys_.clear();
    for (size_t p = 0; p < paths_.size(); ++p) {
      outs_.push_back(paths_[p].empty() ? Tensor() : full(shapes[p], ctx.max_batch));
      dys_.push_back(inner_gradient(GradientScratch::kSlice, shapes[p]));  // one path's at a time: one slot
    }
    return out_sample_ = out;
  }

  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const int64_t n = x.dim(0);
    int64_t offset = 0;
    for (size_t p = 0; p < paths_.size(); ++p) {
      float* src = x.data();
      if (!paths_[p].empty()) {
        const Tensor out = outs_[p].batch(n);
        paths_[p].forward(x, out, mode);
        src = out.data();
      }
      copy_channels(src, channels_[p], y.data(), total(), offset, n, /*to_slice=*/false);
      offset += channels_[p];
    }
  }

  // The paths' dy slices share one buffer (dys_ are views of one scratch slot): each is cut out of dy just
  // before its path's backward, the identity paths' after the others.
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0), count = x.numel();
    int64_t offset = 0;
    bool dx_written = false;
    for (size_t p = 0; p < paths_.size(); offset += channels_[p], ++p) {
      if (paths_[p].empty()) continue;
      const Tensor dyp = dys_[p].batch(n);
      copy_channels(dyp.data(), channels_[p], dy.data(), total(), offset, n, /*to_slice=*/true);
      const Tensor out = outs_[p].batch(n);
      if (dx.empty()) {
        paths_[p].backward(x, out, dyp, Tensor());
      } else if (!dx_written) {
        paths_[p].backward(x, out, dyp, dx);
        dx_written = true;
      } else {
        const Tensor acc = dx_acc_.batch(n);
        paths_[p].backward(x, out, dyp, acc);
        add_into(dx.data(), acc.data(), count, gpu_);
      }
    }
    if (dx.empty()) return;
    offset = 0;
    for (size_t p = 0; p < paths_.size(); offset += channels_[p], ++p) {
      if (!paths_[p].empty()) continue;
      if (dx_written) {
        const Tensor dyp = dys_[p].batch(n);
        copy_channels(dyp.data(), channels_[p], dy.data(), total(), offset, n, /*to_slice=*/true);
        add_into(dx.data(), dyp.data(), count, gpu_);
      } else {
        copy_channels(dx.data(), channels_[p], dy.data(), total(), offset, n, /*to_slice=*/true);
        dx_written = true;
      }
    }
  }

 private:
  int64_t total() const {
    int64_t t = 0;
    for (int64_t c : channels_) t += c;
    return t;
  }
  // Copies between a path's tensor (c channels) and channels [offset, offset + c) of the concatenated
  // tensor (total channels): into the concatenation, or out of it when to_slice.
  void copy_channels(float* part, int64_t c, float* whole, int64_t total, int64_t offset, int64_t n,
                     bool to_slice) const {
    if (gpu_) {  // the same slices as rows of a 2-D copy
      const bool nchw = layout_ == Layout::nchw;
      const size_t f = sizeof(float), rows = static_cast<size_t>(nchw ? n : n * spatial_);
      const size_t width = static_cast<size_t>(nchw ? c * spatial_ : c) * f;
      const size_t whole_pitch = static_cast<size_t>(nchw ? total * spatial_ : total) * f;
      float* w = whole + (nchw ? offset * spatial_ : offset);
      if (to_slice)
        gpu::copy_2d(part, width, w, whole_pitch, width, rows);
      else
        gpu::copy_2d(w, whole_pitch, part, width, width, rows);
      return;
    }
    if (layout_ == Layout::nchw) {
      const int64_t block = c * spatial_;
      for (int64_t b = 0; b < n; ++b) {
        float* w = whole + (b * total + offset) * spatial_;
        float* s = part + b * block;
        std::memcpy(to_slice ? s : w, to_slice ? w : s, block * sizeof(float));
      }
      return;
    }
    const int64_t rows = n * spatial_;  // NHWC and flat: rows of channels
    for (int64_t r = 0; r < rows; ++r) {
      float* w = whole + r * total + offset;
      float* s = part + r * c;
      std::memcpy(to_slice ? s : w, to_slice ? w : s, c * sizeof(float));
    }
  }

  std::vector<int64_t> channels_;
  int64_t spatial_ = 1;
  std::vector<Tensor> outs_;
  std::vector<GradientBuffer> dys_;
};

}  // namespace

std::unique_ptr<Layer> make_addition_block(std::vector<Path> paths) {
  DTNN_CHECK(!paths.empty(), "AdditionBlock needs at least one path");
  return std::make_unique<AdditionBlock>(std::move(paths));
}

std::unique_ptr<Layer> make_concatenation_block(std::vector<Path> paths) {
  DTNN_CHECK(!paths.empty(), "ConcatenationBlock needs at least one path");
  return std::make_unique<ConcatenationBlock>(std::move(paths));
}

}  // namespace dtnn
