// Counting heap allocations, for tests of dtnn's rule that nothing allocates in the batch loop.
//
// alloc_count.cpp replaces the global operator new (plain, array and aligned forms; the nothrow forms of
// libstdc++ call these) for the whole test binary: every call adds one to a process-wide counter and then
// allocates with malloc / aligned_alloc, as the default would. Allocations by C code (malloc itself, BLAS)
// are not counted: the rule is about the engine's C++ containers and objects. oneDNN's
// own C++ allocations inside a primitive's execution are counted apart (library_allocations).
#pragma once

#include <cstdint>

namespace dtnn::test {

// operator new calls so far, on every thread, but those made while oneDNN's dnnl_primitive_execute runs.
// Compare before and after the code under test, with no Catch2 assertion in between (its macros allocate).
int64_t allocations();

// operator new calls made while dnnl_primitive_execute runs (alloc_count.cpp interposes it): oneDNN 2.6
// builds a map of the call's arguments inside every execution, which no API call avoids.
int64_t library_allocations();

}  // namespace dtnn::test
