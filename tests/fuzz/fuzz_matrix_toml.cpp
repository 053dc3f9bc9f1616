// Experiment matrices (experiments/matrix.h): parse_matrix takes the text itself; the path (in the scratch
// directory) only names the file in messages and anchors relative paths. Then filter_trials on the first
// trial's parameters, which must keep that trial. A hostfile `hosts.txt` (two slots on localhost) lies beside
// the matrix, so a [launcher] hostfile of that name is read, not refused for being absent.
#include "experiments/matrix.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  static const bool hosts = [] {
    const char line[] = "localhost slots=2\n";
    fuzz::write_input("hosts.txt", reinterpret_cast<const uint8_t*>(line), sizeof line - 1);
    return true;
  }();
  (void)hosts;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Matrix m;
  if (!fuzz::accepted([&] { m = parse_matrix(text, fuzz::scratch_path("matrix.toml")); })) return 0;
  fuzz::require(!m.trials.empty(), "an accepted matrix has trials");
  std::vector<std::string> filters;
  for (const auto& [name, value] : m.trials.front().params) filters.push_back(name + "=" + value);
  std::vector<Trial> kept;
  fuzz::accepted([&] { kept = filter_trials(m.trials, filters); });
  fuzz::require(!kept.empty() && kept.front().key == m.trials.front().key, "a trial's own parameters select it");
  return 0;
}
