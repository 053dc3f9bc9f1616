// Tensor: a shape, a memory layout, a device and float32 storage that is either owned (64-byte aligned,
// allocated once) or a view of someone else's storage.
//
// Device: cpu storage is host memory; gpu storage is CUDA device memory (from backend/gpu_ops.h), which
// only GPU kernels may dereference. fill() and copy_from() work on either device (copy_from also between
// devices, synchronously); data() of a gpu tensor is a device pointer.
//
// Ownership rule: exactly one Tensor owns a buffer; every other Tensor on it is a view made with view(),
// reshaped() or batch(). Views do not keep the owner alive: the owner (a Model, a Layer, a test) must
// outlive them. Tensors are move-only so ownership can never be duplicated by accident.
//
// Shapes are row-major, dimension 0 is the batch. For 4-D activations the layout says what the other
// dimensions mean: NHWC = (N, H, W, C), NCHW = (N, C, H, W). 2-D activations (N, features) use
// Layout::flat. Weight tensors use Layout::flat too; their element order is documented by each layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/layout.h"

namespace dtnn {

enum class Device { cpu, gpu };

const char* device_name(Device device);  // "cpu", "gpu"

const char* layout_name(Layout layout);        // "flat", "NHWC", "NCHW"
Layout parse_layout(const std::string& name);  // "NHWC"/"nhwc"/"NCHW"/"nchw"; throws dtnn::Error otherwise

class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  int64_t numel() const;
  Shape with_dim0(int64_t n) const;   // same shape with dimension 0 replaced
  Shape drop_dim0() const;            // the per-sample shape
  Shape prepend(int64_t n) const;     // batch dimension added in front
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;            // "(64, 28, 28, 1)" as PyDTNN prints shapes

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Allocation with 64-byte alignment (a cache line, and enough for any SIMD width used here); from 2 MiB on,
// 2 MiB-aligned whole huge pages advised MADV_HUGEPAGE (tensor.cpp). Contents are not initialised.
float* aligned_alloc_floats(int64_t count);
void aligned_free(void* p);

class Tensor {
 public:
  Tensor() = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  // An owning tensor, zero-filled, on the given device.
  static Tensor zeros(const Shape& shape, Layout layout = Layout::flat, Device device = Device::cpu);
  // A view of memory owned elsewhere (on `device`).
  static Tensor wrap(float* data, const Shape& shape, Layout layout = Layout::flat, Device device = Device::cpu);

  Tensor view() const;                             // same shape, layout and data, not owning
  Tensor reshaped(const Shape& shape, Layout layout) const;  // same data, numel must match
  Tensor batch(int64_t n) const;                   // view of the first n samples (dimension 0)

  float* data() const { return data_; }
  const Shape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  Device device() const { return device_; }
  bool on_gpu() const { return device_ == Device::gpu; }
  int64_t numel() const { return shape_.numel(); }
  int64_t dim(int i) const { return shape_[i]; }
  bool empty() const { return data_ == nullptr; }
  bool owns_storage() const { return owner_ != nullptr; }

  // Logical dimensions of a 4-D activation, whatever its layout.
  int64_t n() const { return shape_[0]; }
  int64_t c() const { return layout_ == Layout::nchw ? shape_[1] : shape_[3]; }
  int64_t h() const { return layout_ == Layout::nchw ? shape_[2] : shape_[1]; }
  int64_t w() const { return layout_ == Layout::nchw ? shape_[3] : shape_[2]; }

  void fill(float value) const;
  void copy_from(const Tensor& src) const;  // numel must match; any pair of devices

 private:
  struct Free {  // constructors, not a member initializer: unique_ptr needs it default-constructible here
    Free() : device(Device::cpu) {}
    explicit Free(Device d) : device(d) {}
    Device device;
    void operator()(float* p) const;
  };
  Shape shape_;
  Layout layout_ = Layout::flat;
  Device device_ = Device::cpu;
  float* data_ = nullptr;
  std::unique_ptr<float, Free> owner_;
};

// Builds the 4-D shape of an activation from logical sizes in the given layout.
Shape activation_shape(Layout layout, int64_t n, int64_t c, int64_t h, int64_t w);

}  // namespace dtnn
