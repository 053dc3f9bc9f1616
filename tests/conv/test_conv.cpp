// Every convolution algorithm against the reference on random problems, all three directions.
#include <catch2/catch.hpp>
#include <map>

#include "backend/cpu/blas.h"
#include "conv/conv_algorithm.h"
#include "conv/conv_select.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "helpers.h"

using namespace dtnn;

namespace {

ConvProblem random_problem(Rng& rng, Layout layout) {
  ConvProblem p;
  for (;;) {
    p.layout = layout;
    p.n = 1 + static_cast<int64_t>(rng.below(4));
    p.c = 1 + static_cast<int64_t>(rng.below(9));
    p.k = 1 + static_cast<int64_t>(rng.below(9));
    p.h = 1 + static_cast<int64_t>(rng.below(13));
    p.w = 1 + static_cast<int64_t>(rng.below(13));  // non-square and odd sizes
    p.r = 1 + static_cast<int64_t>(rng.below(4));
    p.s = 1 + static_cast<int64_t>(rng.below(4));
    p.stride_h = 1 + static_cast<int64_t>(rng.below(3));
    p.stride_w = 1 + static_cast<int64_t>(rng.below(3));
    p.pad_h = static_cast<int64_t>(rng.below(3));
    p.pad_w = static_cast<int64_t>(rng.below(3));
    p.dil_h = 1 + static_cast<int64_t>(rng.below(2));
    p.dil_w = 1 + static_cast<int64_t>(rng.below(2));
    if (p.p() > 0 && p.q() > 0) return p;
  }
}

std::vector<ConvProblem> problems() {
  std::vector<ConvProblem> out;
  Rng rng(2024);
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    for (int i = 0; i < 40; ++i) out.push_back(random_problem(rng, layout));
    const char* fixed[] = {
        "n1_c1h28w28_k4r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",   // simplecnn, batch 1
        "n2_c4h28w28_k8r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        "n2_c16h7w5_k8r1s1_st1x1_pd0x0_dl1x1_g1_%s_f32",    // 1x1 (pointwise path)
        "n3_c5h9w11_k6r1s1_st2x2_pd0x0_dl1x1_g1_%s_f32",    // 1x1 stride 2 (not the pointwise path)
        "n2_c3h11w11_k4r3s3_st2x2_pd1x1_dl1x1_g1_%s_f32",   // stride 2
        "n1_c3h10w12_k5r3s3_st1x1_pd2x2_dl2x2_g1_%s_f32",   // dilation
        "n2_c3h9w7_k4r5s2_st1x2_pd2x0_dl1x1_g1_%s_f32",     // rectangular filter, asymmetric stride
        "n1_c70h6w6_k3r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",    // many channels (generic copy path)
        "n2_c3h9w21_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",   // K = 16: im2row + skinny GEMM with two vectors
        "n1_c2h5w37_k4r3s2_st1x1_pd1x0_dl1x2_g1_%s_f32",    // K = 4, wide rows: pixel pairs + overlapping tail
        "n1_c5h6w19_k8r2s3_st2x2_pd0x1_dl1x1_g1_%s_f32",    // K = 8, stride 2, overlapping last block
        // C = 1, 3x3 (implicit weight gradient): odd width (K = 4 tail pixel), K = 8 with stride and
        // dilation, and a whole simplecnn-sized batch (long sums).
        "n2_c1h9w13_k4r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        "n2_c1h11w12_k4r3s3_st2x1_pd0x2_dl2x1_g1_%s_f32",
        "n1_c1h10w11_k8r3s3_st2x3_pd1x0_dl1x2_g1_%s_f32",
        "n64_c1h28w28_k4r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        // Register-tile edges of the implicit GEMMs (tiles of 6 pixels x 16 channels, 6 x 16 weight tiles):
        // K and C not multiples of 16 or 6, stride-2 and stride-3 phases of backward_data, padding wider
        // than the dilated filter (negative transposed padding), fewer pixels than one tile.
        "n2_c20h7w9_k37r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        "n3_c33h9w8_k17r3s3_st2x2_pd1x1_dl1x1_g1_%s_f32",
        "n1_c16h5w5_k13r3s3_st1x1_pd3x3_dl1x1_g1_%s_f32",
        "n2_c17h9w7_k6r2s2_st3x2_pd2x1_dl2x1_g1_%s_f32",
        "n1_c16h2w2_k16r1s1_st1x1_pd0x0_dl1x1_g1_%s_f32",
        "n2_c32h6w6_k32r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        // Winograd: partial tiles, padding 0 and 2, one tile in all
        "n3_c24h11w13_k40r3s3_st1x1_pd0x2_dl1x1_g1_%s_f32",
        "n1_c8h3w3_k8r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        // oneDNN's Winograd (channels in multiples of 16): partial 4x4 tiles, padding 0, K != C
        "n3_c16h11w9_k32r3s3_st1x1_pd0x1_dl1x1_g1_%s_f32",
        "n2_c32h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        // grouped, depthwise (stride 1 and 2) and depthwise with a channel multiplier
        "n2_c6h5w6_k9r3s3_st1x1_pd1x1_dl1x1_g3_%s_f32",
        "n2_c8h7w7_k8r3s3_st1x1_pd1x1_dl1x1_g8_%s_f32",
        "n1_c16h9w9_k16r3s3_st2x2_pd1x1_dl1x1_g16_%s_f32",
        "n1_c4h6w6_k8r3s3_st1x1_pd1x1_dl1x1_g4_%s_f32",
        "n2_c12h7w8_k18r3s3_st2x1_pd1x1_dl1x1_g2_%s_f32",   // groups of 6 input and 9 output channels
        // an empty batch: every weight gradient is zero (border and edge-tile paths included)
        "n0_c3h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        "n0_c16h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",
        "n0_c16h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g16_%s_f32",  // depthwise: NHWC copied unzeroed partial sums
        // 9x8 filter: more taps than cpu.direct's kernels take per call (64), summed over two calls
        "n1_c3h12w13_k5r9s8_st1x1_pd4x3_dl1x1_g1_%s_f32",
    };
    for (const char* f : fixed) {
      char buf[128];
      std::snprintf(buf, sizeof buf, f, layout == Layout::nhwc ? "nhwc" : "nchw");
      out.push_back(ConvProblem::parse(buf));
    }
  }
  return out;
}

