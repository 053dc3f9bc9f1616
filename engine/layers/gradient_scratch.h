// Gradient scratch: the memory of a model's activation gradients, shared by all its layers.
//
// An activation gradient is written by the backward pass of the layer after it and read by the backward
// pass of the layer before it; nothing else reads it, and it is dead once that layer is done. A chain of
// layers is visited in reverse order, so its gradients need only two buffers used alternately (a layer
// reads one and writes the other; a layer running in place reads and writes the same one), each as large
// as the chain's largest gradient. A block (blocks.cpp) runs its paths inside its own backward pass, while
// its dy and dx (buffers of the chain it sits in) are live: its paths are chains of the next nesting level,
// with that level's two buffers, and its dx accumulator and per-path dy slice are two more buffers of that
// level. A leaf layer with internal gradients (fused.cpp) uses the level below its own the same way:
// nothing else runs at that level during its call. So a model holds kSlots buffers per nesting level, each
// sized for its largest request, instead of one per layer boundary (d2l's ResNet-18 at batch 256 on the
// CPU: about 1 GB of gradient buffers down to about 0.4 GB; the numbers are in
// results/baselines/memory_2core.md).
//
// Life cycle: while layers are built, BuildContext::gradient() reserves room in a slot and returns a
// GradientBuffer; once everything is built the Model allocates all slots in one buffer on its device
// (allocate()); GradientBuffer::batch() looks the slot's address up on each call, so buffers handed out
// before the allocation are valid after it. Without a GradientScratch (a layer built on its own, or
// BuildContext::private_scratch) every GradientBuffer owns its own memory, as every boundary had before.
//
// Consequence for readers of Model::gradient(i): it holds layer i's output gradient from when layer i + 1's
// backward wrote it until layer i's backward has read it; later layers' gradients reuse that memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tensor/tensor.h"

namespace dtnn {

struct BuildContext;
class GradientScratch;

// An activation-gradient buffer for up to max_batch samples: a slot of the model's GradientScratch, or
// memory of its own. Cheap to copy; copies and alias()es refer to the same memory.
class GradientBuffer {
 public:
  GradientBuffer() = default;  // none: no gradient is wanted there
  static GradientBuffer own(Tensor storage);
  bool empty() const { return scratch_ == nullptr && storage_ == nullptr; }
  // A view of the first n samples (n <= the dimension 0 it was made with); the whole buffer by view().
  Tensor batch(int64_t n) const;
  Tensor view() const { return batch(full_[0]); }
  // The same memory seen as another shape of the same size (Flatten's views, layers running in place).
  GradientBuffer alias(const Shape& full, Layout layout) const;

 private:
  friend class GradientScratch;
  const GradientScratch* scratch_ = nullptr;  // shared: the scratch and the slot's index in it
  int slot_ = -1;
  std::shared_ptr<Tensor> storage_;  // private: the memory of its own
  Shape full_;
  Layout layout_ = Layout::flat;
  Device device_ = Device::cpu;
};

class GradientScratch {
 public:
  // Per nesting level: 0 and 1 alternate along a chain; 2 is a block's dx accumulator; 3 a block's dy slice.
  static constexpr int kSlots = 4;
  enum Slot { kChainA = 0, kChainB = 1, kAccumulator = 2, kSlice = 3 };
  // The slot of a chain's k-th gradient buffer (k = 0, 1, ...): consecutive ones alternate, so the layer
  // between them reads one slot and writes the other.
  static Slot chain_slot(int k) { return k % 2 == 0 ? kChainA : kChainB; }
  GradientScratch() = default;
  GradientScratch(const GradientScratch&) = delete;
  GradientScratch& operator=(const GradientScratch&) = delete;

  // Room for `full` in slot `slot` of nesting level `level` (before allocate()).
  GradientBuffer reserve(int level, int slot, const Shape& full, Layout layout, Device device);
  // Allocates every slot, each 64-byte aligned, in one buffer from ctx.zeros() (on ctx.device; GPU: the
  // model's arena). Once, after every layer is built.
  void allocate(const BuildContext& ctx);
  float* slot_data(int slot) const { return bases_[static_cast<size_t>(slot)]; }
  int64_t floats() const;  // all slots together, padding included

 private:
  std::vector<int64_t> sizes_;  // floats per slot, level * kSlots + slot
  std::vector<float*> bases_;
  Tensor storage_;
  bool allocated_ = false;
};

}  // namespace dtnn
