// SideStream (backend/gpu_ops.h): a second stream ordered against the compute stream by events.
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {

namespace {
cudaEvent_t ev(void* e) { return static_cast<cudaEvent_t>(e); }
}  // namespace

SideStream::SideStream(int slots) {
  DTNN_CHECK(initialised(), "a side stream needs the GPU backend initialised");
  compute_.assign(static_cast<size_t>(slots), nullptr);
  side_.assign(static_cast<size_t>(slots), nullptr);
  try {
    int least = 0, greatest = 0;
    DTNN_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    DTNN_CUDA_CHECK(cudaStreamCreateWithPriority(reinterpret_cast<cudaStream_t*>(&stream_), cudaStreamNonBlocking,
                                                 greatest));
    for (void*& e : compute_)  // only waited on
      DTNN_CUDA_CHECK(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(&e), cudaEventDisableTiming));
    for (void*& e : side_) DTNN_CUDA_CHECK(cudaEventCreate(reinterpret_cast<cudaEvent_t*>(&e)));
  } catch (...) {  // a constructor that throws runs no destructor: release what was made
    release();
    throw;
  }
}

void SideStream::release() noexcept {
  if (stream_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
    stream_ = nullptr;
  }
  for (std::vector<void*>* events : {&compute_, &side_})
    for (void*& e : *events) {
      if (e) cudaEventDestroy(ev(e));
      e = nullptr;
    }
}

SideStream::~SideStream() { release(); }

void* SideStream::handle() { return stream_; }

void SideStream::wait_compute(int i) {
  DTNN_CUDA_CHECK(cudaEventRecord(ev(compute_[i]), stream()));
  DTNN_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_), ev(compute_[i]), 0));
}

void SideStream::mark(int i) { DTNN_CUDA_CHECK(cudaEventRecord(ev(side_[i]), static_cast<cudaStream_t>(stream_))); }

bool SideStream::passed(int i) {
  const cudaError_t status = cudaEventQuery(ev(side_[i]));
  if (status == cudaErrorNotReady) {
    // "Not ready" is an answer, not an error, but the runtime may keep it as the thread's last error, and
    // the next kernel launch's DTNN_LAUNCH_CHECK (cudaGetLastError) would then throw "device not ready".
    // PyTorch clears it likewise after its event and stream queries (pytorch#18584, #61554).
    (void)cudaGetLastError();
    return false;
  }
  DTNN_CUDA_CHECK(status);
  return true;
}

void SideStream::host_wait(int i) { DTNN_CUDA_CHECK(cudaEventSynchronize(ev(side_[i]))); }

void SideStream::compute_waits(int i) { DTNN_CUDA_CHECK(cudaStreamWaitEvent(stream(), ev(side_[i]), 0)); }

void SideStream::copy_to_host(void* host, const void* src, size_t bytes) {
  if (bytes)
    DTNN_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream_)));
}

void SideStream::copy_to_device(void* dst, const void* host, size_t bytes) {
  if (bytes)
    DTNN_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream_)));
}

double SideStream::seconds(int from, int to) const {
  float ms = 0.0f;
  DTNN_CUDA_CHECK(cudaEventElapsedTime(&ms, ev(side_[from]), ev(side_[to])));
  return 1e-3 * ms;
}

}  // namespace dtnn::gpu
