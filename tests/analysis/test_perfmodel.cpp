// The analytic performance model (analysis/perfmodel): collective formulas against values computed by hand,
// Open MPI's decision rule at its thresholds, the fit, the step schedule on a hand-built profile, and
// PyDTNN's formulas against values computed by hand from pydtnn/performance_models.py.
#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/perfmodel/collective_fit.h"
#include "analysis/perfmodel/collective_model.h"
#include "analysis/perfmodel/pydtnn_model.h"
#include "analysis/perfmodel/step_model.h"
#include "core/error.h"

using namespace dtnn::perf;
using Catch::Matchers::Contains;

namespace {

const LinkCost kLink{1e-6, 1e-9, 1e-10};  // alpha 1 us, beta 1 ns/B, gamma 0.1 ns/B
constexpr double kN = 1e6;                // bytes

double t(AllreduceAlgorithm a, int p) { return allreduce_time(a, p, kN, kLink); }

}  // namespace

TEST_CASE("collective model: ring, recursive doubling, Rabenseifner and binomial by hand for p = 2, 4, 6, 8",
          "[perfmodel]") {
  using A = AllreduceAlgorithm;
  // ring: 2(p-1) a + 2(p-1)/p n b + (p-1)/p n g
  CHECK(t(A::ring, 2) == Approx(2e-6 + 1e-3 + 0.5e-4).epsilon(1e-12));
  CHECK(t(A::ring, 4) == Approx(6e-6 + 1.5e-3 + 0.75e-4).epsilon(1e-12));
  CHECK(t(A::ring, 6) == Approx(10e-6 + 1.75e-3).epsilon(1e-12));  // 10/6 ms + 5/6 * 0.1 ms = 1.75 ms
  CHECK(t(A::ring, 8) == Approx(14e-6 + 1.75e-3 + 0.875e-4).epsilon(1e-12));
  // recursive doubling: log2 p (a + n b + n g); p = 6: p' = 4, L = 2: 4 a + 4 n b + 3 n g
  CHECK(t(A::recursive_doubling, 2) == Approx(1.101e-3).epsilon(1e-12));
  CHECK(t(A::recursive_doubling, 4) == Approx(2.202e-3).epsilon(1e-12));
  CHECK(t(A::recursive_doubling, 6) == Approx(4e-6 + 4e-3 + 3e-4).epsilon(1e-12));
  CHECK(t(A::recursive_doubling, 8) == Approx(3.303e-3).epsilon(1e-12));
  // Rabenseifner: 2 log2 p a + 2(p-1)/p n b + (p-1)/p n g; p = 6: 7 a + (1.5 + 2) n b + (0.75 + 0.5) n g
  CHECK(t(A::rabenseifner, 2) == Approx(2e-6 + 1e-3 + 0.5e-4).epsilon(1e-12));
  CHECK(t(A::rabenseifner, 4) == Approx(4e-6 + 1.5e-3 + 0.75e-4).epsilon(1e-12));
  CHECK(t(A::rabenseifner, 6) == Approx(7e-6 + 3.5e-3 + 1.25e-4).epsilon(1e-12));
  CHECK(t(A::rabenseifner, 8) == Approx(6e-6 + 1.75e-3 + 0.875e-4).epsilon(1e-12));
  // libnbc's binomial: reduce ceil(log2 p)(a + n b + n g), then a bcast whose ranks post all their sends at once
  // (they share the link). By hand on the tree: p = 2: 2 a + 2 n b + n g. p = 6: reduce 3 rounds; root -> 1, 2, 4
  // (3 sends: 1 a + 3 n b), 1 -> 3, 5 (2 more: 2 a + 5 n b). p = 8: root -> 1, 2, 4 (3), 1 -> 3, 5 (2), 3 -> 7
  // (1): 3 a + 6 n b. SimGrid's flows agree on a fat tree up to 16 ranks (results/baselines/model_vs_simgrid.md).
  CHECK(t(A::binomial, 2) == Approx(2e-6 + 2e-3 + 1e-4).epsilon(1e-12));
  CHECK(t(A::binomial, 6) == Approx(5e-6 + 8e-3 + 3e-4).epsilon(1e-12));
  CHECK(t(A::binomial, 8) == Approx(6e-6 + 9e-3 + 3e-4).epsilon(1e-12));
  CHECK(allreduce_terms(A::binomial, 256, 1.0).c_beta == Approx(8 + 36));  // L + L(L+1)/2, L = 8
  CHECK(t(A::all_to_all, 4) == Approx(1e-6 + 3e-3 + 3e-4).epsilon(1e-12));
  // One rank costs nothing; ring with fewer floats than ranks is Open MPI's recursive doubling.
  CHECK(t(A::ring, 1) == 0.0);
  CHECK(allreduce_time(A::ring, 4, 8, kLink) == Approx(2 * (1e-6 + 8e-9 + 8e-10)).epsilon(1e-12));
  CHECK(allreduce_time(A::rabenseifner, 8, 16, kLink) == allreduce_time(A::linear, 8, 16, kLink));
  CHECK_THROWS_WITH(parse_algorithm("tree"), Contains("unknown allreduce algorithm 'tree'"));
}

