// The GPU backend's process-wide context: device, stream, cuBLAS and cuDNN handles, math mode; memory,
// the model arena, events and the row-major SGEMM.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <cuda_profiler_api.h>

#include "backend/gpu.h"
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

struct Context {
  int index = -1;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  bool tf32 = false;
  int sms = 0;
  std::string name;
};

Context& ctx() {
  static Context c;
  return c;
}

// What dtnn holds on the device through device_alloc: the live bytes and their peak (the run report's device
// memory). Allocations happen when the model is built, never in the batch loop, so the lock costs nothing.
struct DeviceBytes {
  std::mutex mutex;
  std::unordered_map<void*, size_t> sizes;
  size_t live = 0, peak = 0;
};

DeviceBytes& device_bytes() {
  static DeviceBytes b;
  return b;
}

Context& ready() {
  if (ctx().index < 0) init(0);
  return ctx();
}

void apply_math_mode() {
  DTNN_CUBLAS_CHECK(cublasSetMathMode(ctx().cublas, ctx().tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

}  // namespace

void init(int index) {
  Context& c = ctx();
  if (c.index == index) return;
  DTNN_CHECK(c.index < 0, "GPU backend: already initialised on device ", c.index, ", asked for ", index);
  const int count = gpu_device_count();
  if (count == 0) unsupported("no CUDA device is available (", gpu_description(), ")");
  DTNN_CHECK(index >= 0 && index < count, "GPU device ", index, " does not exist (", count, " devices)");
  DTNN_CUDA_CHECK(cudaSetDevice(index));
  DTNN_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  DTNN_CUBLAS_CHECK(cublasCreate(&c.cublas));
  DTNN_CUBLAS_CHECK(cublasSetStream(c.cublas, c.stream));
  DTNN_CUDNN_CHECK(cudnnCreate(&c.cudnn));
  DTNN_CUDNN_CHECK(cudnnSetStream(c.cudnn, c.stream));
  cudaDeviceProp prop{};
  DTNN_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  c.sms = prop.multiProcessorCount;
  c.name = prop.name;
  c.index = index;
  apply_math_mode();
}

bool initialised() { return ctx().index >= 0; }
std::string device_name() { return ready().name; }
int multiprocessors() { return ready().sms; }
cudaStream_t stream() { return ready().stream; }
cublasHandle_t cublas() { return ready().cublas; }
cudnnHandle_t cudnn() { return ready().cudnn; }
void* stream_handle() { return ready().stream; }

void set_allow_tf32(bool allow) {
  ready().tf32 = allow;
  apply_math_mode();
}
bool allow_tf32() { return ctx().tf32; }

void synchronize() { DTNN_CUDA_CHECK(cudaStreamSynchronize(stream())); }
void profiler_start() {
  synchronize();
  DTNN_CUDA_CHECK(cudaProfilerStart());
}
void profiler_stop() {
  synchronize();
  DTNN_CUDA_CHECK(cudaProfilerStop());
}

void* device_alloc(size_t bytes) {
  ready();
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail("GPU out of memory: ", bytes >> 20, " MiB requested, ", free_b >> 20, " MiB free of ", total_b >> 20,
         " MiB (a smaller --batch_size may fit)");
  }
  DTNN_CUDA_CHECK(cudaMemset(p, 0, bytes));
  DTNN_CUDA_CHECK(cudaDeviceSynchronize());  // the zeros land before any work on dtnn's non-blocking stream
  DeviceBytes& b = device_bytes();
  const std::lock_guard<std::mutex> lock(b.mutex);
  b.sizes[p] = bytes;
  b.live += bytes;
  b.peak = std::max(b.peak, b.live);
  return p;
}

void device_free(void* p) {
  if (!p) return;
  cudaFree(p);  // never throws: called from destructors
  DeviceBytes& b = device_bytes();
  const std::lock_guard<std::mutex> lock(b.mutex);
  const auto it = b.sizes.find(p);
  if (it == b.sizes.end()) return;
  b.live -= it->second;
  b.sizes.erase(it);
}

int64_t device_peak_bytes() {
  if (!initialised()) return -1;
  DeviceBytes& b = device_bytes();
  const std::lock_guard<std::mutex> lock(b.mutex);
  return static_cast<int64_t>(b.peak);
}

int64_t device_used_bytes() {
  if (!initialised()) return -1;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return -1;
  return static_cast<int64_t>(total_b - free_b);
}

void* pinned_alloc(size_t bytes) {
  ready();
  void* p = nullptr;
  DTNN_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void pinned_free(void* p) {
  if (p) cudaFreeHost(p);
}

void host_register(void* p, size_t bytes) {
  ready();
  DTNN_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
}

void host_unregister(void* p) {
  if (p) cudaHostUnregister(p);
}

void memset_zero(void* p, size_t bytes) { DTNN_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream())); }

void copy_device(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) DTNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()));
}

void copy_to_device(void* dst, const void* host, size_t bytes) {
  if (bytes) DTNN_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream()));
}

void copy_to_device_sync(void* dst, const void* host, size_t bytes) {
  copy_to_device(dst, host, bytes);
  synchronize();
}

void copy_to_host(void* host, const void* src, size_t bytes) {
  if (bytes) DTNN_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream()));
  synchronize();
}

void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width_bytes, size_t rows) {
  if (rows && width_bytes)
    DTNN_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width_bytes, rows, cudaMemcpyDeviceToDevice,
                                      stream()));
}

// ---- arena ---------------------------------------------------------------------------------------------
Arena::~Arena() {
  for (Chunk& c : chunks_) device_free(c.base);
}

