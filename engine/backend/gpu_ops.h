// The GPU operations the engine calls: memory, copies, elementwise kernels, GEMM, pooling, batch
// normalization, losses and metrics, optimizer updates, timing events.
//
// Built from backend/gpu/*.cu when CMake found CUDA, cuDNN, cuBLAS and NCCL; in other builds
// backend/stub/gpu_stub.cpp defines every function to throw dtnn::Unsupported ("built without CUDA"),
// so shared code calls these without #ifdefs and a CPU-only run never reaches them.
//
// Execution model: one device per process (init() picks it) and ONE compute stream; every kernel, cuBLAS
// and cuDNN call of dtnn is queued on that stream in program order, so no call here synchronises unless its
// comment says so. Copies of the input pipeline (InputStager) and gradient buckets (SideStream) run on
// their own streams, ordered against the compute stream by events. Pointers named x, y, w, ... are device pointers; `host` pointers are host memory.
// Layouts are dtnn's (core/layout.h): NHWC (N, H, W, C), NCHW (N, C, H, W), flat rows (N, F).
// Every CUDA, cuBLAS and cuDNN status is checked (backend/gpu/gpu_check.h); a failure throws dtnn::Error
// naming the call, the file and the line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/batchnorm.h"
#include "backend/pool.h"
#include "core/layout.h"

namespace dtnn::gpu {

// ---- device, stream, math mode ------------------------------------------------------------------------
// Selects device `index` (data-parallel ranks pass rank % gpu_device_count()) and creates the stream and
// the cuBLAS and cuDNN handles. Idempotent for the same index; throws dtnn::Unsupported without a device.
void init(int index = 0);
bool initialised();
std::string device_name();           // "NVIDIA H100 80GB HBM3"
// TF32 tensor-core math for float32 convolutions and GEMMs (off by default: results comparable with the
// CPU within float32 rounding). Affects cuBLAS immediately and cuDNN convolutions created afterwards.
void set_allow_tf32(bool allow);
bool allow_tf32();
void synchronize();                  // waits until the stream is idle
// The CUDA profiler's capture window (cudaProfilerStart/Stop), for `ncu --profile-from-start off`: the
// trainer opens it around one training step when DTNN_CUDA_PROFILE_STEP=k is set (k counts from 0 over
// the run's training steps). profiler_stop() synchronises first.
void profiler_start();
void profiler_stop();
void* stream_handle();               // the cudaStream_t, for backend code (NCCL)

// ---- memory --------------------------------------------------------------------------------------------
void* device_alloc(size_t bytes);    // cudaMalloc, zero-filled; never called in a batch loop
void device_free(void* p);
// The most bytes dtnn held through device_alloc at once; -1 when no GPU was used. device_used_bytes: the device's
// memory in use now (cudaMemGetInfo: total - free; the CUDA context, cuBLAS, cuDNN and NCCL included, and any
// other process on the device), -1 when no GPU was used.
int64_t device_peak_bytes();
int64_t device_used_bytes();
void* pinned_alloc(size_t bytes);    // page-locked host memory (cudaMallocHost)
void pinned_free(void* p);
// Page-locks existing host memory (cudaHostRegister) so async copies from it overlap compute.
void host_register(void* p, size_t bytes);
void host_unregister(void* p);  // never throws
void memset_zero(void* p, size_t bytes);                        // async
void copy_device(void* dst, const void* src, size_t bytes);     // device to device, async
// Host to device, async: `host` must stay unchanged until the stream reaches the copy (pinned memory
// for real overlap; pageable memory is staged by the driver).
void copy_to_device(void* dst, const void* host, size_t bytes);
void copy_to_device_sync(void* dst, const void* host, size_t bytes);  // returns when the copy is done
void copy_to_host(void* host, const void* src, size_t bytes);         // waits for the stream, then copies
// rows x width_bytes from src (row pitch src_pitch bytes) to dst (pitch dst_pitch), device to device.
void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width_bytes, size_t rows);

// Device memory of one model: carved out of few large cudaMalloc chunks (>= 256 MiB each), 256-byte
// aligned and zero-filled, released together when the arena is destroyed. Models allocate every
// parameter, gradient, activation and workspace from their arena while they are built; nothing after.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena();
  float* allocate_floats(int64_t count);
  size_t bytes_reserved() const { return reserved_; }  // cudaMalloc'ed

 private:
  struct Chunk {
    char* base;
    size_t size, used;
  };
  std::vector<Chunk> chunks_;
  size_t reserved_ = 0;
};