TEST_CASE("collective model: Open MPI 4.1's choice at its thresholds, libnbc's and SimGrid's", "[perfmodel]") {
  using A = AllreduceAlgorithm;
  const auto c = [](int p, double b) { return choose_allreduce(p, b); };
  // 2 ranks: ring < 8 B, recursive doubling < 4 KiB, ring < 8 KiB, rd < 16 KiB, ring (and segmented ring)
  // < 256 KiB, Rabenseifner from 256 KiB.
  CHECK(c(2, 7) == A::ring);
  CHECK(c(2, 8) == A::recursive_doubling);
  CHECK(c(2, 4095) == A::recursive_doubling);
  CHECK(c(2, 4096) == A::ring);
  CHECK(c(2, 8192) == A::recursive_doubling);
  CHECK(c(2, 16384) == A::ring);
  CHECK(c(2, 262143) == A::ring);
  CHECK(c(2, 262144) == A::rabenseifner);
  CHECK(c(4, 15) == A::ring);
  CHECK(c(4, 16) == A::recursive_doubling);
  CHECK(c(4, 8191) == A::recursive_doubling);
  CHECK(c(4, 8192) == A::rabenseifner);
  CHECK(c(8, 8191) == A::recursive_doubling);
  CHECK(c(8, 8192) == A::rabenseifner);
  CHECK(c(16, 63) == A::ring);  // segmented ring
  CHECK(c(16, 4095) == A::recursive_doubling);
  CHECK(c(16, 4096) == A::rabenseifner);
  CHECK(c(64, 262144) == A::rabenseifner);
  CHECK(c(128, 131071) == A::binomial);  // nonoverlapping (tuned reduce + bcast)
  CHECK(c(128, 131072) == A::recursive_doubling);
  CHECK(c(128, 262143) == A::recursive_doubling);
  CHECK(c(128, 262144) == A::rabenseifner);
  CHECK(c(256, 4095) == A::binomial);
  CHECK(c(256, 4096) == A::rabenseifner);
  // libnbc: in place (dtnn) always binomial; otherwise binomial below 4 ranks or 64 KiB, then Rabenseifner.
  CHECK(choose_iallreduce(256, 64e6) == A::binomial);
  CHECK(choose_iallreduce(4, 65535, false) == A::binomial);
  CHECK(choose_iallreduce(4, 65536, false) == A::rabenseifner);
  CHECK(choose_iallreduce(3, 1e9, false) == A::binomial);
  // SimGrid 3.32's ompi selector (smpi_openmpi_selector.cpp, read by hand: Open MPI 4's table, not 1.x's
  // "recursive doubling below 10,000 B, else ring") and its Iallreduce. smpirun agrees: 16 ranks, 1 MiB on
  // ib100_fattree.xml take 161.3 us with the selector and with smpi/allreduce:rab_rdb, 172.3 with lr.
  CHECK(choose_allreduce(8, 8191, CollectiveRules::simgrid) == A::recursive_doubling);
  CHECK(choose_allreduce(8, 9999, CollectiveRules::simgrid) == A::rabenseifner);
  CHECK(choose_allreduce(16, 1048576, CollectiveRules::simgrid) == A::rabenseifner);
  CHECK(choose_allreduce(128, 131071, CollectiveRules::simgrid) == A::binomial);  // redbcast
  CHECK(choose_allreduce(2, 65536, CollectiveRules::simgrid) == A::ring);         // ompi_ring_segmented
  CHECK(choose_iallreduce(8, 1e6, true, CollectiveRules::simgrid) == A::all_to_all);
  CHECK(find_platform("ib100").link_for(2).beta == Approx(8.0 / 100e9));
  CHECK(find_platform("nvlink8").link_for(8).beta == Approx(1.0 / 300e9));  // suites/step_replay/platforms/nvlink8.xml
  CHECK(find_platform("dgx1v_ib4x100").link_for(8).beta == Approx(1.0 / 150e9));  // V100 NVLink 2
  CHECK(find_platform("nvlink8").link_for(9).beta == Approx(8.0 / 100e9));
  CHECK_THROWS_WITH(find_platform("myrinet"), Contains("unknown platform 'myrinet' (known: eth10g, ib100"));
}

