// PyDTNN's own analytic model, reproduced so that PyDTNN users can compare (`dtnn predict --model_kind
// pydtnn`). Sources (hpca-uji/PyDTNN): pydtnn/performance_models.py (commit 3171af7f) for the formulas,
// pydtnn/model.py Model.calculate_time (commit 0081e400) for how they combine, and the CPU layers'
// initialize() (pydtnn/backends/cpu/layers/conv_2d.py, fc.py, abstract/pool_2d_layer.py,
// pydtnn/layers/abstract/block_layer.py) for which layer gets which cost. Parameters (PyDTNN's hidden
// options, same names and defaults): cpu_speed 4e12 FLOP/s, memory_bw 50e9 B/s, network_bw 1e9 bit/s,
// network_lat 0.5e-6 s, network_alg "vdg"; bfp = 4 (float32).
//
//   roofline(I)        = min(cpu_speed, memory_bw · I)
//   flops2time(f, m)   = f / (roofline(f / (bfp·m)) + 1e-8)          (the 1e-8 is PyDTNN's)
//   im2col_time(m, n)  = flops2time(0, m·n)     = 0                 (no flops: PyDTNN charges nothing)
//   col2im_time(m, n)  = flops2time(m·n, m·n)   = m·n / min(cpu_speed, memory_bw / bfp)
//   matmul_time(m,n,k) = flops2time(2mnk, mn + mk + nk)
//   allreduce, elems e over p ranks (network_bw in bit/s):
//     bta: 2·log2(p)·lat + 2(p−1)/p·(8·bfp·e / bw) + (p−1)/p·(e / cpu_speed)
//     vdg: ⌈log2 p⌉·lat + 2⌈log2 p⌉·(8·bfp·e / bw) + ⌈log2 p⌉·(e / cpu_speed)
//     (log2 p as Python's math.log(p, 2) = ln p / ln 2, so ⌈·⌉ sees its rounding, as PyDTNN's does)
//   Conv2D (b samples, output ho×wo, ci input channels, co filters kh×kw):
//     fwd = im2col(ci·kh·kw, b·ho·wo) + matmul(co, b·ho·wo, ci·kh·kw)
//     bwd = matmul(co, ci·kh·kw, b·ho·wo) + matmul(ci·kh·kw, b·ho·wo, co)
//           (the model's first layer, PyDTNN's need_dx False: col2im(ci·kh·kw, b·ho·wo) for the second term)
//   FC (weights in×out): fwd = matmul(b, out, in); bwd = matmul(in, out, b) + matmul(b, in, out)
//           (the first layer: bwd = 0, PyDTNN's operator precedence in fc_cpu.py)
//   MaxPool2D, AveragePool2D: fwd = im2col(kh·kw, b·ho·wo·ci) (= 0); bwd = col2im(kh·kw, b·ho·wo·ci)
//   blocks: the sum of their layers'; every other layer (activations, BatchNormalization, Dropout, ...): 0
//   calculate_time over the top-level layers, in forward order:
//     T = Σ fwd
//     blocking:     T += Σ bwd + Σ_{layers with weights} allreduce(weights + biases)
//     non-blocking: for each layer in FORWARD order (as PyDTNN iterates): T += bwd; if it has weights:
//                   T_iar = max(T, T_iar) + allreduce(weights + biases);  finally T = max(T, T_iar)
//   (PyDTNN quirks kept: the non-blocking chain walks the layers in forward order although backward runs
//   them in reverse; only top-level layers with a `weights` array communicate, so the parameters inside
//   ResNet/DenseNet blocks are never summed in this model; no loss, no update, no data loading.)
//
// dtnn's zoo models are walked shape-only (models/plan.h style). dtnn-only layer kinds get PyDTNN's nearest
// rule: grouped/depthwise convolutions use the channels per group (PyDTNN's depthwise layers have other
// formulas, not reproduced); fused layers do not occur (the zoo is walked unfused, PyDTNN's default).
#pragma once

#include <string>
#include <vector>

namespace dtnn::perf {

struct PydtnnParams {
  double cpu_speed = 4e12;
  double memory_bw = 50e9;
  double network_bw = 1e9;  // bit/s
  double network_lat = 0.5e-6;
  std::string network_alg = "vdg";  // vdg | bta
};

// PyDTNN's 4-vector: [total, compute, memory, network] seconds.
struct PTime {
  double total = 0.0, comp = 0.0, mem = 0.0, net = 0.0;
  PTime& operator+=(const PTime& o) {
    total += o.total, comp += o.comp, mem += o.mem, net += o.net;
    return *this;
  }
};

PTime pydtnn_flops2time(double flops, double memops, const PydtnnParams& params);
PTime pydtnn_im2col_time(double m, double n, const PydtnnParams& params);
PTime pydtnn_col2im_time(double m, double n, const PydtnnParams& params);
PTime pydtnn_matmul_time(double m, double n, double k, const PydtnnParams& params);
// Throws dtnn::Error for a network_alg other than bta or vdg.
PTime pydtnn_allreduce_time(double elems, int nprocs, const PydtnnParams& params);

struct PydtnnLayer {
  int id = 0;
  std::string type;
  PTime fwd, bwd;
  double allreduce_elems = 0.0;  // weights + biases of a top-level Conv2D or FC, else 0
};

// The top-level layers of zoo model `model` at `batch` samples per rank, with PyDTNN's costs.
std::vector<PydtnnLayer> pydtnn_layers(const std::string& model, double batch, const PydtnnParams& params);

// Model.calculate_time: nprocs ranks (1: no communication), blocking or not.
PTime pydtnn_calculate_time(const std::vector<PydtnnLayer>& layers, int nprocs, bool blocking,
                            const PydtnnParams& params);

}  // namespace dtnn::perf
