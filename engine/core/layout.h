// The memory layout of an activation, shared by tensors and by the backends' kernels.
//
// It lives in core, below both: backend operations take raw pointers plus a layout and sizes, and must
// not depend on Tensor (which allocates its device memory through the backend).
#pragma once

namespace dtnn {

// 4-D activations: NHWC = (N, H, W, C), NCHW = (N, C, H, W), row-major. 2-D activations (N, features)
// and weights are flat.
enum class Layout { flat, nhwc, nchw };

}  // namespace dtnn