TEST_CASE("collective fit: recovers alpha, beta and gamma from synthetic points and reports residuals", "[perfmodel]") {
  const LinkCost truth{2.5e-6, 0.4e-9, 0.08e-9};
  std::vector<FitPoint> points;
  for (int p : {2, 4, 6, 8, 16, 64})
    for (double bytes = 4; bytes <= 64e6; bytes *= 4)
      for (const char* op : {"allreduce", "iallreduce"}) {
        const AllreduceAlgorithm a = std::string(op) == "allreduce" ? choose_allreduce(p, bytes)
                                                                    : choose_iallreduce(p, bytes);
        points.push_back({op, p, bytes, allreduce_time(a, p, bytes, truth)});
      }
  FitOptions o;
  const FitResult fit = fit_link(points, o);
  CHECK(fit.link.alpha == Approx(truth.alpha).epsilon(1e-6));
  CHECK(fit.link.beta == Approx(truth.beta).epsilon(1e-6));
  CHECK(fit.link.gamma == Approx(truth.gamma).epsilon(1e-6));
  REQUIRE(fit.residual_rel.size() == points.size());
  CHECK(fit.max_abs_rel < 1e-6);
  CHECK(fit.notes.empty());
  CHECK_THAT(describe_fit(fit), Contains("residual") && Contains("rabenseifner"));

  // 2-rank points of one algorithm: beta and gamma always appear as beta + gamma/2, so they cannot be fitted
  // apart; with gamma fixed, alpha and beta are recovered.
  std::vector<FitPoint> two;
  for (double bytes = 262144; bytes <= 16e6; bytes *= 2)
    two.push_back({"allreduce", 2, bytes, allreduce_time(AllreduceAlgorithm::rabenseifner, 2, bytes, truth)});
  CHECK_THROWS_WITH(fit_link(two, o), Contains("do not determine") && Contains("fix"));
  o.fit_gamma = false;
  o.gamma = truth.gamma;
  const FitResult fixed = fit_link(two, o);
  CHECK(fixed.link.alpha == Approx(truth.alpha).epsilon(1e-6));
  CHECK(fixed.link.beta == Approx(truth.beta).epsilon(1e-6));
  CHECK_THAT(fixed.notes.front(), Contains("2 ranks"));
  // Measured-looking points (noise) leave residuals, and the fit reports them.
  two[0].time_s *= 1.10;
  const FitResult noisy = fit_link(two, o);
  CHECK(noisy.max_abs_rel > 0.01);
  CHECK(noisy.rms_rel > 0.0);
  o.min_bytes = 1e9;
  CHECK_THROWS_WITH(fit_link(two, o), Contains("usable points"));
}

namespace {

// Input and three layers A, B, C (forward 2, 3, 1 ms; backward 4, 6, 2 ms); buckets of 2M, 1M and 1M floats
// ready after C, B and A; one float costs 4e-9 s to sum (beta 1 ns/B, ring at 2 ranks = n beta) and 1e-9 s
// to update.
StepProfile hand_profile() {
  StepProfile p;
  p.model = "hand";
  p.batch_size = 10;
  p.layers = {{0, "Input", 0, 0, 0}, {1, "A", 1000000, 2e-3, 4e-3}, {2, "B", 1000000, 3e-3, 6e-3},
              {3, "C", 2000000, 1e-3, 2e-3}};
  p.loss_s = 1e-3;
  p.other_s = 1e-3;
  p.update_s_per_float = 1e-9;
  p.mode = "non_blocking";
  p.buckets = {{2000000, 3}, {1000000, 2}, {1000000, 1}};
  p.total_floats = 4000000;
  return p;
}

}  // namespace

