// --conv_algo=best_of / auto: the timing picks the measurably fastest candidate, and the cache file is
// what later runs (and auto) use.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "backend/cpu/blas.h"
#include "conv/conv_select.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/environment.h"
#include "core/error.h"
#include "conv/perturbed_algorithm.h"
#include "helpers.h"

using namespace dtnn;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("conv_select: best_of picks the fastest of a planted pair and records it in the cache", "[conv]") {
  cpu::set_threads(1);
  const std::string cache = test::temp_path("best_of_planted.tsv");
  std::remove(cache.c_str());
  // The double-accumulating reference is ~100x slower than convgemm on 32 channels: a planted loser.
  const ConvProblem p = ConvProblem::parse("n4_c32h12w12_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvChoice c = best_of_among({&find_conv_algorithm("reference"), &find_conv_algorithm("convgemm")}, p, cache);
  CHECK(c.name() == "cpu.convgemm");
  CHECK(c.how == "best_of (timed)");
  CHECK(c.note.find("cpu.reference") != std::string::npos);  // both were timed
  CHECK(c.ms > 0.0);
  const std::string text = slurp(cache);
  CHECK(text.find(p.str() + "\tcpu.convgemm\t") != std::string::npos);
  CHECK(text.find("\t" + conv_cache_build() + "\t") != std::string::npos);
  CHECK(text.find("\tper-direction+build\n") != std::string::npos);
  CHECK(text.find(environment().cpu_id) == 0);
  std::remove(cache.c_str());
}

TEST_CASE("conv_select: best_of checks every candidate and never picks a wrong one, per direction", "[conv]") {
  cpu::set_threads(1);
  const std::string cache = test::temp_path("best_of_wrong.tsv");
  std::remove(cache.c_str());
  // convgemm with a wrong output is as fast as convgemm, ~100x faster than the reference: timing alone
  // would choose it in every direction.
  const ConvProblem p = ConvProblem::parse("n4_c32h12w12_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvAlgorithm& ref = find_conv_algorithm("reference");
  const test::PerturbedAlgorithm wrong(find_conv_algorithm("convgemm"));
  const ConvChoice c = best_of_among({&wrong, &ref}, p, cache);
  CHECK(c.name() == "cpu.reference");
  CHECK(c.note.find("test.perturbed wrong/wrong/wrong ms") != std::string::npos);
  // Wrong in one direction only: still the fastest in the other two.
  const test::PerturbedAlgorithm wrong_bwd_data(find_conv_algorithm("convgemm"), {ConvDir::bwd_data});
  const ConvChoice d = best_of_among({&wrong_bwd_data, &ref}, p, cache);
  CHECK(d.algo[0] == &wrong_bwd_data);
  CHECK(d.algo[1] == &ref);
  CHECK(d.algo[2] == &wrong_bwd_data);
  // Wrong only in the bias gradient, or only in a forward without a bias (a use_bias=false layer): the check
  // compares every output, so that direction is the reference's (both passed the check before).
  const test::PerturbedAlgorithm wrong_db(find_conv_algorithm("convgemm"), {}, test::AlsoWrong::bias_gradient);
  const ConvChoice e = best_of_among({&wrong_db, &ref}, p, cache);
  CHECK(e.algo[0] == &wrong_db);
  CHECK(e.algo[2] == &ref);
  const test::PerturbedAlgorithm wrong_no_bias(find_conv_algorithm("convgemm"), {},
                                               test::AlsoWrong::forward_without_bias);
  const ConvChoice f = best_of_among({&wrong_no_bias, &ref}, p, cache);
  CHECK(f.algo[0] == &ref);
  CHECK(f.algo[2] == &wrong_no_bias);
  // Nothing correct in some direction: an error naming the problem, not a wrong choice.
  CHECK_THROWS_WITH(best_of_among({&wrong}, p, cache), Catch::Contains("no candidate computes every direction"));
  std::remove(cache.c_str());
}

TEST_CASE("conv_select: a cached choice is reused without timing, by best_of and by auto", "[conv]") {
  cpu::set_threads(1);
  const std::string cache = test::temp_path("best_of_cached.tsv");
  const ConvProblem p = ConvProblem::parse("n2_c16h9w9_k24r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvProblem mixed = ConvProblem::parse("n2_c16h9w9_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvProblem two = ConvProblem::parse("n2_c16h9w9_k40r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvProblem old = ConvProblem::parse("n2_c16h9w9_k48r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvProblem older = ConvProblem::parse("n2_c16h9w9_k56r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  const ConvProblem other = ConvProblem::parse("n2_c16h9w9_k64r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  {
    // The cache names the reference, which timing would never pick: getting it back proves no timing ran.
    std::ofstream f(cache);
    f << "garbage line without tabs\n";
    const std::string build = "\t" + conv_cache_build() + "\t";
    f << conv_cache_cpu() << "\t1" << build << p.str() << "\tcpu.reference\t1.0\tper-direction+build\n";
    f << conv_cache_cpu() << "\t1\t" << old.str() << "\tcpu.reference\t1.0\n";  // an older format's line
    f << conv_cache_cpu() << "\t1\t" << older.str() << "\tcpu.reference\t1.0\tper-direction\n";  // no build
    f << conv_cache_cpu() << "\t1\tabc+dirty flags=0123456789ab\t" << other.str()
      << "\tcpu.reference\t1.0\tper-direction+build\n";  // another build's choice
    f << conv_cache_cpu() << "\t1" << build << p.str() << "x\tcpu.convgemm\t1.0\tper-direction+build\n";  // another problem
    // Per-direction choices (fwd/bwd_data/bwd_filter), and a malformed one with two names.
    f << conv_cache_cpu() << "\t1" << build << mixed.str()
      << "\tcpu.reference/cpu.convgemm/cpu.im2row_gemm\t2.0\tper-direction+build\n";
    f << conv_cache_cpu() << "\t1" << build << two.str() << "\tcpu.reference/cpu.convgemm\t2.0\tper-direction+build\n";
  }
  const ConvChoice b = select_conv_algorithm("best_of", p, Device::cpu, cache);
  CHECK(b.name() == "cpu.reference");
  CHECK(b.how == "best_of (cache)");
  const ConvChoice a = select_conv_algorithm("auto", p, Device::cpu, cache);
  CHECK(a.name() == "cpu.reference");
  CHECK(a.how == "auto (cache)");
  const ConvChoice m = select_conv_algorithm("best_of", mixed, Device::cpu, cache);
  CHECK(m.how == "best_of (cache)");
  CHECK(m.algo[0]->name() == "cpu.reference");
  CHECK(m.algo[1]->name() == "cpu.convgemm");
  CHECK(m.algo[2]->name() == "cpu.im2row_gemm");
  CHECK(m.name() == "cpu.reference/cpu.convgemm/cpu.im2row_gemm");
  CHECK(select_conv_algorithm("auto", two, Device::cpu, cache).how == "heuristic");  // the two-name line is ignored
  CHECK(select_conv_algorithm("auto", old, Device::cpu, cache).how == "heuristic");  // so is the untagged line,
  CHECK(select_conv_algorithm("auto", older, Device::cpu, cache).how == "heuristic");  // the line without a build
  CHECK(select_conv_algorithm("auto", other, Device::cpu, cache).how == "heuristic");  // and another build's choice
  // Another kernel cap (DTNN_MAX_CPU_ISA) is another key: the choice cached without it is not reused. (ctest's
  // conv.avx2_tiles runs these tests with the cap set: it is restored as it was.)
  const char* cap = std::getenv("DTNN_MAX_CPU_ISA");
  const std::string previous = cap ? cap : "";
  ::setenv("DTNN_MAX_CPU_ISA", previous == "AVX2" ? "none-test" : "AVX2", 1);
  CHECK(select_conv_algorithm("auto", p, Device::cpu, cache).how == "heuristic");
  if (cap) ::setenv("DTNN_MAX_CPU_ISA", previous.c_str(), 1);
  else ::unsetenv("DTNN_MAX_CPU_ISA");
  CHECK(select_conv_algorithm("auto", p, Device::cpu, cache).how == "auto (cache)");
  // Another thread count is another key: auto falls back to the heuristic: oneDNN's JIT on AVX-512 CPUs
  // (layers with 16+ filters), else dtnn's convgemm (the preference order).
  const bool avx512_onednn = cpu_has_avx512() && onednn_version() != "not built";
  cpu::set_threads(2);
  const ConvChoice h = select_conv_algorithm("auto", p, Device::cpu, cache);
  CHECK(h.name() == (avx512_onednn ? "cpu.onednn" : "cpu.convgemm"));
  CHECK(h.how == "heuristic");
  cpu::set_threads(1);
  std::remove(cache.c_str());
}

TEST_CASE("conv_select: auto's heuristic special cases, without a cached choice", "[conv]") {
  const std::string cache = test::temp_path("heuristic_empty.tsv");  // never written: auto finds no choice
  std::remove(cache.c_str());
  const bool avx512_onednn = cpu_has_avx512() && onednn_version() != "not built";
  // The heuristic's special cases: image-sized inputs with 16+ filters (cpu.direct, or oneDNN with
  // AVX-512), fewer than 16 filters (im2row_gemm), NCHW depthwise (cpu.depthwise).
  const ConvProblem first = ConvProblem::parse("n2_c3h9w9_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  CHECK(select_conv_algorithm("auto", first, Device::cpu, cache).name() == (avx512_onednn ? "cpu.onednn" : "cpu.direct"));
  const ConvProblem narrow = ConvProblem::parse("n2_c1h9w9_k4r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  CHECK(select_conv_algorithm("auto", narrow, Device::cpu, cache).name() == "cpu.im2row_gemm");
  const ConvProblem dw_nchw = ConvProblem::parse("n2_c16h9w9_k16r3s3_st1x1_pd1x1_dl1x1_g16_nchw_f32");
  CHECK(select_conv_algorithm("auto", dw_nchw, Device::cpu, cache).name() == "cpu.depthwise");
  // 3x3 stride-1 NHWC layers with 16-64 channels in multiples of 16: dtnn's F(4x4,3x3), with its AVX-512 or
  // its AVX2 kernels. Otherwise 3x3 stride-1 layers with 32+ input and output channels take oneDNN's Winograd on
  // AVX-512 (NCHW, more than 64 channels); 16 channels, stride 2 or a 1x1 filter stay with its direct kernels.
  for (const char* s : {"n2_c16h9w9_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32", "n2_c32h9w9_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32",
                        "n2_c64h8w8_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32"})
    CHECK(select_conv_algorithm("auto", ConvProblem::parse(s), Device::cpu, cache).name() == "cpu.winograd_x16_f4");
  for (const char* s : {"n2_c64h8w8_k64r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32", "n2_c512h4w4_k512r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32"})
    CHECK(select_conv_algorithm("auto", ConvProblem::parse(s), Device::cpu, cache).name() ==
          (avx512_onednn ? "cpu.onednn_winograd" : "cpu.convgemm"));
  // 128-256 channels: oneDNN's Winograd on AVX-512; dtnn's F(4x4,3x3) with its AVX2 kernels elsewhere.
  for (const char* s : {"n2_c128h4w4_k128r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32", "n2_c128h4w4_k256r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32"})
    CHECK(select_conv_algorithm("auto", ConvProblem::parse(s), Device::cpu, cache).name() ==
          (avx512_onednn ? "cpu.onednn_winograd" : cpu_has_avx512() ? "cpu.convgemm" : "cpu.winograd_x16_f4"));
  for (const char* s : {"n2_c32h9w9_k32r3s3_st2x2_pd1x1_dl1x1_g1_nhwc_f32", "n2_c32h9w9_k32r1s1_st1x1_pd0x0_dl1x1_g1_nhwc_f32"})
    CHECK(select_conv_algorithm("auto", ConvProblem::parse(s), Device::cpu, cache).name() ==
          (avx512_onednn ? "cpu.onednn" : "cpu.convgemm"));
  CHECK(select_conv_algorithm("auto", dw_nchw, Device::cpu, cache).how == "heuristic");
}

TEST_CASE("conv_select: named algorithms, fallbacks with a reason, unknown names", "[conv]") {
  const ConvProblem nchw = ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32");
  const ConvChoice c = select_conv_algorithm("im2row_gemm", nchw, Device::cpu, test::temp_path("unused.tsv"));
  CHECK(c.name() == "cpu.convgemm");
  CHECK(c.how == "fallback");
  CHECK(c.note.find("NHWC") != std::string::npos);
  CHECK(select_conv_algorithm("im2col_gemm", nchw, Device::cpu, "").how == "requested");
  CHECK_THROWS_AS(select_conv_algorithm("fastest_please", nchw, Device::cpu, ""), Error);
  // Grouped (not depthwise) convolutions: of the non-reference algorithms onednn and cpu.direct take
  // them in NHWC, only onednn in NCHW (so best_of times one there).
  const std::string cache = test::temp_path("grouped.tsv");
  const ConvProblem grouped = ConvProblem::parse("n1_c8h6w6_k8r3s3_st1x1_pd1x1_dl1x1_g2_nhwc_f32");
  const ConvChoice g = select_conv_algorithm("best_of", grouped, Device::cpu, cache);
  const bool onednn = onednn_version() != "not built";
  for (const ConvAlgorithm* a : g.algo) CHECK((a->name() == "cpu.onednn" || a->name() == "cpu.direct"));
  CHECK(g.how == "best_of (timed)");
  CHECK((g.note.find("cpu.onednn") != std::string::npos) == onednn);
  CHECK(g.note.find("cpu.direct") != std::string::npos);
  const ConvProblem grouped_nchw = ConvProblem::parse("n1_c8h6w6_k8r3s3_st1x1_pd1x1_dl1x1_g2_nchw_f32");
  const ConvChoice gn = select_conv_algorithm("best_of", grouped_nchw, Device::cpu, cache);
  CHECK(gn.name() == (onednn ? "cpu.onednn" : "cpu.reference"));
  // Depthwise NHWC: onednn, cpu.depthwise and cpu.direct take it; best_of times all and keeps one of them.
  const ConvProblem depthwise = ConvProblem::parse("n1_c8h6w6_k8r3s3_st1x1_pd1x1_dl1x1_g8_nhwc_f32");
  const ConvChoice d = select_conv_algorithm("best_of", depthwise, Device::cpu, cache);
  for (const ConvAlgorithm* a : d.algo)
    CHECK((a->name() == "cpu.onednn" || a->name() == "cpu.depthwise" || a->name() == "cpu.direct"));
  CHECK((d.note.find("cpu.onednn") != std::string::npos) == onednn);
  CHECK(d.note.find("cpu.depthwise") != std::string::npos);
  CHECK(d.note.find("cpu.direct") != std::string::npos);
  std::remove(cache.c_str());
}

TEST_CASE("conv: the GPU algorithm names every build knows are this build's GPU algorithms", "[conv]") {
  std::vector<std::string> built;
  for (const ConvAlgorithm* a : gpu_conv_algorithms()) built.emplace_back(a->name());
  CHECK(canonical_conv_algorithm_name("cudnn.fft") == "gpu.cudnn.fft");
  CHECK(canonical_conv_algorithm_name("gpu.cudnn_find") == "gpu.cudnn_find");
  CHECK(canonical_conv_algorithm_name("im2row_gemm") == "cpu.im2row_gemm");
  CHECK_THROWS_WITH(canonical_conv_algorithm_name("cudnn.magic"), Catch::Contains("unknown convolution algorithm"));
  if (built.empty()) {  // a build without CUDA: a GPU name is a clear 'unsupported', not an unknown name
    CHECK_THROWS_AS(find_conv_algorithm("gpu.cudnn.fft"), Unsupported);
  } else {
    CHECK(built == gpu_conv_algorithm_names());
  }
}

TEST_CASE("conv: a direction an algorithm has no code for is a code, not a text, on every machine", "[conv]") {
  // cuDNN's forward-only algorithms have no bwd_data: no_such_direction whether or not a device is here
  // (the tables leave such cells out); every CPU algorithm's decline is 'declined'.
  const ConvProblem p = ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32");
  if (!gpu_conv_algorithms().empty()) {
    const ConvAlgorithm& fwd_only = find_conv_algorithm("gpu.cudnn.implicit_gemm");
    CHECK(fwd_only.supports_dir(p, ConvDir::bwd_data).code == SupportCode::no_such_direction);
    CHECK(fwd_only.supports_dir(p, ConvDir::bwd_filter).code == SupportCode::no_such_direction);
    CHECK(fwd_only.supports_dir(p, ConvDir::fwd).code != SupportCode::no_such_direction);
  }
  const Support s = find_conv_algorithm("im2row_gemm").supports(p);  // NHWC only
  CHECK(s.code == SupportCode::declined);
  CHECK_FALSE(s.ok());
  CHECK(Support::yes().ok());
}
