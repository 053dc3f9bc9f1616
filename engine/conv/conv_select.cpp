#include "conv/conv_select.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "backend/cpu/blas.h"
#include "conv/conv_timing.h"
#include "core/build_info.h"
#include "core/environment.h"
#include "core/sha256.h"
#include "core/error.h"

namespace dtnn {
namespace {

constexpr const char* kCacheTag = "per-direction+build";  // the cache lines' format

struct CacheEntry {
  std::string algo;
  double ms = 0;
};

std::string cache_key(const std::string& cpu, int threads, const std::string& build, const std::string& problem) {
  return cpu + "\t" + std::to_string(threads) + "\t" + build + "\t" + problem;
}

std::string this_key(const ConvProblem& p) { return cache_key(conv_cache_cpu(), cpu::threads(), conv_cache_build(), p.str()); }

}  // namespace

std::string conv_cache_build() {
  const BuildInfo& b = build_info();
  return build_commit_label() + " flags=" + sha256_hex(b.flags).substr(0, 12);
}

std::string conv_cache_cpu() {
  std::string cpu = environment().cpu_id;
  if (const char* cap = std::getenv("DTNN_MAX_CPU_ISA"); cap && *cap) {
    std::string c(cap);
    for (char& ch : c)
      if (ch == '\t' || ch == '\n' || ch == '\r') ch = '_';
    cpu += " max_isa=" + c;
  }
  return cpu;
}

namespace {

std::map<std::string, CacheEntry> read_cache(const std::string& path) {
  std::map<std::string, CacheEntry> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
    // Lines of older builds (5 columns: one algorithm by total time; 6 and "per-direction": no build
    // column) are ignored, so best_of times those problems again.
    if (cols.size() != 7 || cols[6] != kCacheTag) continue;
    try {
      out[cache_key(cols[0], std::stoi(cols[1]), cols[2], cols[3])] = {cols[4], std::stod(cols[5])};
    } catch (const std::exception&) {
      // a malformed line (another build's format, a partial write) is skipped
    }
  }
  return out;
}

void append_cache(const std::string& path, const std::string& key, const CacheEntry& e) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  std::ofstream f(path, std::ios::app);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.4f", e.ms);
  if (f) f << key << "\t" << e.algo << "\t" << ms << "\t" << kCacheTag << "\n";
  if (!f) std::cerr << "dtnn: warning: cannot write the conv_algo cache " << path << "\n";
}

const ConvAlgorithm* lookup_one(const std::string& name, const ConvProblem& p) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->name() == name && a->supports(p).ok()) return a;
  return nullptr;
}

// A cached choice: one algorithm name, or three (fwd/bwd_data/bwd_filter) joined by '/'. False when a name
// is unknown to this build or declines the problem (the entry is then ignored).
bool lookup(const std::string& names, const ConvProblem& p, const ConvAlgorithm* out[3]) {
  std::vector<std::string> parts;
  std::stringstream ss(names);
  for (std::string part; std::getline(ss, part, '/');) parts.push_back(part);
  if (parts.size() != 1 && parts.size() != 3) return false;
  for (int d = 0; d < 3; ++d)
    if (!(out[d] = lookup_one(parts[parts.size() == 1 ? 0 : d], p))) return false;
  return true;
}

ConvChoice single(const ConvAlgorithm* a, std::string how, std::string note = "") {
  ConvChoice c;
  for (auto& d : c.algo) d = a;
  c.how = std::move(how);
  c.note = std::move(note);
  return c;
}

// Timings made by this process, so identical layers are timed once.
std::mutex g_mutex;
std::map<std::string, CacheEntry>& memo() {
  static std::map<std::string, CacheEntry> m;
  return m;
}

// Checks, then times every supporting candidate in each direction; the fastest correct one per direction
// wins. `note` lists each candidate's fwd/bwd_data/bwd_filter medians ("wrong" where its check failed).
ConvChoice time_all(const std::vector<const ConvAlgorithm*>& candidates, const ConvProblem& p) {
  ConvBench bench(p);
  TimingOptions opt;
  opt.samples = 3;
  opt.min_sample_ms = 5.0;
  ConvChoice best;
  double best_ms[3] = {0, 0, 0};
  for (const ConvAlgorithm* a : candidates) {
    if (!a->supports(p).ok()) continue;
    std::string times;
    for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
      const int i = static_cast<int>(d);
      char buf[32] = "wrong";
      if (bench.check(*a, d).ok()) {
        const double ms = bench.time(*a, d, opt).median_ms;
        if (!best.algo[i] || ms < best_ms[i]) best.algo[i] = a, best_ms[i] = ms;
        std::snprintf(buf, sizeof buf, "%.3f", ms);
      }
      times += (i ? "/" : "") + std::string(buf);
    }
    best.note += (best.note.empty() ? "" : ", ") + std::string(a->name()) + " " + times + " ms";
  }
  best.ms = best_ms[0] + best_ms[1] + best_ms[2];
  return best;
}

}  // namespace