// Runs every algorithm that `want` selects on p (random data, bias on most calls) against the reference
// in all three directions; counts the problems each one checked or declined (with a reason).
template <typename Want>
void check_against_reference(const ConvProblem& p, Rng& rng, Want&& want, std::map<std::string, int>& checked,
                             std::map<std::string, int>& declined) {
  const ConvAlgorithm& ref = find_conv_algorithm("reference");
  std::vector<float> x(p.x_numel()), w(p.w_numel()), dy(p.y_numel()), bias(p.k);
  test::fill_uniform(x, rng);
  test::fill_uniform(w, rng);
  test::fill_uniform(dy, rng);
  test::fill_uniform(bias, rng);
  const bool with_bias = rng.below(4) != 0;  // most cases with bias, some without
  const float* b = with_bias ? bias.data() : nullptr;
  const test::Workspace ws_ref(ref.workspace_floats(p));
  std::vector<float> y_ref(p.y_numel()), dx_ref(p.x_numel()), dw_ref(p.w_numel()), db_ref(p.k);
  ref.forward(p, x.data(), w.data(), b, y_ref.data(), ws_ref.data());
  ref.backward_data(p, dy.data(), w.data(), dx_ref.data(), ws_ref.data());
  ref.backward_filter(p, x.data(), dy.data(), dw_ref.data(), db_ref.data(), ws_ref.data());
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    const std::string name(algo->name());
    if (algo == &ref || !want(name)) continue;
    const Support s = algo->supports(p);
    if (!s.ok()) {
      CHECK_FALSE(s.why.empty());
      ++declined[name];
      continue;
    }
    ++checked[name];
    // Poisoned outputs: the algorithm must overwrite, not accumulate. y and dx 64-byte aligned (as a model's
    // tensors: the x16 Winograds stream their outputs there) for every other problem, 16 bytes off for the rest.
    const test::Workspace ws(algo->workspace_floats(p), 1e30f);
    const test::Workspace y_buf(p.y_numel() + 4, 9.0f), dx_buf(p.x_numel() + 4, 9.0f);
    const int64_t off = checked[name] % 2 ? 0 : 4;
    float* y = y_buf.data() + off;
    float* dx = dx_buf.data() + off;
    std::vector<float> dw(p.w_numel(), 9.0f), db(p.k, 9.0f);
    algo->forward(p, x.data(), w.data(), b, y, ws.data());
    algo->backward_data(p, dy.data(), w.data(), dx, ws.data());
    algo->backward_filter(p, x.data(), dy.data(), dw.data(), db.data(), ws.data());
    INFO(name << " on " << p.str() << (off ? " (outputs 16 bytes off alignment)" : " (aligned outputs)"));
    CHECK(test::max_rel_error(y, y_ref.data(), p.y_numel()) < conv_tolerance(*algo, p, ConvDir::fwd));
    CHECK(test::max_rel_error(dx, dx_ref.data(), p.x_numel()) < conv_tolerance(*algo, p, ConvDir::bwd_data));
    const double filter_tol = conv_tolerance(*algo, p, ConvDir::bwd_filter);
    CHECK(test::max_rel_error(dw.data(), dw_ref.data(), p.w_numel()) < filter_tol);
    CHECK(test::max_rel_error(db.data(), db_ref.data(), p.k) < filter_tol);
  }
}

