// IDX files (MNIST's format, plain or gzip; engine/data/idx.h), as images (rank 3) and as labels (rank 1).
#include "data/idx.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("input-idx3-ubyte", data, size);
  for (int rank : {1, 3}) {
    IdxArray a;
    if (!fuzz::accepted([&] { a = read_idx_u8(path, rank); })) continue;
    int64_t total = 1;
    for (int64_t d : a.dims) total *= d;
    fuzz::require(static_cast<int>(a.dims.size()) == rank && a.data.size() == static_cast<size_t>(total),
                  "an accepted IDX array holds prod(dims) bytes of the requested rank");
  }
  return 0;
}