// A CUDA event pair on the stream, for timing device work (time between record_start and record_stop).
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  void stop();
  double elapsed_ms();  // waits for the stop event
 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// An event that marks a point of the stream (e.g. "this input copy has been read").
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record();
  void wait();  // host waits until the stream passed the recorded point
 private:
  void* event_ = nullptr;
};

// A fixed pool of timing events on the compute stream (GPU timelines, trace/gpu_trace.h): record(i) marks the
// stream's current point; once mark j has been passed, seconds(i, j) is the device time between marks i and j
// (cudaEventElapsedTime: about 0.5 us resolution). All events are created here, none in the batch loop.
class EventPool {
 public:
  explicit EventPool(int count);
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  int size() const { return static_cast<int>(events_.size()); }
  void record(int i);
  void wait(int i);  // host waits until the stream passed mark i
  double seconds(int from, int to) const;
 private:
  std::vector<void*> events_;
};

// A second stream for work that overlaps the compute stream (the gradient buckets of data parallelism,
// parallel/gpu_gradient_reducer.h), ordered against it by events; created at the device's highest priority,
// so a bucket's reduction is not held back behind queued compute kernels (as DDP's NCCL stream). `slots` numbered timing events each way,
// all created here (none in the batch loop); recording a slot again replaces its previous point (a wait
// already queued on it keeps the old point, as CUDA defines).
class SideStream {
 public:
  explicit SideStream(int slots);
  ~SideStream();  // drains this stream first; never throws
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  void* handle();  // the cudaStream_t (NCCL)
  // Records compute-stream slot i at the compute stream's current point; this stream waits for it.
  void wait_compute(int i);
  void mark(int i);       // records side slot i at this stream's current point
  bool passed(int i);     // whether this stream has passed side slot i (cudaEventQuery; never waits)
  void host_wait(int i);  // the host waits until this stream passed side slot i
  void compute_waits(int i);  // the compute stream waits for side slot i
  void copy_to_host(void* host, const void* src, size_t bytes);   // async on this stream (pinned host memory)
  void copy_to_device(void* dst, const void* host, size_t bytes);  // async on this stream
  // Device seconds from side slot `from` to side slot `to`; both points passed.
  double seconds(int from, int to) const;

 private:
  void release() noexcept;  // drains the stream, destroys it and the events made so far
  void* stream_ = nullptr;
  std::vector<void*> compute_, side_;
};

// The input pipeline's host-to-device copies, overlapped with compute: upload() queues the copy of a
// step's batch (from page-locked host memory) on a second stream, into one of two device staging
// buffers, so it runs while the compute stream still works on the previous step (the host is a step
// ahead); the compute stream then waits for that copy and moves the batch into the model's input
// (device to device, ~1 % of the host copy's time). A staging buffer is refilled only after the compute
// stream has moved its previous contents out. Sized once, when the trainer is built.
class InputStager {
 public:
  InputStager(size_t max_x_bytes, size_t max_y_bytes);
  ~InputStager();
  InputStager(const InputStager&) = delete;
  InputStager& operator=(const InputStager&) = delete;
  // x_host (x_bytes) -> x_dev and y_host (y_bytes) -> y_dev, as seen by work queued afterwards.
  void upload(const void* x_host, size_t x_bytes, void* x_dev, const void* y_host, size_t y_bytes, void* y_dev);
  void wait_host_read();  // the host waits until the last upload has read its host buffers

 private:
  size_t y_offset_ = 0, y_capacity_ = 0;
  char* staging_[2] = {nullptr, nullptr};
  void* copy_stream_ = nullptr;
  void* copied_[2] = {nullptr, nullptr};    // on the copy stream, after the host copy into staging_[k]
  void* consumed_[2] = {nullptr, nullptr};  // on the compute stream, after staging_[k] moved into place
  bool used_[2] = {false, false};
  int next_ = 0, last_ = -1;
};

