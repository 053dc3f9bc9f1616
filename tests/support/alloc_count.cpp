// The counting operator new of alloc_count.h. The deletes are replaced too, so that every block this new
// returns goes back to the allocator that gave it (free), whatever the standard library's defaults are.
#include "support/alloc_count.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<int64_t> g_allocations{0}, g_library_allocations{0};
std::atomic<int> g_in_library{0};  // threads inside dnnl_primitive_execute

void count() {
  (g_in_library.load(std::memory_order_relaxed) ? g_library_allocations : g_allocations)
      .fetch_add(1, std::memory_order_relaxed);
}

void* counted(std::size_t size) {
  count();
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}

void* counted_aligned(std::size_t size, std::align_val_t align) {
  count();
  const std::size_t a = static_cast<std::size_t>(align);
  const std::size_t rounded = (size + a - 1) / a * a;  // aligned_alloc wants a multiple of the alignment
  if (void* p = std::aligned_alloc(a, rounded ? rounded : a)) return p;
  throw std::bad_alloc();
}
}  // namespace

// Tells the sanitizer options of an ASan build (tests/sanitizers/options.cpp) that new and delete are replaced.
extern "C" bool dtnn_replaces_operator_new() { return true; }

namespace dtnn::test {
int64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }
int64_t library_allocations() { return g_library_allocations.load(std::memory_order_relaxed); }
}  // namespace dtnn::test

// Interposes oneDNN's C entry point (cpu.onednn calls it; this definition in the executable takes the
// place of libdnnl's, which it calls through dlsym): allocations while a call is running are oneDNN's own.
// Declared without oneDNN's header, so the file builds without oneDNN too (nothing calls it then).
extern "C" int dnnl_primitive_execute(const void* primitive, void* stream, int nargs, const void* args) {
  using Execute = int (*)(const void*, void*, int, const void*);
  static const Execute real = reinterpret_cast<Execute>(dlsym(RTLD_NEXT, "dnnl_primitive_execute"));
  if (!real) std::abort();  // called, so some library defines it
  g_in_library.fetch_add(1, std::memory_order_relaxed);
  const int status = real(primitive, stream, nargs, args);
  g_in_library.fetch_sub(1, std::memory_order_relaxed);
  return status;
}

void* operator new(std::size_t size) { return counted(size); }
void* operator new[](std::size_t size) { return counted(size); }
void* operator new(std::size_t size, std::align_val_t align) { return counted_aligned(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) { return counted_aligned(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
