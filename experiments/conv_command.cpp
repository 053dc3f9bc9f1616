#include "experiments/conv_command.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <ostream>

#include "backend/cpu/blas.h"
#include "backend/gpu_ops.h"
#include "conv/conv_timing.h"
#include "conv/cpu/cpu_algorithms.h"
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
  return run_conv_command(o, conv_algorithms_named(o.algos, o.device == "gpu" ? Device::gpu : Device::cpu), out);
}

int run_conv_command(const ConvCommandOptions& o, const std::vector<const ConvAlgorithm*>& algos, std::ostream& out) {
  const ConvProblem p = ConvProblem::parse(o.problem);
  DTNN_CHECK(p.n > 0, "convolution ", p.str(), ": a batch of 0 samples has nothing to time");
  const std::vector<ConvDir> dirs = parse_dirs(o.dirs);
  DTNN_CHECK(o.device == "cpu" || o.device == "gpu", "--device must be cpu or gpu (got '", o.device, "')");
  const bool gpu = o.device == "gpu";
  DTNN_CHECK(o.threads >= 1 && o.threads <= 1024, "--threads must be in [1, 1024] (got ", o.threads, ")");
  // (a billion timed calls was accepted and would have run for months)
  DTNN_CHECK(o.samples >= 1 && o.samples <= 100000, "--samples must be in [1, 100000] (got ", o.samples, ")");
  cpu::set_threads(o.threads);
  double peak = 0.0;
  if (gpu) gpu::init(0);  // fails with one line before anything is printed when there is no GPU
  out << "problem  " << p.str() << "\n";
  if (gpu) {
    gpu::set_allow_tf32(o.allow_tf32);
    peak = measure_gpu_sgemm_gflops();
    out << "device   " << gpu::device_name() << (o.allow_tf32 ? ", TF32 allowed" : ", TF32 off")
        << "   cuBLAS SGEMM 8192^3: " << fmt("%.1f", peak / 1e3) << " TFLOP/s\n";
  } else {
    peak = measure_sgemm_gflops();
    // OpenBLAS's idle worker threads spin for a while after a call (its THREAD_TIMEOUT, ~0.1 s here) and
    // would take a core from the OpenMP algorithms timed next: let them go to sleep first.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    out << "threads  " << o.threads << "   OpenBLAS SGEMM 1024^3: " << fmt("%.1f", peak) << " GFLOP/s   dtnn tiles: "
        << cpu_kernel_isa() << "\n";
  }
  out << "GFLOP    fwd " << fmt("%.3f", p.flops(ConvDir::fwd) / 1e9) << ", bwd_data "
      << fmt("%.3f", p.flops(ConvDir::bwd_data) / 1e9) << ", bwd_filter "
      << fmt("%.3f", p.flops(ConvDir::bwd_filter) / 1e9) << "\n";
  const ConvProblem checked = conv_check_problem(p);
  out << "checked  every algorithm and direction against cpu.reference before it is timed"
      << (checked.n == p.n ? std::string() : ", at batch " + std::to_string(checked.n) + " (the reference is slow)")
      << "\n\n";
  char line[256];
  const int width = gpu ? 32 : 18;
  std::snprintf(line, sizeof line, "%-*s %-11s %10s %19s %9s %7s %12s\n", width, "algorithm", "direction",
                "median ms", "(min - max)", gpu ? "TFLOP/s" : "GFLOP/s", "%SGEMM", "max rel err");
  out << line;
  ConvBench bench(p);
  TimingOptions topt;
  topt.samples = o.samples;
  int timed = 0, wrong = 0;
  for (const ConvAlgorithm* algo : algos) {
    const Support s = algo->supports(p);
    if (!s.ok()) {
      std::snprintf(line, sizeof line, "%-*s %-11s declined: %s\n", width, std::string(algo->name()).c_str(), "-",
                    s.why.c_str());
      out << line;
      continue;
    }
    for (ConvDir d : dirs) {
      std::string name(algo->name());
      const Support sd = algo->supports_dir(p, d);
      if (!sd.ok()) {  // a cuDNN algorithm of another direction needs no row; one cuDNN declines does
        if (sd.code != SupportCode::no_such_direction) {
          std::snprintf(line, sizeof line, "%-*s %-11s declined: %s\n", width, name.c_str(), conv_dir_name(d),
                        sd.why.c_str());
          out << line;
        }
        continue;
      }
      const std::string chosen = algo->chosen_for(p, d);
      if (chosen != name) name += " -> " + chosen.substr(chosen.rfind('.') + 1);
      const ConvCheck c = bench.check(*algo, d);
      if (!c.ok()) {
        std::snprintf(line, sizeof line, "%-*s %-11s %s\n", width, name.c_str(), conv_dir_name(d), c.wrong().c_str());
        out << line << std::flush;
        ++wrong;
        continue;
      }
      const ConvTiming t = bench.time(*algo, d, topt);
      const std::string err = fmt("%.1e", c.error);
      const std::string range = "(" + fmt("%.3f", t.min_ms) + " - " + fmt("%.3f", t.max_ms) + ")";
      std::snprintf(line, sizeof line, "%-*s %-11s %10.3f %19s %9.*f %6.0f%% %12s\n", width, name.c_str(),
                    conv_dir_name(d), t.median_ms, range.c_str(), gpu ? 2 : 1, gpu ? t.gflops / 1e3 : t.gflops,
                    100.0 * t.gflops / peak, err.c_str());
      out << line << std::flush;
      ++timed;
    }
  }
  if (wrong > 0) {
    out << "\n" << wrong << " algorithm x direction(s) computed wrong results (a bug): not timed\n";
    return 1;
  }
  if (timed == 0) throw Unsupported("no algorithm ran: every one requested declines " + p.str() + " in the " +
                                    "requested directions");
  return 0;
}

}  // namespace dtnn
