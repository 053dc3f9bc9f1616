// cuDNN convolution algorithms (conv/gpu/gpu_algorithms.h).
#include <map>
#include <mutex>
#include <algorithm>
#include <optional>
#include <vector>
#include <string>
#include <tuple>

#include "backend/gpu.h"
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"
#include "conv/gpu/gpu_algorithms.h"
#include "core/median.h"

namespace dtnn {
namespace {

constexpr int kNone = -1;
constexpr size_t kFindWorkspaceLimit = size_t{1} << 30;  // cudnn_find considers algorithms needing <= 1 GiB

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int, bool>;
Key key_of(const ConvProblem& p) {
  return Key{p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups,
             static_cast<int>(p.layout), gpu::allow_tf32()};
}
Key key_without_batch(const ConvProblem& p) { return key_of(p.with_batch(1)); }

struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

std::mutex g_mutex;  // guards every cache below (descriptor creation and queries happen at build time)

// Descriptors of a problem, created on first use and kept for the process's lifetime.
const Descriptors& descriptors(const ConvProblem& p) {
  static std::map<Key, Descriptors> cache;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = cache.find(key_of(p));
  if (it != cache.end()) return it->second;
  Descriptors d;
  const cudnnTensorFormat_t fmt = p.layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  DTNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.x));
  DTNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.y));
  DTNN_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d.bias));
  DTNN_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d.w));
  DTNN_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d.conv));
  DTNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.x, fmt, CUDNN_DATA_FLOAT, i(p.n), i(p.c), i(p.h), i(p.w)));
  DTNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.y, fmt, CUDNN_DATA_FLOAT, i(p.n), i(p.k), i(p.p()), i(p.q())));
  DTNN_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(p.k), 1, 1));
  DTNN_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, fmt, i(p.k), i(p.c / p.groups), i(p.r), i(p.s)));
  DTNN_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, i(p.pad_h), i(p.pad_w), i(p.stride_h), i(p.stride_w),
                                                   i(p.dil_h), i(p.dil_w), CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
  DTNN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv, i(p.groups)));
  DTNN_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, gpu::allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  int on, oc, oh, ow;
  DTNN_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &on, &oc, &oh, &ow));
  DTNN_CHECK(oh == p.p() && ow == p.q() && oc == p.k, "cuDNN's output shape ", oh, "x", ow, "x", oc,
             " differs from dtnn's for ", p.str());
  return cache.emplace(key_of(p), d).first->second;
}

// Result of asking cuDNN for an algorithm's workspace: success (bytes) or the reason it declines.
struct Query {
  bool ok = false;
  size_t bytes = 0;
  std::string why;
};

Query query(const ConvProblem& p, ConvDir dir, int algo) {
  static std::map<std::tuple<Key, int, int>, Query> cache;
  const Descriptors& d = descriptors(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto k = std::make_tuple(key_of(p), static_cast<int>(dir), algo);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  Query q;
  cudnnStatus_t st;
  switch (dir) {
    case ConvDir::fwd:
      st = cudnnGetConvolutionForwardWorkspaceSize(gpu::cudnn(), d.x, d.w, d.conv, d.y,
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), &q.bytes);
      break;
    case ConvDir::bwd_data:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(gpu::cudnn(), d.w, d.y, d.conv, d.x,
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &q.bytes);
      break;
    default:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(gpu::cudnn(), d.x, d.y, d.conv, d.w,
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &q.bytes);
      break;
  }
  q.ok = st == CUDNN_STATUS_SUCCESS;
  if (!q.ok) {
    char msg[512] = {0};
    cudnnGetLastErrorString(msg, sizeof msg);
    q.why = std::string("cuDNN declines: ") + cudnnGetErrorString(st) + (msg[0] ? std::string(" (") + msg + ")" : "");
    for (char& c : q.why)
      if (c == '\n') c = ' ';
  }
  return cache.emplace(k, q).first->second;
}

int64_t weight_copy_floats(const ConvProblem& p) { return p.layout == Layout::nhwc ? (p.w_numel() + 63) / 64 * 64 : 0; }