TEST_CASE("step model: a hand-built 3-layer profile, blocking and non-blocking, overlap and queueing visible",
          "[perfmodel]") {
  const StepProfile prof = hand_profile();
  Platform plat{"test", "", {0.0, 1e-9, 0.0}, {0.0, 1e-9, 0.0}, 1, ""};
  StepOptions o;
  o.algorithm = AllreduceAlgorithm::ring;
  // Forward ends at 1 + 6 + 1 = 8 ms. Backward: C ends at 10 (bucket 0 sums 10..18), B at 16 (bucket 1
  // queues behind bucket 0: 18..22), A at 20 (bucket 2: 22..26). Waits: bucket 0 done, update 2 ms -> 22;
  // bucket 1 done at 22, update 1 -> 23; bucket 2 done at 26, update 1 -> 27.
  const StepPrediction nb = predict_step(prof, plat, 2, o);
  CHECK(nb.backward_end_s == Approx(20e-3));
  REQUIRE(nb.events.size() == 3);
  CHECK(nb.events[0].begin_s == Approx(10e-3));
  CHECK(nb.events[0].end_s == Approx(18e-3));
  CHECK(nb.events[1].start_s == Approx(16e-3));
  CHECK(nb.events[1].begin_s == Approx(18e-3));
  CHECK(nb.events[2].end_s == Approx(26e-3));
  CHECK(nb.step_s == Approx(27e-3));
  CHECK(nb.compute_s == Approx(24e-3));  // 1 + 6 + 1 + 12 + 4
  CHECK(nb.exposed_s == Approx(3e-3));
  CHECK(nb.comm_s == Approx(16e-3));
  CHECK(nb.samples_per_s == Approx(20 / 27e-3));
  // Blocking: backward ends at 20, one sum of 16 MB (16 ms), then the update of 4M floats (4 ms).
  o.mode = "blocking";
  const StepPrediction bl = predict_step(prof, plat, 2, o);
  CHECK(bl.step_s == Approx(40e-3));
  CHECK(bl.exposed_s == Approx(16e-3));
  // One rank: no communication either way.
  const std::vector<StepPrediction> scaling = predict_scaling(prof, plat, {1, 2}, o);
  CHECK(scaling[0].step_s == Approx(24e-3));
  CHECK(scaling[0].efficiency == Approx(1.0));
  CHECK(scaling[1].efficiency == Approx(24.0 / 40.0));
  // Strong scaling of a global batch of 10 over 2 ranks: forward, loss and backward halve (fwd ends at
  // 1 + 3.5 = 4.5, backward at 10.5), the sums do not: 10.5 + 16 + 4 = 30.5 ms.
  o.strong = true;
  const StepPrediction strong = predict_step(prof, plat, 2, o);
  CHECK(strong.samples_per_rank == Approx(5.0));
  CHECK(strong.step_s == Approx(30.5e-3));
  CHECK(strong.samples_per_s == Approx(10 / 30.5e-3));
  o.mode = "sideways";
  CHECK_THROWS_WITH(predict_step(prof, plat, 2, o), Contains("--mode must be blocking or non_blocking"));
}

