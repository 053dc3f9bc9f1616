// `dtnn conv` over planted algorithms: a wrong one is reported wrong and never timed (exit 1); a
// direction an algorithm has no code for gets no row, a decline gets one, whatever their texts say.
#include <catch2/catch.hpp>

#include <sstream>

#include "conv/conv_algorithm.h"
#include "conv/perturbed_algorithm.h"
#include "experiments/conv_command.h"

using namespace dtnn;

namespace {

// Forward only, declining bwd_filter: the reasons' texts are the opposite of what a text search expects.
class ForwardOnly final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "test.forward_only"; }
  Support supports(const ConvProblem& p) const override { return find_conv_algorithm("convgemm").supports(p); }
  Support supports_dir(const ConvProblem& p, ConvDir dir) const override {
    if (dir == ConvDir::bwd_data) return Support::no_such_direction("backward data is not written yet");
    if (dir == ConvDir::bwd_filter) return Support::no("this problem has no filter gradient kernel here");
    return supports(p);
  }
  int64_t workspace_floats(const ConvProblem& p) const override { return inner().workspace_floats(p); }
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    inner().forward(p, x, w, bias, y, ws);
  }
  void backward_data(const ConvProblem&, const float*, const float*, float*, float*) const override {}
  void backward_filter(const ConvProblem&, const float*, const float*, float*, float*, float*) const override {}

 private:
  static const ConvAlgorithm& inner() { return find_conv_algorithm("convgemm"); }
};

ConvCommandOptions small_problem() {
  ConvCommandOptions o;
  o.problem = "n2_c8h8w8_k8r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32";
  o.samples = 1;
  return o;
}

// The table's rows of one algorithm.
std::vector<std::string> rows_of(const std::string& table, const std::string& algo) {
  std::vector<std::string> out;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(algo + " ", 0) == 0) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("conv command: a wrong algorithm is reported wrong, not timed, and the exit code is 1", "[cli]") {
  const ConvAlgorithm& convgemm = find_conv_algorithm("convgemm");
  const test::PerturbedAlgorithm wrong(convgemm, {ConvDir::fwd, ConvDir::bwd_filter});
  std::ostringstream out;
  CHECK(run_conv_command(small_problem(), {&wrong, &convgemm}, out) == 1);
  INFO(out.str());
  const std::vector<std::string> bad = rows_of(out.str(), "test.perturbed");
  REQUIRE(bad.size() == 3);
  CHECK(bad[0].find("fwd") != std::string::npos);
  CHECK(bad[0].find("wrong: max rel. error") != std::string::npos);
  CHECK(bad[0].find("> tolerance 1.0e-05") != std::string::npos);
  CHECK(bad[1].find("wrong") == std::string::npos);  // bwd_data is right: timed
  CHECK(bad[2].find("wrong: max rel. error") != std::string::npos);
  CHECK(rows_of(out.str(), "cpu.convgemm").size() == 3);
  CHECK(out.str().find("2 algorithm x direction(s) computed wrong results") != std::string::npos);

  std::ostringstream right;
  CHECK(run_conv_command(small_problem(), {&convgemm}, right) == 0);
  CHECK(right.str().find("wrong") == std::string::npos);
}

TEST_CASE("conv command: no row for a direction without code, a row for a decline, by code", "[cli]") {
  const ForwardOnly algo;
  std::ostringstream out;
  CHECK(run_conv_command(small_problem(), {&algo}, out) == 0);
  INFO(out.str());
  const std::vector<std::string> rows = rows_of(out.str(), "test.forward_only");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].find("fwd") != std::string::npos);
  CHECK(rows[1].find("bwd_filter  declined: this problem has no filter gradient kernel here") != std::string::npos);
}