// The weights in cuDNN's filter layout: dtnn's own (NCHW), or their (K, R, S, C/G) copy at the start of the
// workspace (NHWC).
const float* cudnn_weights(const ConvProblem& p, const float* w, float* ws) {
  if (p.layout != Layout::nhwc) return w;
  gpu::crsk_krsc(w, ws, p.c / p.groups, p.r * p.s, p.k, true);
  return ws;
}

// The three cuDNN calls, with a given algorithm per direction (`bytes` of workspace after the weight copy).
void run_forward(const ConvProblem& p, int algo, const float* x, const float* w, const float* bias, float* y,
                 float* ws) {
  const Descriptors& d = descriptors(p);
  const Query q = query(p, ConvDir::fwd, algo);
  DTNN_CHECK(q.ok, p.str(), " fwd: ", q.why);
  const float one = 1.0f, zero = 0.0f;
  const float* wk = cudnn_weights(p, w, ws);
  DTNN_CUDNN_CHECK(cudnnConvolutionForward(gpu::cudnn(), &one, d.x, x, d.w, wk, d.conv,
                                           static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws + weight_copy_floats(p),
                                           q.bytes, &zero, d.y, y));
  if (bias) DTNN_CUDNN_CHECK(cudnnAddTensor(gpu::cudnn(), &one, d.bias, bias, &one, d.y, y));
}

void run_backward_data(const ConvProblem& p, int algo, const float* dy, const float* w, float* dx, float* ws) {
  const Descriptors& d = descriptors(p);
  const Query q = query(p, ConvDir::bwd_data, algo);
  DTNN_CHECK(q.ok, p.str(), " bwd_data: ", q.why);
  const float one = 1.0f, zero = 0.0f;
  const float* wk = cudnn_weights(p, w, ws);
  DTNN_CUDNN_CHECK(cudnnConvolutionBackwardData(gpu::cudnn(), &one, d.w, wk, d.y, dy, d.conv,
                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(algo),
                                                ws + weight_copy_floats(p), q.bytes, &zero, d.x, dx));
}

void run_backward_filter(const ConvProblem& p, int algo, const float* x, const float* dy, float* dw, float* db,
                         float* ws) {
  const Descriptors& d = descriptors(p);
  const Query q = query(p, ConvDir::bwd_filter, algo);
  DTNN_CHECK(q.ok, p.str(), " bwd_filter: ", q.why);
  const float one = 1.0f, zero = 0.0f;
  float* target = p.layout == Layout::nhwc ? ws : dw;
  DTNN_CUDNN_CHECK(cudnnConvolutionBackwardFilter(gpu::cudnn(), &one, d.x, x, d.y, dy, d.conv,
                                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                                  ws + weight_copy_floats(p), q.bytes, &zero, d.w, target));
  if (p.layout == Layout::nhwc) gpu::crsk_krsc(ws, dw, p.c / p.groups, p.r * p.s, p.k, false);
  if (db) DTNN_CUDNN_CHECK(cudnnConvolutionBackwardBias(gpu::cudnn(), &one, d.y, dy, &zero, d.bias, db));
}

// ---- gpu.cublas_1x1: dtnn's own 1x1, stride-1, unpadded, ungrouped convolution as cuBLAS GEMMs ------------
//   NHWC: one GEMM per direction over the N*H*W rows (x is (NHW x C), dtnn's weights (C x K), y (NHW x K)).
//   NCHW: strided-batched GEMMs over the samples (y[n] (K x HW) = w (K x C) . x[n] (C x HW)); the weight
//         gradient is the sum over samples of dy[n] . x[n]^T, computed per sample into the workspace
//         (N x K x C floats) and summed in a fixed order. Bias through cuDNN's broadcast add / bias reduction.
constexpr int kGemm = 100;  // the GEMM path among cuDNN's algorithm numbers (gpu.cudnn_find's choices)

bool gemm_applies(const ConvProblem& p) {
  return p.r == 1 && p.s == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0 && p.groups == 1;
}
int64_t gemm_workspace_floats(const ConvProblem& p, ConvDir dir) {
  return p.layout == Layout::nchw && dir == ConvDir::bwd_filter ? p.n * p.k * p.c : 0;
}