std::string conv_direction_names(const ConvAlgorithm* const algo[3]) {
  if (algo[0] == algo[1] && algo[1] == algo[2]) return std::string(algo[0]->name());
  return std::string(algo[0]->name()) + "/" + std::string(algo[1]->name()) + "/" + std::string(algo[2]->name());
}

std::string ConvChoice::name() const { return conv_direction_names(algo); }

std::string default_conv_cache_path() {
  if (const char* p = std::getenv("DTNN_CONV_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/dtnn/conv_best_of.tsv";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/dtnn/conv_best_of.tsv";
  return "conv_best_of.tsv";
}

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

namespace {

// A named CPU algorithm if it supports the problem, else the first supporting one in preference order.
ConvChoice named_cpu_choice(std::string_view requested, const ConvProblem& p) {
  const ConvAlgorithm& algo = find_conv_algorithm(requested);
  const Support support = algo.device() == Device::cpu
                              ? algo.supports(p)
                              : Support::no(std::string(algo.name()) + " runs on the GPU (needs --enable_gpu)");
  if (support.ok()) return single(&algo, "requested", "");
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(p).ok()) return single(a, "fallback", support.why);
  fail("no convolution algorithm supports ", p.str());
}

ConvChoice gpu_choice(std::string_view requested, const ConvProblem& p);

}  // namespace

ConvChoice select_conv_algorithm(std::string_view requested, const ConvProblem& p, Device device,
                                 const std::string& cache_path) {
  if (device == Device::gpu) return gpu_choice(requested, p);
  if (requested != "auto" && requested != "best_of") return named_cpu_choice(requested, p);
  const std::string path = cache_path.empty() ? default_conv_cache_path() : cache_path;
  const std::string key = this_key(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto mem = memo().find(key);
  const auto cache = read_cache(path);
  const auto hit = cache.find(key);
  if (mem != memo().end() || hit != cache.end()) {
    const CacheEntry& e = mem != memo().end() ? mem->second : hit->second;
    ConvChoice c;
    if (lookup(e.algo, p, c.algo)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f ms fwd+bwd when timed", e.ms);
      c.how = requested == "auto" ? "auto (cache)" : "best_of (cache)";
      c.note = buf;
      c.ms = e.ms;
      return c;
    }
  }
  if (requested == "auto") {
    // On AVX-512 CPUs oneDNN's JIT runs about twice as fast as every AVX2 kernel here (dtnn's and
    // OpenBLAS's), on nearly every layer and direction (results/baselines/conv_cpu_2core.md); the layers
    // with fewer than 16 filters stay with im2row_gemm's skinny kernels, which beat it there too.
    // Of those, 3x3 stride-1 layers with 32 or more input and output channels run oneDNN's Winograd
    // F(4x4,3x3) faster in every direction, even with the activations reordered to its blocked layout and
    // back (resnet20's 32- and 64-channel layers; with 16 channels the transforms cost more than they save).
    // dtnn's own F(4x4,3x3) on NHWC beats both there and at 16 channels (no reorders; 1.1-2x in forward and
    // backward data, level or ahead in the weight gradient) up to 64 channels; above, its point GEMMs lose
    // to oneDNN's (resnet18's 128- and 256-channel layers: 1.5-2x slower). On CPUs without AVX-512 its AVX2
    // kernels beat convgemm, oneDNN's AVX2 JIT and cpu.winograd_f4 on those layers in every direction
    // (resnet20's three shapes on a Zen 3: 1.4-2.9x convgemm, the best of the others), and convgemm, the
    // alternative there, up to 256 channels (forward + backward 1.1-2.7x faster); at 512 they are level on
    // 7x7 images and 1.2x ahead on 4x4 ones, its forward and backward data slower than convgemm's: not taken.
    const ConvAlgorithm& x16 = find_conv_algorithm("winograd_x16_f4");
    const int64_t x16_channels = cpu_has_avx512() ? 64 : 256;
    if (p.c <= x16_channels && p.k <= x16_channels && x16.supports(p).ok()) return single(&x16, "heuristic");
    const ConvAlgorithm& winograd = find_conv_algorithm("onednn_winograd");
    if (cpu_has_avx512() && p.c >= 32 && p.k >= 32 && p.r == 3 && p.s == 3 && winograd.supports(p).ok())
      return single(&winograd, "heuristic");
    const ConvAlgorithm& onednn = find_conv_algorithm("onednn");
    if (cpu_has_avx512() && p.k >= 16 && !(p.layout == Layout::nchw && p.groups == p.c && p.c > 1) &&
        onednn.supports(p).ok())
      return single(&onednn, "heuristic");
    // Image-sized inputs (C <= 4: first layers) with 16 or more filters: cpu.direct's (s, c)-row tiles
    // beat both GEMM formulations (fwd + weight gradient 1.2-4x, results/baselines/conv_cpu_2core.md).
    const ConvAlgorithm& direct = find_conv_algorithm("direct");
    if (p.c <= 4 && p.k >= 16 && p.groups == 1 && direct.supports(p).ok()) return single(&direct, "heuristic");
    // Other layers with few input or output channels (simplecnn): im2row_gemm's implicit K = 4/8 and skinny
    // kernels beat convgemm's 16-channel panels there (measured 2-4x, results/baselines/conv_cpu_2core.md).
    const ConvAlgorithm& im2row = find_conv_algorithm("im2row_gemm");
    if ((p.c < 8 || p.k < 16) && im2row.supports(p).ok()) return single(&im2row, "heuristic");
    // NCHW depthwise: oneDNN has no fast kernel for plain NCHW there (measured 1.4-3.9x slower than
    // cpu.depthwise on MobileNet's 512-channel 14x14 layer, results/baselines/conv_cpu_2core.md).
    const ConvAlgorithm& depthwise = find_conv_algorithm("depthwise");
    if (p.layout == Layout::nchw && depthwise.supports(p).ok()) return single(&depthwise, "heuristic");
    for (const ConvAlgorithm* a : conv_algorithms())
      if (a->supports(p).ok()) return single(a, "heuristic");
    fail("no convolution algorithm supports ", p.str());
  }
  std::vector<const ConvAlgorithm*> contenders;
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->name() != "cpu.reference" && a->supports(p).ok()) contenders.push_back(a);
  if (contenders.empty())  // only the reference supports it: nothing to choose
    return single(&find_conv_algorithm("reference"), "best_of (only choice)");
  ConvChoice choice = best_of_among(contenders, p, path);
  memo()[key] = {choice.name(), choice.ms};
  return choice;
}

ConvChoice best_of_among(const std::vector<const ConvAlgorithm*>& candidates, const ConvProblem& p,
                         const std::string& cache_path) {
  ConvChoice c = time_all(candidates, p);
  DTNN_CHECK(c.algo[0] && c.algo[1] && c.algo[2], "best_of: no candidate computes every direction of ", p.str(),
             " correctly (", c.note.empty() ? "none supports it" : c.note, ")");
  c.how = "best_of (timed)";
  append_cache(cache_path, this_key(p), {c.name(), c.ms});
  return c;
}

namespace {

ConvChoice gpu_choice(std::string_view requested, const ConvProblem& p) {
  const ConvAlgorithm& find = find_conv_algorithm("gpu.cudnn_find");
  ConvChoice c;
  for (auto& a : c.algo) a = &find;
  if (requested == "auto" || requested == "best_of" || requested == "gpu.cudnn_find" || requested == "cudnn_find") {
    c.how = "auto (cudnn_find)";
    return c;
  }
  const ConvAlgorithm& want = find_conv_algorithm(requested);
  if (want.device() != Device::gpu) {
    c.how = "fallback";
    c.note = std::string(want.name()) + " is a CPU algorithm";
    return c;
  }
  int used = 0;
  for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
    const Support s = want.supports_dir(p, dir);
    if (s.ok()) {
      c.algo[static_cast<int>(dir)] = &want;
      ++used;
    } else {
      c.note += std::string(c.note.empty() ? "" : "; ") + conv_dir_name(dir) + " by gpu.cudnn_find (" + s.why + ")";
    }
  }
  c.how = used == 3 ? "requested" : used > 0 ? "partly requested" : "fallback";
  return c;
}

}  // namespace

}  // namespace dtnn
