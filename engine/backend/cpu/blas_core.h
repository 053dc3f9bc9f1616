// OpenBLAS's kernel choice, made right where its CPU detection fails.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPU's model number when the
// library loads, before main(). A virtual CPU whose model OpenBLAS does not know (KVM's generic "Intel Xeon
// Processor" with AVX-512 under OpenBLAS 0.3.21) gets the Prescott fallback: SSE3 kernels on an AVX-512
// core, every GEMM several times slower and every framework that uses this OpenBLAS (NumPy, so PyDTNN;
// PyTorch's linear layers) with it. The one remedy OpenBLAS offers is OPENBLAS_CORETYPE, read at load.
// results/baselines/blas_core.md has the measured effect.
#pragma once

#include <string>

namespace dtnn::cpu {

// The OpenBLAS core name this CPU's features support ("Cooperlake", "SkylakeX" or "Haswell") when the
// loaded core is a pre-AVX2 fallback and the CPU has AVX2 or AVX-512; "" when the choice is fine (or
// not OpenBLAS's to improve). Never upgrades a core OpenBLAS recognised (Haswell, Zen, SkylakeX...).
std::string blas_core_upgrade();

// First thing in main(), before MPI and threads start: when OPENBLAS_CORETYPE is unset and
// blas_core_upgrade() names a core, sets OPENBLAS_CORETYPE to it and re-executes the program once
// (/proc/self/exe, the same arguments and environment, DTNN_BLAS_CORE_SET=1 marking the second start), so
// OpenBLAS loads with it and the processes this one starts (peers under `dtnn run`) inherit it. A set
// OPENBLAS_CORETYPE is the user's choice and is kept; DTNN_BLAS_CORE=keep turns the upgrade off. Returns
// normally when nothing is to be done or the re-execution fails (the program then runs as it is).
void ensure_blas_core(char** argv);

// What the run report records: "Cooperlake (set by dtnn: OpenBLAS detected Prescott)", "Haswell" ...
std::string blas_core_note();

}  // namespace dtnn::cpu