void gemm_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t hw = p.h * p.w;
  if (p.layout == Layout::nhwc)
    gpu::sgemm(false, false, p.n * hw, p.k, p.c, 1.0f, x, p.c, w, p.k, 0.0f, y, p.k);
  else
    gpu::sgemm_strided_batched(false, false, p.k, hw, p.c, 1.0f, w, p.c, 0, x, hw, p.c * hw, 0.0f, y, hw, p.k * hw, p.n);
  if (bias) {
    const Descriptors& d = descriptors(p);
    const float one = 1.0f;
    DTNN_CUDNN_CHECK(cudnnAddTensor(gpu::cudnn(), &one, d.bias, bias, &one, d.y, y));
  }
}

void gemm_backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx) {
  const int64_t hw = p.h * p.w;
  if (p.layout == Layout::nhwc)
    gpu::sgemm(false, true, p.n * hw, p.c, p.k, 1.0f, dy, p.k, w, p.k, 0.0f, dx, p.c);
  else
    gpu::sgemm_strided_batched(true, false, p.c, hw, p.k, 1.0f, w, p.c, 0, dy, hw, p.k * hw, 0.0f, dx, hw, p.c * hw,
                               p.n);
}

void gemm_backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db, float* ws) {
  const int64_t hw = p.h * p.w;
  if (p.layout == Layout::nhwc) {
    gpu::sgemm(true, false, p.c, p.k, p.n * hw, 1.0f, x, p.c, dy, p.k, 0.0f, dw, p.k);
  } else {
    gpu::sgemm_strided_batched(false, true, p.k, p.c, hw, 1.0f, dy, hw, p.k * hw, x, hw, p.c * hw, 0.0f, ws, p.c,
                               p.k * p.c, p.n);
    gpu::sum_rows(ws, dw, p.n, p.k * p.c);
  }
  if (db) {
    const Descriptors& d = descriptors(p);
    const float one = 1.0f, zero = 0.0f;
    DTNN_CUDNN_CHECK(cudnnConvolutionBackwardBias(gpu::cudnn(), &one, d.y, dy, &zero, d.bias, db));
  }
}

// Against cpu.reference in the current math mode: float32 summation orders, 1e-4; FFT and Winograd
// transforms round more, 2e-3; TF32 rounds every operand to 10 mantissa bits (2^-11 ~ 5e-4 each), 1e-2.
double gpu_tolerance(bool transform) { return gpu::allow_tf32() ? 1e-2 : transform ? 2e-3 : 1e-4; }

class CublasOneByOne final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gpu.cublas_1x1"; }
  Device device() const override { return Device::gpu; }
  double tolerance() const override { return gpu_tolerance(false); }
  Support supports(const ConvProblem& p) const override {
    if (!gemm_applies(p)) return Support::no("gpu.cublas_1x1: needs a 1x1, stride-1, unpadded, ungrouped convolution");
    return gpu_device_count() == 0 ? Support::no("no CUDA device") : Support::yes();
  }
  int64_t workspace_floats(const ConvProblem& p) const override { return gemm_workspace_floats(p, ConvDir::bwd_filter); }
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float*) const override {
    gemm_forward(p, x, w, bias, y);
  }
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float*) const override {
    gemm_backward_data(p, dy, w, dx);
  }
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    gemm_backward_filter(p, x, dy, dw, db, ws);
  }
};

Support no_device() { return Support::no("no CUDA device (" + gpu_description() + ")"); }

// One named cuDNN algorithm: its enum in each direction, or kNone.
class CudnnAlgorithm final : public ConvAlgorithm {
 public:
  CudnnAlgorithm(std::string name, int fwd, int bwd_data, int bwd_filter)
      : name_(std::move(name)), algo_{fwd, bwd_data, bwd_filter} {}
  std::string_view name() const override { return name_; }
  Device device() const override { return Device::gpu; }
  double tolerance() const override {
    return gpu_tolerance(name_.find("fft") != std::string::npos || name_.find("winograd") != std::string::npos);
  }

