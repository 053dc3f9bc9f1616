#include "experiments/conv_command.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <ostream>

#include "backend/cpu/blas.h"
#include "conv/conv_timing.h"
#include "core/error.h"

namespace dtnn {
namespace {

std::vector<ConvDir> parse_dirs(const std::vector<std::string>& names) {
  std::vector<ConvDir> out;
  for (const std::string& n : names) {
    if (n == "all") return {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter};
    bool found = false;
    for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter})
      if (n == conv_dir_name(d)) out.push_back(d), found = true;
    DTNN_CHECK(found, "--dir: unknown direction '", n, "' (fwd, bwd_data, bwd_filter or all)");
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int run_conv_command(const ConvCommandOptions& o, std::ostream& out) {
  const ConvProblem p = ConvProblem::parse(o.problem);
  const std::vector<ConvDir> dirs = parse_dirs(o.dirs);
  const std::vector<const ConvAlgorithm*> algos = conv_algorithms_named(o.algos);
  DTNN_CHECK(o.threads >= 1, "--threads must be at least 1 (got ", o.threads, ")");
  DTNN_CHECK(o.samples >= 1, "--samples must be at least 1 (got ", o.samples, ")");
  cpu::set_threads(o.threads);
  const double peak = measure_sgemm_gflops();
  // OpenBLAS's idle worker threads spin for a while after a call (its THREAD_TIMEOUT, ~0.1 s here) and
  // would take a core from the OpenMP algorithms timed next: let them go to sleep first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  out << "problem  " << p.str() << "\n";
  out << "threads  " << o.threads << "   OpenBLAS SGEMM 1024^3: " << fmt("%.1f", peak) << " GFLOP/s\n";
  out << "GFLOP    fwd " << fmt("%.3f", p.flops(ConvDir::fwd) / 1e9) << ", bwd_data "
      << fmt("%.3f", p.flops(ConvDir::bwd_data) / 1e9) << ", bwd_filter "
      << fmt("%.3f", p.flops(ConvDir::bwd_filter) / 1e9) << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-18s %-11s %10s %19s %9s %7s %12s\n", "algorithm", "direction", "median ms",
                "(min - max)", "GFLOP/s", "%SGEMM", "max rel err");
  out << line;
  ConvBench bench(p);
  TimingOptions topt;
  topt.samples = o.samples;
  for (const ConvAlgorithm* algo : algos) {
    const Support s = algo->supports(p);
    if (!s.ok) {
      std::snprintf(line, sizeof line, "%-18s %-11s declined: %s\n", std::string(algo->name()).c_str(), "-",
                    s.why.c_str());
      out << line;
      continue;
    }
    for (ConvDir d : dirs) {
      const ConvTiming t = bench.time(*algo, d, topt);
      const std::string err = o.check ? fmt("%.1e", bench.max_rel_error(*algo, d)) : std::string("-");
      const std::string range = "(" + fmt("%.3f", t.min_ms) + " - " + fmt("%.3f", t.max_ms) + ")";
      std::snprintf(line, sizeof line, "%-18s %-11s %10.3f %19s %9.1f %6.0f%% %12s\n",
                    std::string(algo->name()).c_str(), conv_dir_name(d), t.median_ms, range.c_str(), t.gflops,
                    100.0 * t.gflops / peak, err.c_str());
      out << line << std::flush;
    }
  }
  return 0;
}

}  // namespace dtnn
