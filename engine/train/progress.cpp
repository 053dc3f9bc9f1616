// Progress output on rank 0: PyDTNN/tqdm-like bar redrawn at most 10 times a second on a terminal;
// one line per finished pass when stdout is a file or a pipe (logs stay readable).
#include <chrono>
#include <cstdio>

#include "train/output.h"

namespace dtnn {

std::string format_values(const Trainer& trainer, const std::vector<double>& values, const std::string& prefix) {
  std::string s;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%s: %.7f", prefix.c_str(), loss_short_name(trainer.losses()[0]), values[0]);
  s += buf;
  for (size_t m = 0; m < trainer.metrics().size(); ++m) s += ", " + prefix + format_metric(trainer.metrics()[m], values[1 + m]);
  return s;
}

namespace {

std::string clock(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d", s / 60, s % 60);
  return buf;
}

}  // namespace

ProgressFn make_progress_printer(std::ostream& out, bool terminal, const Trainer& trainer) {
  auto last_draw = std::make_shared<double>(-1.0);
  return [&out, terminal, &trainer, last_draw](const std::string& label, int64_t done, int64_t total,
                                                double elapsed, const std::vector<double>& means, bool finished) {
    const double rate = elapsed > 0 ? done / elapsed : 0.0;
    char head[160];
    if (!terminal) {
      if (!finished) return;
      std::snprintf(head, sizeof head, "%s: %lld/%lld samples [%.2f s, %.2f samples/s, ", label.c_str(),
                    static_cast<long long>(done), static_cast<long long>(total), elapsed, rate);
      out << head << format_values(trainer, means, label.rfind("Testing", 0) == 0 ? "test_" : "") << "]\n";
      out.flush();
      return;
    }
    if (!finished && *last_draw >= 0 && elapsed - *last_draw < 0.1 && elapsed >= *last_draw) return;
    *last_draw = finished ? -1.0 : elapsed;
    constexpr int kWidth = 20;
    const double frac = total > 0 ? static_cast<double>(done) / total : 1.0;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(filled, '#');
    bar += std::string(kWidth - filled, ' ');
    const double eta = rate > 0 ? (total - done) / rate : 0.0;
    std::snprintf(head, sizeof head, "\r%s: %3d%%|%s| %lld/%lld [%s<%s, %.2f samples/s, ", label.c_str(),
                  static_cast<int>(frac * 100), bar.c_str(), static_cast<long long>(done),
                  static_cast<long long>(total), clock(elapsed).c_str(), clock(eta).c_str(), rate);
    out << head << format_values(trainer, means, label.rfind("Testing", 0) == 0 ? "test_" : "") << "]\x1b[K";
    if (finished) out << "\n";
    out.flush();
  };
}

}  // namespace dtnn