  Support supports(const ConvProblem& p) const override {
    Support first;
    for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
      if (algo(dir) == kNone) continue;
      const Support s = supports_dir(p, dir);
      if (s.ok()) return s;
      if (first.ok()) first = s;
    }
    return first;
  }
  Support supports_dir(const ConvProblem& p, ConvDir dir) const override {
    if (algo(dir) == kNone) return Support::no_such_direction(name_ + " has no " + conv_dir_name(dir) + " algorithm");
    if (gpu_device_count() == 0) return no_device();
    const Query q = query(p, dir, algo(dir));
    return q.ok ? Support::yes() : Support::no(q.why);
  }
  // Called when a layer is built, for its largest batch: what it returns is all the workspace there is.
  int64_t workspace_floats(const ConvProblem& p) const override {
    size_t bytes = 0;
    for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
      if (algo(dir) == kNone) continue;
      const Query q = query(p, dir, algo(dir));
      if (!q.ok) continue;
      bytes = std::max(bytes, q.bytes);
      std::lock_guard<std::mutex> lock(g_mutex);
      Reserved& r = reserved()[std::make_tuple(key_without_batch(p), static_cast<int>(dir), algo(dir))];
      if (p.n >= r.n) r = Reserved{p.n, q.bytes};
    }
    return weight_copy_floats(p) + static_cast<int64_t>((bytes + 3) / 4);
  }
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    DTNN_CHECK(algo(ConvDir::fwd) != kNone, name_, " has no fwd algorithm");
    run_forward(p, runnable(p, ConvDir::fwd), x, w, bias, y, ws);
  }
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    DTNN_CHECK(algo(ConvDir::bwd_data) != kNone, name_, " has no bwd_data algorithm");
    run_backward_data(p, runnable(p, ConvDir::bwd_data), dy, w, dx, ws);
  }
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    DTNN_CHECK(algo(ConvDir::bwd_filter) != kNone, name_, " has no bwd_filter algorithm");
    run_backward_filter(p, runnable(p, ConvDir::bwd_filter), x, dy, dw, db, ws);
  }
  int algo(ConvDir dir) const { return algo_[static_cast<int>(dir)]; }

 private:
  // The workspace a layer shape was built with (workspace_floats at its largest batch n).
  struct Reserved {
    int64_t n = 0;
    size_t bytes = 0;
  };
  static std::map<std::tuple<Key, int, int>, Reserved>& reserved() {
    static std::map<std::tuple<Key, int, int>, Reserved> m;
    return m;
  }
  // The algorithm for a batch: this one, unless a smaller batch than the built one asks cuDNN for more
  // workspace than was reserved (or is declined): then algorithm 0 of the direction, which needs none (as
  // gpu.cudnn_find does for batch sizes it never searched).
  int runnable(const ConvProblem& p, ConvDir dir) const {
    const Query q = query(p, dir, algo(dir));
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = reserved().find(std::make_tuple(key_without_batch(p), static_cast<int>(dir), algo(dir)));
    if (it != reserved().end() && p.n < it->second.n && (!q.ok || q.bytes > it->second.bytes)) return 0;
    return algo(dir);
  }

  std::string name_;
  int algo_[3];
};

