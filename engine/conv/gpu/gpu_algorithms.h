// The GPU convolution algorithms: every cuDNN algorithm of every direction, named after cuDNN's enums,
// and gpu.cudnn_find, which times all of them per direction (chosen_for() names its pick) (cudnnFind*AlgorithmEx, PyDTNN's
// --enable_cudnn_auto_conv_alg) and keeps the fastest. Built only with CUDA (conv/registry.cpp lists them).
//
//   fwd only:        gpu.cudnn.implicit_gemm, .implicit_precomp_gemm, .gemm, .direct
//   all directions:  gpu.cudnn.fft, .fft_tiling, .winograd (its bwd_filter is not implemented by cuDNN),
//                    .winograd_nonfused
//   bwd_data only:   gpu.cudnn.bwd_data_algo_0, .bwd_data_algo_1
//   bwd_filter only: gpu.cudnn.bwd_filter_algo_0, .bwd_filter_algo_1, .bwd_filter_algo_3
//   gpu.cudnn.pydtnn_fixed: implicit_precomp_gemm, bwd_data_algo_1, bwd_filter_algo_1 (PyDTNN's algorithms
//   without --enable_cudnn_auto_conv_alg)
//   gpu.cublas_1x1: dtnn's own path for 1x1 stride-1 unpadded ungrouped layers, all directions, as cuBLAS
//   GEMMs (NHWC: one GEMM; NCHW: strided-batched over the samples). cuDNN's legacy algorithms reach only
//   4-15 TFLOP/s on ResNet-50's 1x1 weight gradients on an H100, a plain SGEMM ~50.
// gpu.cudnn_find also times gpu.cublas_1x1 on the problems it applies to and keeps it where it is faster.
// supports_dir() asks cuDNN (its workspace query for that algorithm) and declines with cuDNN's reason.
//
// Weights: NCHW problems use dtnn's (K, C/G, R, S) weights as cuDNN's NCHW filter. NHWC problems keep
// dtnn's (C/G, R, S, K) weights; the algorithm transposes them to cuDNN's NHWC filter layout (K, R, S, C/G)
// in its workspace before the call (and dW back after it), so workspace_floats() includes that copy.
// Math: float32 with FMA math unless gpu::allow_tf32() (then cuDNN may use TF32 tensor cores).
// Descriptors are created once per (problem, math mode) and cached; calls never allocate device memory
// (a batch size not seen when the layer was built, a short last batch, creates its host-side descriptors on
// first use; gpu.cudnn_find reuses the layer's choice for it).
#pragma once

#include <vector>

#include "conv/conv_algorithm.h"

namespace dtnn {

const std::vector<const ConvAlgorithm*>& cudnn_algorithms();  // the named ones, then gpu.cudnn_find
const ConvAlgorithm& conv_cudnn_find();

}  // namespace dtnn
