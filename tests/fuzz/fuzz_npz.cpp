// NPZ archives (engine/io/npz.h): read_npz and read_npz_info on the same input. An archive read_npz accepts
// (it checks everything, CRCs included outside the fuzz build) must also pass read_npz_info, which reads only the headers, and
// both must describe the same arrays: the ImageNet reader counts samples with one and decodes with the other.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("input.npz", data, size);
  std::vector<io::NpyInfo> infos;
  const bool info_ok = fuzz::accepted([&] { infos = io::read_npz_info(path); });
  std::vector<io::NpyArray> arrays;
  if (!fuzz::accepted([&] { arrays = io::read_npz(path); })) return 0;
  fuzz::require(info_ok && infos.size() == arrays.size(), "read_npz_info accepts what read_npz accepts");
  for (size_t i = 0; i < arrays.size(); ++i) {
    const io::NpyArray& a = arrays[i];
    fuzz::require(infos[i].name == a.name && infos[i].dtype == a.dtype && infos[i].shape == a.shape,
                  "read_npz_info and read_npz agree on names, dtypes and shapes");
    fuzz::require(a.bytes.size() == static_cast<size_t>(a.numel()) * a.itemsize(), "data size matches the shape");
    fuzz::require(a.to_float().size() == static_cast<size_t>(a.numel()), "to_float converts every element");
  }
  return 0;
}