const std::vector<CudnnAlgorithm>& named() {
  static const std::vector<CudnnAlgorithm> all = {
      {"gpu.cudnn.implicit_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, kNone, kNone},
      {"gpu.cudnn.implicit_precomp_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, kNone, kNone},
      {"gpu.cudnn.gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM, kNone, kNone},
      {"gpu.cudnn.direct", CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, kNone, kNone},
      {"gpu.cudnn.fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT},
      {"gpu.cudnn.fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING},
      {"gpu.cudnn.winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD},
      {"gpu.cudnn.winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
       CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED},
      {"gpu.cudnn.bwd_data_algo_0", kNone, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, kNone},
      {"gpu.cudnn.bwd_data_algo_1", kNone, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, kNone},
      {"gpu.cudnn.bwd_filter_algo_0", kNone, kNone, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0},
      {"gpu.cudnn.bwd_filter_algo_1", kNone, kNone, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1},
      {"gpu.cudnn.bwd_filter_algo_3", kNone, kNone, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3},
      // PyDTNN's choice without --enable_cudnn_auto_conv_alg (its fixed algorithms, all directions).
      {"gpu.cudnn.pydtnn_fixed", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1},
  };
  return all;
}

std::string name_of(ConvDir dir, int algo) {
  if (algo == kGemm) return "gpu.cublas_1x1";
  for (const CudnnAlgorithm& a : named())
    if (a.algo(dir) == algo) return std::string(a.name());
  return "gpu.cudnn.?";
}

// ---- gpu.cudnn_find ------------------------------------------------------------------------------------
struct Found {
  int algo[3] = {kNone, kNone, kNone};
  size_t bytes[3] = {0, 0, 0};
};

// Runs cudnnFind*AlgorithmEx for every direction on random operands of the problem (device temporaries
// allocated and freed here: this happens when a layer is built, never in a batch loop).
Found search(const ConvProblem& p) {
  const Descriptors& d = descriptors(p);
  const int64_t nx = p.x_numel(), nw = p.w_numel(), ny = p.y_numel();
  float* x = static_cast<float*>(gpu::device_alloc(nx * 4));
  float* w = static_cast<float*>(gpu::device_alloc(nw * 4));
  float* y = static_cast<float*>(gpu::device_alloc(ny * 4));
  size_t limit = kFindWorkspaceLimit;
  size_t free_b = 0, total_b = 0;
  DTNN_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  limit = std::min(limit, free_b / 2);
  void* ws = gpu::device_alloc(std::max<size_t>(limit, 256));
  gpu::fill_uniform(x, nx, -1.0f, 1.0f, 1);
  gpu::fill_uniform(w, nw, -1.0f, 1.0f, 2);
  gpu::fill_uniform(y, ny, -1.0f, 1.0f, 3);
  Found f;
  int returned = 0;
  float fwd_ms = 1e30f, bwd_data_ms = 1e30f, bwd_filter_ms = 1e30f;
  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    DTNN_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(gpu::cudnn(), d.x, x, d.w, w, d.conv, d.y, y,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws, limit));
    for (int i = 0; i < returned && f.algo[0] == kNone; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        f.algo[0] = perf[i].algo;
        fwd_ms = perf[i].time;
      }
  }
  {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    DTNN_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(gpu::cudnn(), d.w, w, d.y, y, d.conv, d.x, x,
                                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf,
                                                                 ws, limit));
    for (int i = 0; i < returned && f.algo[1] == kNone; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        f.algo[1] = perf[i].algo;
        bwd_data_ms = perf[i].time;
      }
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    DTNN_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(gpu::cudnn(), d.x, x, d.y, y, d.conv, d.w, w,
                                                                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                                   perf, ws, limit));
    for (int i = 0; i < returned && f.algo[2] == kNone; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        f.algo[2] = perf[i].algo;
        bwd_filter_ms = perf[i].time;
      }
  }
  // dtnn's GEMM path competes for 1x1 problems: the median of 3 event-timed calls after a warm-up, against
  // the time cudnnFind measured for its best algorithm.
  if (gemm_applies(p)) {
    const float best_ms[3] = {fwd_ms, bwd_data_ms, bwd_filter_ms};
    gpu::Timer timer;
    for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
      const int i = static_cast<int>(dir);
      if (static_cast<size_t>(gemm_workspace_floats(p, dir)) * 4 > limit) continue;
      const auto call = [&] {
        if (dir == ConvDir::fwd) gemm_forward(p, x, w, nullptr, y);
        else if (dir == ConvDir::bwd_data) gemm_backward_data(p, y, w, x);
        else gemm_backward_filter(p, x, y, w, nullptr, static_cast<float*>(ws));
      };
      call();
      std::vector<double> t;
      for (int r = 0; r < 3; ++r) {
        timer.start();
        call();
        timer.stop();
        t.push_back(timer.elapsed_ms());
      }
      if (f.algo[i] == kNone || median(t) < best_ms[i]) f.algo[i] = kGemm;
    }
  }
  gpu::synchronize();
  gpu::device_free(x);
  gpu::device_free(w);
  gpu::device_free(y);
  gpu::device_free(ws);
  // Fallbacks that need no workspace, should cuDNN report nothing usable.
  for (int i = 0; i < 3; ++i)
    if (f.algo[i] == kNone) f.algo[i] = 0;
  for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
    const int i = static_cast<int>(dir);
    if (f.algo[i] == kGemm) {
      f.bytes[i] = static_cast<size_t>(gemm_workspace_floats(p, dir)) * 4;
      continue;
    }
    const Query q = query(p, dir, f.algo[i]);
    DTNN_CHECK(q.ok, p.str(), ": cudnn_find's choice for ", conv_dir_name(dir), " is declined: ", q.why);
    f.bytes[i] = q.bytes;
  }
  return f;
}