TEST_CASE("step model: ranks sharing a node compute n / C(n) slower, with C interpolated", "[perfmodel]") {
  const StepProfile prof = hand_profile();
  // Two ranks on one node, blocking: compute 24 ms alone. Two copies reach 1.6x one: each computes 2 / 1.6 =
  // 1.25x slower, 30 ms; the 16 ms sum is not compute: 30 + 16 = 46 ms.
  Platform plat{"test", "", {0.0, 1e-9, 0.0}, {0.0, 1e-9, 0.0}, 2, ""};
  StepOptions o;
  o.algorithm = AllreduceAlgorithm::ring;
  o.mode = "blocking";
  o.ceiling = parse_ceiling("2:1.6");
  const StepPrediction two = predict_step(prof, plat, 2, o);
  CHECK(two.compute_s == Approx(30e-3));
  CHECK(two.step_s == Approx(46e-3));
  // One rank alone is not slowed; one rank per node (ranks_per_node 1) neither, at any rank count.
  CHECK(predict_step(prof, plat, 1, o).step_s == Approx(24e-3));
  plat.ranks_per_node = 1;
  CHECK(predict_step(prof, plat, 2, o).compute_s == Approx(24e-3));
  // C between measured counts is linear (C(3) = (1.6 + 3.0) / 2 = 2.3), below the smallest it runs from C(1) = 1,
  // beyond the largest it keeps its share per rank (C(8) = 3.0 / 4 x 8 = 6).
  const std::map<int, double> c = parse_ceiling("2:1.6,4:3.0");
  CHECK(contention_slowdown(c, 3) == Approx(3 / 2.3));
  CHECK(contention_slowdown(parse_ceiling("4:3.0"), 2) == Approx(2 / (1.0 + 2.0 / 3.0)));
  CHECK(contention_slowdown(c, 8) == Approx(8 / 6.0));
  CHECK(contention_slowdown(parse_ceiling("2:2.04"), 2) == Approx(1.0));  // noise above n: no speed-up
  CHECK(contention_slowdown({}, 16) == 1.0);
  CHECK_THROWS_WITH(parse_ceiling("2:2.5"), Contains("'2:2.5' is not RANKS:CEILING"));
  CHECK_THROWS_WITH(parse_ceiling("1:1"), Contains("'1:1' is not RANKS:CEILING"));
  CHECK_THROWS_WITH(parse_ceiling("2:x"), Contains("'2:x'"));
  CHECK_THROWS_WITH(parse_ceiling(""), Contains("expected RANKS:CEILING pairs"));
}

TEST_CASE("step profile: a restated batch and another device's throughput scale compute as documented",
          "[perfmodel]") {
  StepProfile p = hand_profile();
  // other 1 + forward 6 + loss 1 + backward 12 + update 4M floats x 1 ns = 24 ms (the Input layer has none).
  CHECK(profile_compute_s(p) == Approx(24e-3));
  // Batch 10 -> 20: forward, backward and loss double (6 -> 12, 12 -> 24, 1 -> 2), other and update do not.
  restate_batch(p, 20);
  CHECK(p.batch_size == 20);
  CHECK(p.layers[2].forward_s == Approx(6e-3));
  CHECK(p.layers[3].backward_s == Approx(4e-3));
  CHECK(profile_compute_s(p) == Approx(1e-3 + 12e-3 + 2e-3 + 24e-3 + 4e-3));
  CHECK_THAT(p.provenance.notes.back(), Contains("from 10 to 20"));
  // Half as fast a device: every time halves, the proportions stay.
  scale_compute(p, 0.5, "test");
  CHECK(profile_compute_s(p) == Approx(21.5e-3));
  CHECK(p.update_s_per_float == Approx(0.5e-9));
  CHECK(p.layers[2].forward_s / p.layers[1].forward_s == Approx(1.5));
  CHECK_THROWS_WITH(restate_batch(p, 0), Contains("must be > 0"));
  CHECK_THROWS_WITH(scale_compute(p, -1, "x"), Contains("positive and finite"));
  // The published clusters: nodes of 4 (PCIe) on 25 Gb/s RoCE; a ring over 512 ranks crosses nodes, so it
  // is paced by the RoCE link: 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma.
  const Platform& h = find_platform("horovod_roce25");
  CHECK(&h.link_for(4) == &h.intra);
  const double n = 256e6;
  CHECK(allreduce_time(AllreduceAlgorithm::ring, 512, n, h.link_for(512)) ==
        Approx(2 * 511 * 5e-6 + 2.0 * 511 / 512 * n * 8 / 25e9 + 511.0 / 512 * n * 1e-12));
  CHECK(find_platform("dgx1v_ib4x100").link_for(16).beta == Approx(8.0 / 400e9));
}

TEST_CASE("step profile: JSON round trip and one-line errors", "[perfmodel]") {
  StepProfile p = hand_profile();
  p.source_run = 7;
  p.provenance.notes = {"hand-made"};
  const StepProfile back = parse_step_profile(step_profile_json(p), "mem");
  CHECK(back.layers.size() == 4);
  CHECK(back.buckets[1].ready_after == 2);
  CHECK(back.source_run == 7);
  CHECK(back.provenance.notes == std::vector<std::string>{"hand-made"});
  p.total_floats = 5;
  CHECK_THROWS_WITH(parse_step_profile(step_profile_json(p), "mem"), Contains("mem: the buckets hold more than total_floats (5)"));
  p.total_floats = 5000000;
  CHECK_THROWS_WITH(parse_step_profile(step_profile_json(p), "mem"), Contains("mem: the buckets hold 4000000 floats"));
  CHECK_THROWS_WITH(parse_step_profile("{\"schema\": \"x\"}", "f.json"), Contains("f.json: schema must be"));
  CHECK_THROWS_WITH(parse_step_profile("[1,", "f.json"), "f.json: not JSON (at line 1, column 4: syntax error while "
                                                          "parsing value - unexpected end of input; expected '[', '{', "
                                                          "or a literal)");
  CHECK_THROWS_WITH(parse_step_profile(" \n", "f.json"), "f.json: empty, not JSON");
}