// A random problem from one algorithm family's domain: 0 any, 1 Winograd's (3x3, stride 1, NHWC),
// 2 depthwise (channel multiplier 1 or 2), 3 grouped (2 or 3 groups).
ConvProblem random_problem_of_kind(Rng& rng, Layout layout, int kind) {
  for (;;) {
    ConvProblem p = random_problem(rng, layout);
    if (kind == 1) {
      p.layout = Layout::nhwc;
      p.r = p.s = 3, p.stride_h = p.stride_w = 1, p.dil_h = p.dil_w = 1;
      if (rng.below(2)) {  // oneDNN's Winograd: channels in multiples of 16, either layout
        p.layout = layout;
        p.c = 16 * (1 + static_cast<int64_t>(rng.below(2)));
        p.k = 16 * (1 + static_cast<int64_t>(rng.below(2)));
      }
    } else if (kind == 2) {
      p.c = 2 + static_cast<int64_t>(rng.below(7));
      p.groups = p.c;
      p.k = p.c * (1 + static_cast<int64_t>(rng.below(2)));
    } else if (kind == 3) {
      p.groups = 2 + static_cast<int64_t>(rng.below(2));
      p.c = p.groups * (1 + static_cast<int64_t>(rng.below(4)));
      p.k = p.groups * (1 + static_cast<int64_t>(rng.below(4)));
    }
    if (p.p() > 0 && p.q() > 0) return p;
  }
}

}  // namespace

