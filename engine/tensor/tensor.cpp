#include "tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "backend/gpu_ops.h"
#include "core/error.h"

namespace dtnn {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;  // x86-64's PMD-sized transparent huge page

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::flat: return "flat";
    case Layout::nhwc: return "NHWC";
    case Layout::nchw: return "NCHW";
  }
  return "?";
}

const char* device_name(Device device) { return device == Device::gpu ? "gpu" : "cpu"; }

Layout parse_layout(const std::string& name) {
  if (name == "NHWC" || name == "nhwc") return Layout::nhwc;
  if (name == "NCHW" || name == "nchw") return Layout::nchw;
  fail("unknown tensor format '", name, "' (expected NHWC or NCHW)");
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  DTNN_CHECK(static_cast<int>(dims.size()) <= kMaxRank, "shape of rank ", dims.size(), " exceeds ", kMaxRank);
  for (int64_t d : dims) dims_[rank_++] = d;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with_dim0(int64_t n) const {
  Shape s = *this;
  s.dims_[0] = n;
  return s;
}

Shape Shape::drop_dim0() const {
  Shape s;
  for (int i = 1; i < rank_; ++i) s.dims_[s.rank_++] = dims_[i];
  return s;
}

Shape Shape::prepend(int64_t n) const {
  DTNN_ASSERT(rank_ < kMaxRank);
  Shape s;
  s.dims_[s.rank_++] = n;
  for (int i = 0; i < rank_; ++i) s.dims_[s.rank_++] = dims_[i];
  return s;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  if (rank_ == 1) s += ",";
  return s + ")";
}

float* aligned_alloc_floats(int64_t count) {
  const size_t bytes = std::max<size_t>(64, (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64);
  if (bytes >= kHugePageBytes) {
    // Activations, gradients and weights of real models: on 2 MiB pages where the kernel's transparent huge
    // pages are "madvise" (Debian's default), so building ResNet-18 at batch 256 (2.5 GB) faults ~1,200
    // pages instead of ~600,000, and the training steps miss the TLB less (as PyTorch's THP allocator).
    // The size is rounded up to whole huge pages (aligned_alloc wants a multiple of the alignment).
    const size_t huge = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, huge);
    if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, huge, MADV_HUGEPAGE);  // advice only: where THP is off or "never", small pages as before
#endif
    return static_cast<float*>(p);
  }
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<float*>(p);
}

void aligned_free(void* p) { std::free(p); }

void Tensor::Free::operator()(float* p) const {
  if (device == Device::gpu)
    gpu::device_free(p);
  else
    aligned_free(p);
}

Tensor Tensor::zeros(const Shape& shape, Layout layout, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  t.device_ = device;
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  if (device == Device::gpu) {
    t.owner_ = std::unique_ptr<float, Free>(static_cast<float*>(gpu::device_alloc(std::max<size_t>(bytes, 256))),
                                            Free{Device::gpu});
    t.data_ = t.owner_.get();
    return t;
  }
  t.owner_.reset(aligned_alloc_floats(shape.numel()));
  t.data_ = t.owner_.get();
  std::memset(t.data_, 0, bytes);
  return t;
}

Tensor Tensor::wrap(float* data, const Shape& shape, Layout layout, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  t.device_ = device;
  t.data_ = data;
  return t;
}

Tensor Tensor::view() const { return wrap(data_, shape_, layout_, device_); }

Tensor Tensor::reshaped(const Shape& shape, Layout layout) const {
  DTNN_CHECK(shape.numel() == numel(), "cannot reshape ", shape_.str(), " to ", shape.str());
  return wrap(data_, shape, layout, device_);
}

Tensor Tensor::batch(int64_t n) const {
  DTNN_ASSERT(shape_.rank() >= 1 && n >= 0 && n <= shape_[0]);
  return wrap(data_, shape_.with_dim0(n), layout_, device_);
}

void Tensor::fill(float value) const {
  if (device_ == Device::gpu)
    gpu::fill(data_, value, numel());
  else
    std::fill(data_, data_ + numel(), value);
}

void Tensor::copy_from(const Tensor& src) const {
  DTNN_CHECK(src.numel() == numel(), "copy of ", src.shape().str(), " into ", shape_.str());
  const size_t bytes = static_cast<size_t>(numel()) * sizeof(float);
  if (device_ == Device::cpu && src.device_ == Device::cpu)
    std::memcpy(data_, src.data_, bytes);
  else if (device_ == Device::gpu && src.device_ == Device::gpu)
    gpu::copy_device(data_, src.data_, bytes);
  else if (device_ == Device::gpu)
    gpu::copy_to_device_sync(data_, src.data_, bytes);
  else
    gpu::copy_to_host(data_, src.data_, bytes);
}

Shape activation_shape(Layout layout, int64_t n, int64_t c, int64_t h, int64_t w) {
  switch (layout) {
    case Layout::nhwc: return Shape{n, h, w, c};
    case Layout::nchw: return Shape{n, c, h, w};
    case Layout::flat: break;
  }
  fail("activation_shape: a 4-D activation needs NHWC or NCHW");
}

}  // namespace dtnn