// ---- elementwise (n elements, async) -------------------------------------------------------------------
void fill(float* x, float value, int64_t n);
void add_into(float* dst, const float* src, int64_t n);                  // dst += src
void add_relu_into(float* dst, const float* src, int64_t n);             // dst = relu(dst + src)
void relu_forward(const float* x, float* y, int64_t n);
void relu_backward(const float* y, const float* dy, float* dx, int64_t n);  // dx = y > 0 ? dy : 0
void sigmoid_forward(const float* x, float* y, int64_t n);
void sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n);
void tanh_forward(const float* x, float* y, int64_t n);
void tanh_backward(const float* y, const float* dy, float* dx, int64_t n);
void softmax_forward(const float* x, float* y, int64_t rows, int64_t k);
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int64_t k);
// Inverted dropout: mask[i] = 1/keep with probability keep, else 0 (counter-based random numbers from
// (seed, offset + i), so a step's mask depends only on the seed and the element); y = x * mask.
void dropout_forward(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed, uint64_t offset);
void multiply(const float* a, const float* b, float* y, int64_t n);    // y = a * b
void fill_uniform(float* x, int64_t n, float lo, float hi, uint64_t seed);  // benchmark and test operands
// y[row, j] = bias[j] over rows x k (FC bias broadcast); db[j] = sum over rows of dy[row, j].
void broadcast_rows(float* y, const float* bias, int64_t rows, int64_t k);
void sum_rows(const float* dy, float* db, int64_t rows, int64_t k);
// Layout transpose of a 4-D tensor's last three dimensions by a permutation: out[n][perm order] (used to
// feed cuDNN its filter layout when dtnn's NHWC weights are (C, R, S, K)).
//   (C, R, S, K) -> (K, R, S, C) when to_krsc, and back when !to_krsc.
void crsk_krsc(const float* src, float* dst, int64_t c, int64_t rs, int64_t k, bool to_krsc);

// ---- GEMM (cuBLAS, row-major like cpu::sgemm) ----------------------------------------------------------
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Row-major strided-batched GEMM: for b < batch, C_b = alpha op(A_b) op(B_b) + beta C_b with
// X_b = X + b * stride_x (a stride of 0 shares one matrix across the batch).
void sgemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                           int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta,
                           float* c, int64_t ldc, int64_t stride_c, int64_t batch);

// ---- pooling (backend/pool.h: geometry and semantics) ---------------------------------------------------
// Max pooling records each output's winning input position (its index within the sample's H*W plane, or
// -1) in `argmax` (n * c * p * q ints) for the backward pass; average pooling takes argmax = null.
void pool_forward(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax);
// dx overwritten: each input element gathers dy of the windows that chose it (max) or contain it (average),
// in a fixed order, so the result is deterministic.
void pool_backward(const PoolGeometry& g, int64_t n, const float* dy, const int32_t* argmax, float* dx);

// ---- batch normalization (backend/batchnorm.h: shape, semantics, the BatchNormOp interface) -----------
// cuDNN's batch normalization, or dtnn's own kernels (backend/gpu/batchnorm.cu) when the statistics are
// synchronised (`reduce` sums device floats over ranks; two passes, as on the CPU) or when own_kernels
// asks for them. `reduce` null: statistics of this rank's batch.
std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape& shape, BatchNormReduce reduce, void* reduce_ctx,
                                            bool own_kernels = false);

// ---- losses and metrics --------------------------------------------------------------------------------
// Codes follow train/losses.h (LossKind, MetricKind); the trainer checks that they agree.
enum class LossCode { categorical_cross_entropy = 0, binary_cross_entropy = 1 };
// One training step's loss and metric sums over the n rows (k classes, one-hot or soft targets y):
//   logits != null (softmax + cce fused): loss from the logits, grad = (softmax(z)*sum(y) - y) * inv_global
//   logits == null: loss from the output p (clipped to [1e-7, 1-1e-7]), grad = dL/dp * inv_global
// grad may be null (evaluation). out[0] = loss sum, out[1 + m] = metric m's sum (metrics[m] codes),
// written (accumulate = false) or added (accumulate = true). num_metrics <= 8. `scratch`: device memory of
// n * kLossScratchPerRow floats (the caller sizes it for its largest batch).
inline constexpr int kLossScratchPerRow = 9;
void loss_and_metrics(LossCode loss, const float* logits, const float* p, const float* y, int64_t n, int64_t k,
                      float inv_global, float* grad, const int* metrics, int num_metrics, float* out,
                      bool accumulate, float* scratch);
// dst[i] += src[i] for i < n (small vectors: the per-epoch sums of the reduce tail).
void accumulate(float* dst, const float* src, int64_t n);
void set_value(float* dst, float value);  // one device float

// ---- optimizer updates over flat slabs (formulas of optim/optimizer.h; float arithmetic like the CPU) ---
void sgd_update(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float decay, bool nesterov);
void rmsprop_update(float* w, const float* g, float* c, int64_t n, float lr, float rho, float eps, float decay);
// c1 = 1/(1-beta1^t), c2 = 1/(1-beta2^t) computed by the caller in double.
void adam_update(float* w, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                 float c1, float c2, float eps, float decay, bool nadam);

}  // namespace dtnn::gpu