TEST_CASE("PyDTNN's model: performance_models.py's formulas by hand", "[perfmodel]") {
  const PydtnnParams d;  // cpu_speed 4e12, memory_bw 50e9, network_bw 1e9 bit/s, lat 0.5e-6, vdg
  // matmul 64 x 1024 x 576: memory-bound (intensity 27.3 < 80), so time = 4 * memops / memory_bw.
  const PTime mm = pydtnn_matmul_time(64, 1024, 576, d);
  CHECK(mm.total == Approx(4.0 * (65536 + 36864 + 589824) / 50e9).epsilon(1e-9));
  CHECK(mm.comp == Approx(2.0 * 64 * 1024 * 576 / 4e12).epsilon(1e-9));
  CHECK(mm.mem == Approx(mm.total - mm.comp));
  CHECK(pydtnn_im2col_time(9, 1000, d).total == 0.0);  // no flops: PyDTNN charges nothing
  CHECK(pydtnn_col2im_time(9, 1000, d).total == Approx(9000 / 12.5e9).epsilon(1e-9));
  // Compute-bound: a large square matmul runs at cpu_speed.
  CHECK(pydtnn_matmul_time(4096, 4096, 4096, d).total == Approx(2.0 * 4096 * 4096 * 4096 / 4e12).epsilon(1e-9));
  // allreduce of 1e6 floats: vdg ceil(log2 p) lat + 2 ceil(log2 p) 32e6/bw + ceil(log2 p) e/cpu_speed.
  CHECK(pydtnn_allreduce_time(1e6, 8, d).total == Approx(1.5e-6 + 0.192 + 7.5e-7).epsilon(1e-12));
  CHECK(pydtnn_allreduce_time(1e6, 6, d).total == Approx(1.5e-6 + 0.192 + 7.5e-7).epsilon(1e-12));
  PydtnnParams bta = d;
  bta.network_alg = "bta";
  CHECK(pydtnn_allreduce_time(1e6, 8, bta).total == Approx(3e-6 + 0.056 + 0.875 * 2.5e-7).epsilon(1e-12));
  CHECK(pydtnn_allreduce_time(1e6, 6, bta).total ==
        Approx(2 * 2.584962500721156 * 0.5e-6 + 2 * (5.0 / 6) * 0.032 + (5.0 / 6) * 2.5e-7).epsilon(1e-12));
  CHECK(pydtnn_allreduce_time(1e6, 1, d).total == 0.0);
  bta.network_alg = "ring";
  CHECK_THROWS_WITH(pydtnn_allreduce_time(1, 2, bta), Contains("--network_alg must be bta or vdg"));

  // calculate_time: bta at 2 ranks with lat 0, bw 32 bit/s and an infinite cpu costs e seconds for e floats.
  PydtnnParams unit = bta;
  unit.network_alg = "bta";
  unit.network_lat = 0;
  unit.network_bw = 32;
  unit.cpu_speed = 1e300;
  std::vector<PydtnnLayer> layers(2);
  layers[0].fwd.total = 1, layers[0].bwd.total = 2, layers[0].allreduce_elems = 3;
  layers[1].fwd.total = 1, layers[1].bwd.total = 1, layers[1].allreduce_elems = 1;
  CHECK(pydtnn_calculate_time(layers, 2, true, unit).total == Approx(2 + 3 + 3 + 1));
  // Non-blocking, in forward order as PyDTNN walks them: T = 2; +2 -> 4, iar = 4 + 3 = 7; +1 -> 5,
  // iar = max(5, 7) + 1 = 8; T = max(5, 8).
  CHECK(pydtnn_calculate_time(layers, 2, false, unit).total == Approx(8));
  CHECK(pydtnn_calculate_time(layers, 1, false, unit).total == Approx(5));

  // A zoo model: simplecnn's last FC (128 -> 10) at batch 64 costs matmul(64, 10, 128) forward, and only the
  // top-level Conv2D and FC layers communicate.
  const std::vector<PydtnnLayer> cnn = pydtnn_layers("simplecnn", 64, d);
  const PydtnnLayer& fc = cnn[cnn.size() - 2];
  REQUIRE(fc.type == "FC");
  CHECK(fc.fwd.total == Approx(pydtnn_matmul_time(64, 10, 128, d).total));
  CHECK(fc.bwd.total ==
        Approx(pydtnn_matmul_time(128, 10, 64, d).total + pydtnn_matmul_time(64, 128, 10, d).total));
  CHECK(fc.allreduce_elems == 1290);
  double elems = 0;
  for (const PydtnnLayer& l : cnn) elems += l.allreduce_elems;
  CHECK(elems == 202458);
  // In ResNet-20 the blocks carry the compute but never communicate.
  double block_time = 0, summed = 0;
  for (const PydtnnLayer& l : pydtnn_layers("resnet20_cifar10", 64, d)) {
    if (l.type.rfind("AdditionBlock", 0) == 0) {
      block_time += l.fwd.total + l.bwd.total;
      CHECK(l.allreduce_elems == 0);
    }
    summed += l.allreduce_elems;
  }
  CHECK(block_time > 0);
  CHECK(summed < 5000);
}

