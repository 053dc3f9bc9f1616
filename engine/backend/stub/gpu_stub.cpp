// The GPU backend of a build without CUDA: every request for a GPU fails with one clear line
// (dtnn::Unsupported, so `dtnn train --enable_gpu` exits 3 and the harness records 'unsupported').
#include "backend/gpu.h"
// Here every member function of gpu_ops.h's classes is defined without touching their fields, which clang
// then reports as unused (ten -Wunused-private-field warnings in each clang build); the CUDA sources use them.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-private-field"
#endif
#include "backend/gpu_ops.h"
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#include "core/error.h"

namespace dtnn {

bool gpu_built() { return false; }
int gpu_device_count() { return 0; }
std::string gpu_description() { return "not built (no CUDA toolkit with cuDNN and NCCL found, or DTNN_CUDA=OFF)"; }
void require_gpu() { unsupported("--enable_gpu: this dtnn was built without CUDA (configure with -DDTNN_CUDA=ON)"); }
std::string load_cublas() { unsupported("this dtnn was built without CUDA: no cuBLAS to load"); }

namespace gpu {
namespace {
[[noreturn]] void absent() { unsupported("this dtnn was built without CUDA: no GPU operations"); }
}  // namespace

void init(int) { absent(); }
bool initialised() { return false; }
std::string device_name() { absent(); }
void set_allow_tf32(bool) { absent(); }
bool allow_tf32() { return false; }
void synchronize() { absent(); }
void profiler_start() { absent(); }
void profiler_stop() { absent(); }
void* stream_handle() { absent(); }
void* device_alloc(size_t) { absent(); }
void device_free(void*) {}
int64_t device_peak_bytes() { return -1; }
int64_t device_used_bytes() { return -1; }
void* pinned_alloc(size_t) { absent(); }
void pinned_free(void*) {}
void host_register(void*, size_t) { absent(); }
void host_unregister(void*) {}
void memset_zero(void*, size_t) { absent(); }
void copy_device(void*, const void*, size_t) { absent(); }
void copy_to_device(void*, const void*, size_t) { absent(); }
void copy_to_device_sync(void*, const void*, size_t) { absent(); }
void copy_to_host(void*, const void*, size_t) { absent(); }
void copy_2d(void*, size_t, const void*, size_t, size_t, size_t) { absent(); }
Arena::~Arena() = default;
float* Arena::allocate_floats(int64_t) { absent(); }
Timer::Timer() { absent(); }
Timer::~Timer() = default;
void Timer::start() { absent(); }
void Timer::stop() { absent(); }
double Timer::elapsed_ms() { absent(); }
EventPool::EventPool(int) { absent(); }
EventPool::~EventPool() = default;
void EventPool::record(int) { absent(); }
void EventPool::wait(int) { absent(); }
double EventPool::seconds(int, int) const { absent(); }
SideStream::SideStream(int) { absent(); }
SideStream::~SideStream() = default;
void* SideStream::handle() { absent(); }
void SideStream::wait_compute(int) { absent(); }
void SideStream::mark(int) { absent(); }
bool SideStream::passed(int) { absent(); }
void SideStream::host_wait(int) { absent(); }
void SideStream::compute_waits(int) { absent(); }
void SideStream::copy_to_host(void*, const void*, size_t) { absent(); }
void SideStream::copy_to_device(void*, const void*, size_t) { absent(); }
double SideStream::seconds(int, int) const { absent(); }
Event::Event() { absent(); }
Event::~Event() = default;
void Event::record() { absent(); }
void Event::wait() { absent(); }
InputStager::InputStager(size_t, size_t) { absent(); }
InputStager::~InputStager() = default;
void InputStager::upload(const void*, size_t, void*, const void*, size_t, void*) { absent(); }
void InputStager::wait_host_read() { absent(); }
void fill(float*, float, int64_t) { absent(); }
void add_into(float*, const float*, int64_t) { absent(); }
void add_relu_into(float*, const float*, int64_t) { absent(); }
void relu_forward(const float*, float*, int64_t) { absent(); }
void relu_backward(const float*, const float*, float*, int64_t) { absent(); }
void sigmoid_forward(const float*, float*, int64_t) { absent(); }
void sigmoid_backward(const float*, const float*, float*, int64_t) { absent(); }
void tanh_forward(const float*, float*, int64_t) { absent(); }
void tanh_backward(const float*, const float*, float*, int64_t) { absent(); }
void softmax_forward(const float*, float*, int64_t, int64_t) { absent(); }
void softmax_backward(const float*, const float*, float*, int64_t, int64_t) { absent(); }
void dropout_forward(const float*, float*, float*, int64_t, float, uint64_t, uint64_t) { absent(); }
void multiply(const float*, const float*, float*, int64_t) { absent(); }
void fill_uniform(float*, int64_t, float, float, uint64_t) { absent(); }
void broadcast_rows(float*, const float*, int64_t, int64_t) { absent(); }
void sum_rows(const float*, float*, int64_t, int64_t) { absent(); }
void crsk_krsc(const float*, float*, int64_t, int64_t, int64_t, bool) { absent(); }
void sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
           int64_t) {
  absent();
}
void sgemm_strided_batched(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, int64_t, const float*,
                           int64_t, int64_t, float, float*, int64_t, int64_t, int64_t) {
  absent();
}
void pool_forward(const PoolGeometry&, int64_t, const float*, float*, int32_t*) { absent(); }
void pool_backward(const PoolGeometry&, int64_t, const float*, const int32_t*, float*) { absent(); }
std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape&, BatchNormReduce, void*, bool) { absent(); }
void loss_and_metrics(LossCode, const float*, const float*, const float*, int64_t, int64_t, float, float*, const int*,
                      int, float*, bool, float*) {
  absent();
}
void accumulate(float*, const float*, int64_t) { absent(); }
void set_value(float*, float) { absent(); }
void sgd_update(float*, const float*, float*, int64_t, float, float, float, bool) { absent(); }
void rmsprop_update(float*, const float*, float*, int64_t, float, float, float, float) { absent(); }
void adam_update(float*, const float*, float*, float*, int64_t, float, float, float, float, float, float, float, bool) {
  absent();
}

}  // namespace gpu
}  // namespace dtnn