float* Arena::allocate_floats(int64_t count) {
  constexpr size_t kAlign = 256, kChunk = size_t{256} << 20;
  const size_t bytes = (std::max<size_t>(static_cast<size_t>(count), 1) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
  for (Chunk& c : chunks_)
    if (c.size - c.used >= bytes) {
      char* p = c.base + c.used;
      c.used += bytes;
      return reinterpret_cast<float*>(p);
    }
  const size_t size = std::max(kChunk, bytes);
  chunks_.push_back({static_cast<char*>(device_alloc(size)), size, bytes});
  reserved_ += size;
  return reinterpret_cast<float*>(chunks_.back().base);
}

// ---- events --------------------------------------------------------------------------------------------
Timer::Timer() {
  ready();
  DTNN_CUDA_CHECK(cudaEventCreate(reinterpret_cast<cudaEvent_t*>(&start_)));
  DTNN_CUDA_CHECK(cudaEventCreate(reinterpret_cast<cudaEvent_t*>(&stop_)));
}
Timer::~Timer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void Timer::start() { DTNN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), stream())); }
void Timer::stop() { DTNN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), stream())); }
double Timer::elapsed_ms() {
  DTNN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0.0f;
  DTNN_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return ms;
}

EventPool::EventPool(int count) {
  ready();
  events_.assign(static_cast<size_t>(count), nullptr);
  for (void*& e : events_) DTNN_CUDA_CHECK(cudaEventCreate(reinterpret_cast<cudaEvent_t*>(&e)));
}
EventPool::~EventPool() {
  for (void* e : events_)
    if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}
void EventPool::record(int i) { DTNN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[i]), stream())); }
void EventPool::wait(int i) { DTNN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[i]))); }
double EventPool::seconds(int from, int to) const {
  float ms = 0.0f;
  DTNN_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_[from]), static_cast<cudaEvent_t>(events_[to])));
  return 1e-3 * ms;
}

Event::Event() {
  ready();
  DTNN_CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&event_), cudaEventDisableTiming));
}
Event::~Event() { cudaEventDestroy(static_cast<cudaEvent_t>(event_)); }
void Event::record() { DTNN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream())); }
void Event::wait() { DTNN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_))); }

// ---- input stager --------------------------------------------------------------------------------------
InputStager::InputStager(size_t max_x_bytes, size_t max_y_bytes) {
  ready();
  y_offset_ = (max_x_bytes + 255) / 256 * 256;
  y_capacity_ = max_y_bytes;
  for (int k = 0; k < 2; ++k) {
    staging_[k] = static_cast<char*>(device_alloc(y_offset_ + std::max<size_t>(max_y_bytes, 1)));
    DTNN_CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&copied_[k]), cudaEventDisableTiming));
    DTNN_CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&consumed_[k]), cudaEventDisableTiming));
  }
  DTNN_CUDA_CHECK(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(&copy_stream_), cudaStreamNonBlocking));
}

InputStager::~InputStager() {  // never throws: the copy stream is drained first
  if (copy_stream_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(copy_stream_));
    cudaStreamDestroy(static_cast<cudaStream_t>(copy_stream_));
  }
  for (int k = 0; k < 2; ++k) {
    if (copied_[k]) cudaEventDestroy(static_cast<cudaEvent_t>(copied_[k]));
    if (consumed_[k]) {
      cudaEventSynchronize(static_cast<cudaEvent_t>(consumed_[k]));
      cudaEventDestroy(static_cast<cudaEvent_t>(consumed_[k]));
    }
    device_free(staging_[k]);
  }
}

void InputStager::upload(const void* x_host, size_t x_bytes, void* x_dev, const void* y_host, size_t y_bytes,
                         void* y_dev) {
  DTNN_ASSERT(x_bytes <= y_offset_ && y_bytes <= y_capacity_);
  const int k = next_;
  next_ = 1 - next_;
  const auto copy = static_cast<cudaStream_t>(copy_stream_);
  const auto copied = static_cast<cudaEvent_t>(copied_[k]), consumed = static_cast<cudaEvent_t>(consumed_[k]);
  if (used_[k]) DTNN_CUDA_CHECK(cudaStreamWaitEvent(copy, consumed, 0));  // staging_[k] moved out two steps ago
  char* stage = staging_[k];
  if (x_bytes) DTNN_CUDA_CHECK(cudaMemcpyAsync(stage, x_host, x_bytes, cudaMemcpyHostToDevice, copy));
  if (y_bytes) DTNN_CUDA_CHECK(cudaMemcpyAsync(stage + y_offset_, y_host, y_bytes, cudaMemcpyHostToDevice, copy));
  DTNN_CUDA_CHECK(cudaEventRecord(copied, copy));
  DTNN_CUDA_CHECK(cudaStreamWaitEvent(stream(), copied, 0));
  copy_device(x_dev, stage, x_bytes);
  copy_device(y_dev, stage + y_offset_, y_bytes);
  DTNN_CUDA_CHECK(cudaEventRecord(consumed, stream()));
  used_[k] = true;
  last_ = k;
}

void InputStager::wait_host_read() {
  if (last_ >= 0) DTNN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(copied_[last_])));
}

// ---- GEMM ----------------------------------------------------------------------------------------------
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  DTNN_CUBLAS_CHECK(cublasSgemm(cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
}

void sgemm_strided_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                           int64_t lda, int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float beta,
                           float* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  DTNN_CUBLAS_CHECK(cublasSgemmStridedBatched(
      cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), &alpha, b, static_cast<int>(ldb), stride_b, a, static_cast<int>(lda),
      stride_a, &beta, c, static_cast<int>(ldc), stride_c, static_cast<int>(batch)));
}

}  // namespace dtnn::gpu