// Edge cases of the model, each against a value computed by hand.
TEST_CASE("perf model: the algorithm named is the one costed, strong scaling's largest share, input backward, "
          "exactly determined fits", "[perfmodel]") {
  using A = AllreduceAlgorithm;
  Platform plat{"test", "", kLink, kLink, 1, ""};
  // Ring with fewer floats than ranks runs recursive doubling (Open MPI's fallback), and is named so.
  const A ring = A::ring;
  const CollectiveCost one_float = blocking_allreduce(plat, 2, 4.0, CollectiveRules::ompi41, &ring);
  CHECK(one_float.algorithm == A::recursive_doubling);
  CHECK(one_float.seconds == Approx(1e-6 + 4e-9 + 4e-10).epsilon(1e-12));  // a + n b + n g, not ring's 2 a + ...
  const A rab = A::rabenseifner;
  CHECK(nonblocking_allreduce(plat, 200, 400.0, CollectiveRules::ompi41, &rab).algorithm == A::linear);
  CHECK(blocking_allreduce(plat, 2, 4e6, CollectiveRules::ompi41, &ring).algorithm == A::ring);

  // Strong scaling: a global batch of 10 over 3 ranks trains 4, 3, 3: the step is the 4-sample rank's.
  StepProfile prof = hand_profile();
  StepOptions o;
  o.mode = "blocking";
  o.strong = true;
  CHECK(predict_step(prof, plat, 3, o).samples_per_rank == 4.0);
  o.global_batch = 2;
  CHECK_THROWS_WITH(predict_step(prof, plat, 3, o), Contains("leaves some rank no sample"));

  // The input layer has no backward: a time there is refused, not counted as compute and never scheduled.
  prof.layers[0].backward_s = 5e-3;
  CHECK_THROWS_WITH(check_step_profile(prof, "p.json"), Contains("p.json: layers[0] is the input layer"));

  // As many distinct measurements as unknowns: the fit goes through them, and says that 0 % means nothing.
  FitOptions f;
  f.fit_gamma = false;  // alpha and beta: 2 unknowns
  f.gamma = 1e-10;
  const std::vector<FitPoint> two = {{"allreduce", 2, 1048576.0, 300e-6}, {"iallreduce", 2, 1048576.0, 320e-6}};
  const FitResult exact = fit_link(two, f);
  bool noted = false;
  for (const std::string& n : exact.notes) noted |= n.find("exactly determined") != std::string::npos;
  CHECK(noted);
  const std::vector<FitPoint> three = {{"allreduce", 2, 4096.0, 20e-6}, {"allreduce", 2, 65536.0, 40e-6},
                                       {"allreduce", 2, 1048576.0, 300e-6}};
  for (const std::string& n : fit_link(three, f).notes) CHECK(n.find("exactly determined") == std::string::npos);
}