TEST_CASE("conv: problem strings round-trip and bad strings are rejected", "[conv]") {
  for (const ConvProblem& p : problems()) CHECK(ConvProblem::parse(p.str()).str() == p.str());
  CHECK_THROWS_AS(ConvProblem::parse("n64_c64h32w32"), Error);
  CHECK_THROWS_AS(ConvProblem::parse("n1_c1h2w2_k1r3s3_st1x1_pd0x0_dl1x1_g1_nhwc_f32"), Error);  // filter too big
  CHECK_THROWS_AS(ConvProblem::parse("n1_c3h3w6_k8r4s3_st3x2_pd0x0_dl1x1_g1_nhwc_f32"), Error);  // not 1 output row
  CHECK_THROWS_AS(ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd0x0_dl1x1_g2_nhwc_f32"), Error);  // groups
  CHECK_THROWS_AS(ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd0x0_dl1x1_g1_nhwc_f64"), Error);
  CHECK_THROWS_AS(ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd0x0_dl1x1_g1_nhwc_f32x"), Error);
  // Sizes that would overflow the output-size arithmetic (a padding of 2^63 - 1 crashed it once).
  CHECK_THROWS_WITH(ConvProblem::parse("n1_c4h8w8_k4r3s3_st1x1_pd9223372036854775807x1_dl1x1_g1_nhwc_f32"),
                    Catch::Contains("at most 16777216"));
  CHECK_THROWS_WITH(ConvProblem::parse("n1_c4h99999999999999999999w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32"),
                    Catch::Contains("out of range"));
  CHECK_THROWS_WITH(ConvProblem::parse("n16384_c16384h16384w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32"),
                    Catch::Contains("more than 2^36 elements"));
  CHECK(ConvProblem::parse("n0_c4h8w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32").n == 0);  // an empty batch is a problem
}

TEST_CASE("conv: every algorithm matches the reference in all directions", "[conv]") {
  std::map<std::string, int> checked, declined;
  Rng rng(7);
  for (const ConvProblem& p : problems()) check_against_reference(p, rng, [](const std::string&) { return true; }, checked, declined);
  // Each GEMM algorithm takes its own layout (groups == 1) and declines the rest with a reason.
  CHECK(checked["cpu.im2row_gemm"] >= 30);
  CHECK(checked["cpu.im2col_gemm"] >= 30);
  CHECK(checked["cpu.convgemm"] == checked["cpu.im2row_gemm"] + checked["cpu.im2col_gemm"]);  // both layouts
  CHECK(checked["cpu.winograd_f2"] >= 10);  // the NHWC 3x3 stride-1 problems
  CHECK(checked["cpu.winograd_f4"] == checked["cpu.winograd_f2"]);
  if (onednn_version() != "not built")
    CHECK(checked["cpu.onednn"] == static_cast<int>(problems().size()));  // every problem, groups included
  else
    CHECK(declined["cpu.onednn"] == static_cast<int>(problems().size()));  // DTNN_ONEDNN=OFF: declines with a reason
  if (onednn_version() != "not built" && cpu_has_avx512())  // 3x3 stride 1, channels in multiples of 16
    CHECK(checked["cpu.onednn_winograd"] == 6);
  CHECK(checked["cpu.winograd_x16"] == 4);  // the NHWC ones, the empty batch too (AVX-512 or AVX2 kernels)
  CHECK(checked["cpu.winograd_x16_f4"] == checked["cpu.winograd_x16"]);
  CHECK(checked["cpu.depthwise"] >= 6);  // the 3 depthwise problems of each layout (multiplier 1 and 2)
  CHECK(checked["cpu.direct"] == static_cast<int>(problems().size()) / 2);  // every NHWC problem, groups included
  CHECK(declined["cpu.direct"] == static_cast<int>(problems().size()) / 2);
}

TEST_CASE("conv: every algorithm on at least 50 random problems of its own domain", "[conv]") {
  // Random problems drawn from each family's domain (any, Winograd's, depthwise, grouped; both layouts,
  // batch 1 included) until every algorithm has checked 50; an algorithm is only run while it needs cases.
  std::map<std::string, int> checked, declined;
  Rng rng(99);
  auto needs = [&](const std::string& name) { return checked[name] < 50; };
  std::vector<std::string> names;
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->name() != "cpu.reference" && (a->name() != "cpu.onednn" || onednn_version() != "not built") &&
        (a->name() != "cpu.onednn_winograd" || (onednn_version() != "not built" && cpu_has_avx512())))
      names.emplace_back(a->name());
  for (int i = 0; i < 3000; ++i) {
    bool done = true;
    for (const std::string& n : names) done &= !needs(n);
    if (done) break;
    const Layout layout = i % 2 ? Layout::nchw : Layout::nhwc;
    check_against_reference(random_problem_of_kind(rng, layout, i / 2 % 4), rng, needs, checked, declined);
  }
  for (const std::string& n : names) {
    INFO(n << " declined " << declined[n] << " problems");
    CHECK(checked[n] >= 50);
  }
}

// backward() is backward_filter then backward_data on one dy; an algorithm that prepares dy once for both
// (oneDNN's staged reorder or bf16 rounding) must give the two calls' results bit for bit.
TEST_CASE("conv: backward() gives the results of backward_filter and backward_data", "[conv]") {
  Rng rng(13);
  int compared = 0;
  std::vector<const ConvAlgorithm*> algos(conv_algorithms().begin(), conv_algorithms().end());
  algos.push_back(&find_conv_algorithm("onednn_bf16"));
  for (const char* s : {"n2_c32h9w9_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32", "n2_c16h8w8_k32r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32",
                        "n3_c5h9w11_k6r1s1_st2x2_pd0x0_dl1x1_g1_nhwc_f32"}) {
    const ConvProblem p = ConvProblem::parse(s);
    std::vector<float> x(p.x_numel()), w(p.w_numel()), dy(p.y_numel());
    for (auto* v : {&x, &w, &dy}) test::fill_uniform(*v, rng);
    for (const ConvAlgorithm* algo : algos) {
      if (algo->name() == "cpu.reference" || !algo->supports(p).ok()) continue;
      INFO(algo->name() << " on " << p.str());
      std::vector<float> dx[2], dw[2], db[2];
      for (int pair = 0; pair < 2; ++pair) {
        dx[pair].assign(p.x_numel(), 9.0f), dw[pair].assign(p.w_numel(), 9.0f), db[pair].assign(p.k, 9.0f);
        const test::Workspace ws(algo->workspace_floats(p), 1e30f);
        if (pair) {
          algo->backward_filter(p, x.data(), dy.data(), dw[1].data(), db[1].data(), ws.data());
          algo->backward_data(p, dy.data(), w.data(), dx[1].data(), ws.data());
        } else {
          algo->backward(p, x.data(), dy.data(), w.data(), dx[0].data(), dw[0].data(), db[0].data(), ws.data());
        }
      }
      CHECK(dx[0] == dx[1]);
      CHECK(dw[0] == dw[1]);
      CHECK(db[0] == db[1]);
      ++compared;
    }
  }
  CHECK(compared >= 9);
}

TEST_CASE("conv: the registry resolves names, falls back with a reason, rejects unknown names", "[conv]") {
  CHECK(find_conv_algorithm("im2row_gemm").name() == "cpu.im2row_gemm");
  CHECK(find_conv_algorithm("cpu.im2col_gemm").name() == "cpu.im2col_gemm");
  CHECK_THROWS_AS(find_conv_algorithm("winograd_9000"), Error);
  const ConvProblem nchw = ConvProblem::parse("n1_c3h8w8_k4r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32");
  const ConvChoice fb = select_conv_algorithm("im2row_gemm", nchw);
  CHECK(fb.algo[0]->name() == "cpu.convgemm");  // first for both layouts
  CHECK(fb.how == "fallback");
  CHECK(fb.note.find("NHWC") != std::string::npos);
  const ConvProblem grouped = ConvProblem::parse("n1_c4h8w8_k4r3s3_st1x1_pd1x1_dl1x1_g2_nchw_f32");
  const ConvChoice g = select_conv_algorithm("convgemm", grouped);
  CHECK(g.algo[0]->name() != "cpu.convgemm");
  CHECK(g.note.find("groups") != std::string::npos);
  CHECK(select_conv_algorithm("reference", nchw).how == "requested");
  // A GPU algorithm's name on the CPU falls back with the reason, and the reverse on the GPU.
  if (!gpu_conv_algorithms().empty()) {  // CUDA builds
    CHECK(select_conv_algorithm("gpu.cudnn_find", nchw).note.find("runs on the GPU") != std::string::npos);
    const ConvChoice cpu_on_gpu = select_conv_algorithm("convgemm", nchw, Device::gpu);
    CHECK(cpu_on_gpu.how == "fallback");
    CHECK(cpu_on_gpu.algo[1]->name() == "gpu.cudnn_find");
  }
}

// The OpenMP-threaded algorithms split outputs between threads: two threads must give bit-identical
// results to one (Winograd's weight gradient, which reduces per-thread partials, within rounding).
TEST_CASE("conv: threaded algorithms give bit-identical results at 1 and 2 threads", "[conv]") {
  Rng rng(11);
  int compared = 0;
  for (const ConvProblem& p : problems()) {
    for (const ConvAlgorithm* algo : {&find_conv_algorithm("convgemm"), &find_conv_algorithm("winograd_f2"),
                                      &find_conv_algorithm("winograd_f4"), &find_conv_algorithm("winograd_x16"),
                                      &find_conv_algorithm("winograd_x16_f4"),
                                      &find_conv_algorithm("depthwise"), &find_conv_algorithm("direct")}) {
      if (!algo->supports(p).ok()) continue;
      std::vector<float> x(p.x_numel()), w(p.w_numel()), dy(p.y_numel()), bias(p.k);
      for (auto* v : {&x, &w, &dy, &bias}) test::fill_uniform(*v, rng);
      std::vector<float> out[2][4];
      for (int threads : {1, 2}) {
        cpu::set_threads(threads);
        const test::Workspace ws(algo->workspace_floats(p));
        auto& o = out[threads - 1];
        o[0].assign(p.y_numel(), 0.0f), o[1].assign(p.x_numel(), 0.0f), o[2].assign(p.w_numel(), 0.0f);
        o[3].assign(p.k, 0.0f);
        algo->forward(p, x.data(), w.data(), bias.data(), o[0].data(), ws.data());
        algo->backward_data(p, dy.data(), w.data(), o[1].data(), ws.data());
        algo->backward_filter(p, x.data(), dy.data(), o[2].data(), o[3].data(), ws.data());
      }
      cpu::set_threads(1);
      const std::string name(algo->name());
      INFO(name << " on " << p.str());
      // Winograd's weight gradient sums per-thread partials: equal up to rounding (F(4x4,3x3)'s transforms
      // amplify it, as in its tolerance against the reference), not bit for bit.
      const bool exact_filter = algo->name() != "cpu.winograd_f2" && algo->name() != "cpu.winograd_f4" &&
                                algo->name() != "cpu.winograd_x16" && algo->name() != "cpu.winograd_x16_f4";
      for (int d = 0; d < 4; ++d)
        if (d != 2 || exact_filter) CHECK(out[0][d] == out[1][d]);
      CHECK(test::max_rel_error(out[1][2].data(), out[0][2].data(), p.w_numel()) < algo->tolerance() / 2);
      ++compared;
    }
  }
  CHECK(compared >= 30);
}
