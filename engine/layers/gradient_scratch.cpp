#include "layers/gradient_scratch.h"

#include <algorithm>

#include "core/error.h"
#include "layers/layer.h"

namespace dtnn {
namespace {
int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }  // 64-byte multiples
}  // namespace

GradientBuffer GradientBuffer::own(Tensor storage) {
  GradientBuffer b;
  b.full_ = storage.shape();
  b.layout_ = storage.layout();
  b.device_ = storage.device();
  b.storage_ = std::make_shared<Tensor>(std::move(storage));
  return b;
}

Tensor GradientBuffer::batch(int64_t n) const {
  if (empty()) return Tensor();
  DTNN_ASSERT(n <= full_[0]);
  float* data = scratch_ ? scratch_->slot_data(slot_) : storage_->data();
  return Tensor::wrap(data, full_.with_dim0(n), layout_, device_);
}

GradientBuffer GradientBuffer::alias(const Shape& full, Layout layout) const {
  if (empty()) return GradientBuffer();
  DTNN_ASSERT(full.numel() == full_.numel() && full[0] == full_[0]);
  GradientBuffer b = *this;
  b.full_ = full;
  b.layout_ = layout;
  return b;
}

GradientBuffer GradientScratch::reserve(int level, int slot, const Shape& full, Layout layout, Device device) {
  DTNN_ASSERT(!allocated_ && level >= 0 && slot >= 0 && slot < kSlots);
  const size_t index = static_cast<size_t>(level * kSlots + slot);
  if (sizes_.size() <= index) sizes_.resize((static_cast<size_t>(level) + 1) * kSlots, 0);
  sizes_[index] = std::max(sizes_[index], full.numel());
  GradientBuffer b;
  b.scratch_ = this;
  b.slot_ = static_cast<int>(index);
  b.full_ = full;
  b.layout_ = layout;
  b.device_ = device;
  return b;
}

int64_t GradientScratch::floats() const {
  int64_t total = 0;
  for (int64_t s : sizes_) total += padded(s);
  return total;
}

void GradientScratch::allocate(const BuildContext& ctx) {
  DTNN_ASSERT(!allocated_);
  allocated_ = true;
  storage_ = ctx.zeros(Shape{std::max<int64_t>(floats(), 1)});
  bases_.assign(sizes_.size(), nullptr);
  if (storage_.empty()) return;  // a plan-only build: shapes without storage
  int64_t offset = 0;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (sizes_[i] > 0) bases_[i] = storage_.data() + offset;
    offset += padded(sizes_[i]);
  }
}

}  // namespace dtnn