// Choices per problem; a batch size that was never searched reuses the choice for the same layer shape
// (the layer searched its largest batch when it was built), or algorithm 0 (no workspace) when that
// choice would need more workspace than it did.
const Found& found(const ConvProblem& p) {
  static std::map<Key, Found> exact;
  static std::map<Key, Key> by_shape;
  std::optional<Found> base;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = exact.find(key_of(p));
    if (it != exact.end()) return it->second;
    auto s = by_shape.find(key_without_batch(p));
    if (s != by_shape.end()) base = exact.at(s->second);
  }
  Found f;
  if (base) {
    f = *base;
    for (int i = 0; i < 3; ++i) {
      if (f.algo[i] == kGemm) {  // smaller batches need less workspace
        f.bytes[i] = static_cast<size_t>(gemm_workspace_floats(p, static_cast<ConvDir>(i))) * 4;
        continue;
      }
      const Query q = query(p, static_cast<ConvDir>(i), f.algo[i]);
      if (!q.ok || q.bytes > f.bytes[i]) f.algo[i] = 0;
      f.bytes[i] = query(p, static_cast<ConvDir>(i), f.algo[i]).bytes;
    }
  } else {
    f = search(p);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!base) by_shape.emplace(key_without_batch(p), key_of(p));
  return exact.emplace(key_of(p), f).first->second;
}

class CudnnFind final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "gpu.cudnn_find"; }
  std::string chosen_for(const ConvProblem& p, ConvDir dir) const override {
    return name_of(dir, found(p).algo[static_cast<int>(dir)]);
  }
  Device device() const override { return Device::gpu; }
  double tolerance() const override { return gpu_tolerance(true); }  // it may pick an FFT or Winograd algorithm
  Support supports(const ConvProblem&) const override {
    return gpu_device_count() == 0 ? no_device() : Support::yes();
  }
  int64_t workspace_floats(const ConvProblem& p) const override {
    const Found& f = found(p);
    return weight_copy_floats(p) + static_cast<int64_t>((std::max(f.bytes[0], std::max(f.bytes[1], f.bytes[2])) + 3) / 4);
  }
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    const int a = found(p).algo[0];
    if (a == kGemm) return gemm_forward(p, x, w, bias, y);
    run_forward(p, a, x, w, bias, y, ws);
  }
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    const int a = found(p).algo[1];
    if (a == kGemm) return gemm_backward_data(p, dy, w, dx);
    run_backward_data(p, a, dy, w, dx, ws);
  }
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    const int a = found(p).algo[2];
    if (a == kGemm) return gemm_backward_filter(p, x, dy, dw, db, ws);
    run_backward_filter(p, a, x, dy, dw, db, ws);
  }
};

}  // namespace

const ConvAlgorithm& conv_cudnn_find() {
  static const CudnnFind algo;
  return algo;
}

const std::vector<const ConvAlgorithm*>& cudnn_algorithms() {
  static const std::vector<const ConvAlgorithm*> all = [] {
    std::vector<const ConvAlgorithm*> v;
    for (const CudnnAlgorithm& a : named()) v.push_back(&a);
    static const CublasOneByOne gemm;
    v.push_back(&gemm);
    v.push_back(&conv_cudnn_find());
    return v;
  }();
  return all;
}

}  // namespace dtnn
