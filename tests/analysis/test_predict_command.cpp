// Step profiles from run reports (a real `dtnn train --report` run, and reports built from zoo models, whose
// buckets must be the trainer's own), and `dtnn predict` end to end: its table, JSON, --write-profile, and
// one-line errors for bad input.
#include <catch2/catch.hpp>

#include <functional>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/perfmodel/predict_command.h"
#include "analysis/perfmodel/profile_from_report.h"
#include "cli_helpers.h"
#include "core/file_io.h"
#include "layers/layers.h"
#include "models/model.h"
#include "results/store.h"
#include "stored_run.h"
#include "parallel/gradient_reducer.h"

using namespace dtnn::perf;
using Catch::Matchers::Contains;

namespace {

// The trainer's buckets for a zoo model: the model built for real (its slab, padding included).
std::vector<dtnn::GradientBucket> trainer_buckets(const std::string& name, double bucket_mb, int64_t tail,
                                                  int64_t min_buckets = 1) {
  auto model = dtnn::create_model(name);
  dtnn::FusionOptions fusion;
  fusion.add_relu = true;  // dtnn train's default --enable_fused_add_relu
  model->fuse(fusion);
  dtnn::BuildContext ctx;
  model->build(ctx, 1, tail);
  std::vector<int64_t> begin(model->num_layers() + 1);
  for (size_t i = 0; i <= model->num_layers(); ++i) begin[i] = model->param_begin(i);
  return dtnn::plan_buckets(begin, tail, bucket_mb, min_buckets);
}

// A run report of a zoo model with made-up times (1 ms forward, 2 ms backward per layer with parameters).
std::string fake_report(const std::string& name, const std::string& bucket_mb) {
  auto model = dtnn::create_model(name);
  dtnn::FusionOptions fusion;
  fusion.add_relu = true;
  model->fuse(fusion);
  dtnn::BuildContext ctx;
  dtnn::Shape shape;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < model->num_layers(); ++i) {
    dtnn::Layer& l = model->layer(i);
    shape = l.build(shape, ctx);
    nlohmann::json lj = {{"id", l.id}, {"type", l.type()}, {"params", l.num_params()}};
    if (i > 0) lj["forward_ms"] = 1.0, lj["backward_ms"] = l.num_params() > 0 ? 2.0 : 0.0;
    layers.push_back(lj);
  }
  nlohmann::json comm = {{"mode", "non_blocking"}, {"steps", 10}, {"rank0", {{"step_s", 2.0}, {"compute_s", 1.5},
                                                                             {"comm_s", 0.6}, {"exposed_s", 0.5}}}};
  nlohmann::json r = {{"schema", "dtnn.run_report/1"},
                      {"options", {{"model", name}, {"batch_size", "32"}, {"gradient_bucket_mb", bucket_mb},
                                   {"non_blocking_mpi", "True"}, {"metrics", "categorical_accuracy"},
                                   {"enable_fused_add_relu", "True"}}},
                      {"model", {{"name", name}, {"layers", layers}}},
                      {"parallel", {{"ranks", 2}, {"threads", 1}}},
                      {"epochs", {{{"epoch", 1}, {"communication", comm}}}}};
  return r.dump();
}

void check_same_buckets(const StepProfile& p, const std::vector<dtnn::GradientBucket>& expected) {
  REQUIRE(p.buckets.size() == expected.size());
  int64_t total = 0;
  for (size_t b = 0; b < expected.size(); ++b) {
    INFO("bucket " << b);
    CHECK(p.buckets[b].floats == expected[b].end - expected[b].begin);
    CHECK(p.buckets[b].ready_after == expected[b].ready_after);
    total += p.buckets[b].floats;
  }
  CHECK(p.total_floats == total);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = dtnn::test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("profile from report: the trainer's buckets, padding and tail included, for zoo models", "[perfmodel]") {
  for (const auto& [name, mb] : {std::pair{"resnet20_cifar10", 0.1}, {"resnet20_cifar10", 0.0},
                                 {"simplecnn", 25.0}, {"vgg3dobn", 0.5}}) {
    INFO(name << " " << mb);
    char mbtext[32];
    std::snprintf(mbtext, sizeof mbtext, "%g", mb);
    const StepProfile p = profile_from_report(fake_report(name, mbtext), "fake", {});
    check_same_buckets(p, trainer_buckets(name, mb, 3));  // loss, accuracy, count
    CHECK(p.mode == "non_blocking");
    CHECK(p.batch_size == 32);
    CHECK(p.provenance.measured_step_s == Approx(0.2));
    CHECK(p.provenance.ranks == 2);
    for (const std::string& n : p.provenance.notes) CHECK_THAT(n, !Contains("unpadded"));
  }
  // A report that records --gradient_buckets_min plans with it (resnet20's 1.04 MiB in 4 buckets); one
  // written before that option (none recorded) with the cap alone (2: DDP's 1 MiB first bucket, the rest).
  nlohmann::json with_min = nlohmann::json::parse(fake_report("resnet20_cifar10", "25"));
  with_min["options"]["gradient_buckets_min"] = "4";
  const StepProfile p4 = profile_from_report(with_min.dump(), "fake", {});
  check_same_buckets(p4, trainer_buckets("resnet20_cifar10", 25.0, 3, 4));
  CHECK(p4.buckets.size() == 4);
  CHECK(profile_from_report(fake_report("resnet20_cifar10", "25"), "fake", {}).buckets.size() == 2);
  with_min["options"]["gradient_buckets_min"] = "0";
  CHECK_THROWS_WITH(profile_from_report(with_min.dump(), "r.json", {}),
                    Contains("r.json: options.gradient_buckets_min must be >= 1 (got 0)"));
  with_min["options"]["gradient_buckets_min"] = "four";
  CHECK_THROWS_WITH(profile_from_report(with_min.dump(), "r.json", {}),
                    Contains("r.json: options.gradient_buckets_min is not a number"));
  // --bucket_mb re-plans; a report that is not one fails in one line.
  ReportOptions o;
  o.bucket_mb = 0.0;
  check_same_buckets(profile_from_report(fake_report("resnet20_cifar10", "25"), "fake", o),
                     trainer_buckets("resnet20_cifar10", 0.0, 3));
  CHECK_THROWS_WITH(profile_from_report("{\"schema\": \"dtnn.run_report/0\"}", "r.json", {}),
                    Contains("r.json: not a dtnn run report"));
}

// A report may come from anywhere (--from-report FILE): nlohmann's value() threw its own type_error on a
// field of another type (no file name in the message), and cast a 1e30 where an integer belongs.
TEST_CASE("profile from report: fields of another type or out of range are refused naming them", "[perfmodel]") {
  const nlohmann::json good = nlohmann::json::parse(fake_report("simplecnn", "25"));
  REQUIRE_NOTHROW(profile_from_report(good.dump(), "r.json", {}));
  using Edit = std::function<void(nlohmann::json&)>;
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](nlohmann::json& r) { r["schema"] = 1; }, "r.json: not a dtnn run report"},
      {[](nlohmann::json& r) { r["model"]["name"] = 7; }, "r.json: \"name\" must be a string"},
      {[](nlohmann::json& r) { r["model"]["layers"][1] = "conv"; }, "r.json: model.layers[1] is not an object"},
      {[](nlohmann::json& r) { r["model"]["layers"][1]["id"] = 1e30; }, "r.json: model.layers[1]: field 'id' holds 1e+30"},
      {[](nlohmann::json& r) { r["model"]["layers"][1]["params"] = -5; }, "r.json: model.layers[1]: \"params\" must be >= 0"},
      {[](nlohmann::json& r) { r["model"]["layers"][1]["forward_ms"] = "fast"; },
       "r.json: model.layers[1]: \"forward_ms\" must be a finite number"},
      {[](nlohmann::json& r) { r["epochs"][0]["communication"]["steps"] = "ten"; },
       "r.json: epochs[].communication: field 'steps' holds a string"},
      {[](nlohmann::json& r) { r["epochs"][0]["communication"]["rank0"] = 3; }, "r.json: epochs[].communication.rank0 is not an object"},
      {[](nlohmann::json& r) { r["parallel"]["ranks"] = 1e12; }, "r.json: parallel: \"ranks\" is too large"},
      {[](nlohmann::json& r) { r["placement"] = {{"node_list", 3}}; }, "r.json: placement: \"node_list\" must be a string"},
      {[](nlohmann::json& r) { r["phases"] = {{"source", "trace"}, {"rows", {1}}}; },
       "r.json: phases.rows[] is not an object"},
  };
  for (const auto& [edit, expected] : cases) {
    INFO(expected);
    nlohmann::json r = good;
    edit(r);
    CHECK_THROWS_WITH(profile_from_report(r.dump(), "r.json", {}), Contains(expected));
  }
  // Parameter counts that would overflow the slab's offsets (the report's own counts: no zoo model matches).
  nlohmann::json r = good;
  r["options"]["model"] = "not_a_zoo_model";
  for (auto& l : r["model"]["layers"]) l["params"] = 9007199254740992LL;  // 2^53 each
  CHECK_THROWS_WITH(profile_from_report(r.dump(), "r.json", {}), Contains("r.json: the layers' parameters add up past 2^50"));
}

TEST_CASE("profile from report: a real dtnn train report, untraced and traced", "[perfmodel]") {
  for (bool traced : {false, true}) {
    INFO("traced " << traced);
    const std::string report = dtnn::test::temp_path(traced ? "traced.json" : "report.json");
    std::string args = "train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=4 --evaluate_on_test=False "
                       "--progress=False --gradient_bucket_mb=0 --report=" + report;
    if (traced) args += " --tracing=True --tracer_output=" + dtnn::test::temp_path("trace.csv");
    const dtnn::test::Command c = dtnn::test::run_dtnn(args);
    REQUIRE(c.status == 0);
    const StepProfile p = profile_from_report_file(report, {});
    CHECK(p.model == "simplecnn");
    CHECK(p.batch_size == 64);
    CHECK(p.mode == "blocking");
    CHECK(p.layers.size() == 12);
    CHECK(p.layers[1].type == "Conv2D");
    CHECK(p.layers[1].forward_s > 0);
    check_same_buckets(p, trainer_buckets("simplecnn", 0.0, 3));
    CHECK(p.buckets.size() == 4);  // one per layer with parameters (2 Conv2D, 2 FC), the tail with the first
    CHECK(p.provenance.ranks == 1);
    CHECK(p.provenance.mode == "none");
    CHECK(p.provenance.measured_step_s > 0);
    if (traced) {
      CHECK(p.loss_s > 0);
      CHECK(p.update_s_per_float > 0);
      CHECK_THAT(p.provenance.notes[1], Contains("from the trace"));
    } else {
      CHECK(p.loss_s == 0);
      CHECK_THAT(p.provenance.notes[1], Contains("estimated"));
    }
    // dtnn predict on it: the one-rank prediction is the measured step (the residual is in the profile).
    const dtnn::test::Command pr = dtnn::test::run_dtnn("predict --from-report " + report +
                                                        " --ranks 1,2,4 --platform eth10g --mode non_blocking --json");
    REQUIRE(pr.status == 0);
    const nlohmann::json j = nlohmann::json::parse(pr.out);
    CHECK(j["rows"].size() == 3);
    CHECK(j["measured"]["error"].get<double>() == Approx(0.0).margin(1e-3));
    CHECK(j["rows"][1]["allreduce"] == "binomial");
    // Four buckets hidden behind simplecnn's long backward: no slower than one rank (up to rounding).
    CHECK(j["rows"][2]["step_s"].get<double>() >= j["rows"][0]["step_s"].get<double>() * (1 - 1e-12));
    std::filesystem::remove(report);
  }
}

TEST_CASE("dtnn predict: --from-run reads runs.report, --fit-collectives db the ingested bench_allreduce rows",
          "[perfmodel]") {
  const std::string report = dtnn::test::temp_path("stored.json"), db = dtnn::test::temp_path("predict.db");
  std::filesystem::remove(db);
  REQUIRE(dtnn::test::run_dtnn("train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=3 "
                               "--evaluate_on_test=False --progress=False --report=" + report).status == 0);
  int64_t run = 0;
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    run = dtnn::test::store_report_run(store, "m", "t", {{"model", "simplecnn"}, {"ranks", "1"}, {"dataset", "mnist"}},
                                       dtnn::read_file(report));
  }
  const StepProfile stored = profile_from_stored_run(dtnn::ResultStore::open_read_only(db), run, {});
  CHECK(stored.source_run == run);
  CHECK(step_profile_json(stored).find("\"source_run\": " + std::to_string(run)) != std::string::npos);
  const dtnn::test::Command c = dtnn::test::run_dtnn("predict --from-run " + std::to_string(run) + " --db " + db +
                                                     " --ranks 1,2 --platform ib100");
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Contains("measured: run " + std::to_string(run) + " at 1 rank"));
  CHECK_THAT(dtnn::test::run_dtnn("predict --from-run 999 --db " + db).err, Contains("no such run"));
  // bench_allreduce results ingested in the store calibrate the link.
  REQUIRE(dtnn::test::run_dtnn("ingest " + std::string(DTNN_SOURCE_DIR) +
                               "/results/baselines/allreduce_tcp_xeon-emr_2core.json --db " + db).status == 0);
  const dtnn::test::Command fit = dtnn::test::run_dtnn("predict --from-run " + std::to_string(run) + " --db " + db +
                                                       " --ranks 2 --platform eth10g --fit-collectives db "
                                                       "--fit-transport btl=self,tcp --fit-max-bytes 16777216 --json");
  REQUIRE(fit.status == 0);
  const nlohmann::json j = nlohmann::json::parse(fit.out);
  CHECK(j["fit"]["alpha"].get<double>() == Approx(5.941e-6).epsilon(0.01));  // localhost2_tcp's numbers
  CHECK(1 / j["fit"]["beta"].get<double>() == Approx(3.478e9).epsilon(0.01));
  CHECK(j["platform"]["name"] == "eth10g+fit");
  CHECK_THAT(dtnn::test::run_dtnn("predict --from-run " + std::to_string(run) + " --db " + db +
                                  " --fit-collectives db --fit-transport infiniband").err,
             Contains("no collective_benchmarks rows with transport 'infiniband'"));
  std::filesystem::remove(report);
  std::filesystem::remove(db);
}

TEST_CASE("dtnn predict: table, --write-profile round trip, PyDTNN's model", "[perfmodel]") {
  const std::string report = write_temp("r20.json", fake_report("resnet20_cifar10", "0.25"));
  const std::string profile = dtnn::test::temp_path("r20.profile.json");
  const dtnn::test::Command c = dtnn::test::run_dtnn("predict --from-report " + report +
                                                     " --ranks 1,2,4,...,256 --platform ib100 --write-profile " + profile);
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Contains("ranks      step ms") && Contains("   256 ") && Contains("not a measurement") &&
                        Contains("measured: the report at 2 ranks"));
  const StepProfile back = read_step_profile(profile);
  CHECK(back.model == "resnet20_cifar10");
  const dtnn::test::Command again = dtnn::test::run_dtnn("predict --profile " + profile +
                                                         " --ranks 1,2,4,...,256 --platform ib100");
  REQUIRE(again.status == 0);
  // The same table from the written profile (the headers differ only in where the numbers came from).
  CHECK(again.out.substr(again.out.find(" ranks ")) == c.out.substr(c.out.find(" ranks ")));
  const dtnn::test::Command py = dtnn::test::run_dtnn(
      "predict --model_kind pydtnn --model simplecnn --ranks 1,2 --network_alg bta --network_bw 1e9 --network_lat 0.5e-6");
  REQUIRE(py.status == 0);
  CHECK_THAT(py.out, Contains("PyDTNN's model") && Contains("network_alg bta") && Contains("pydtnn-bta"));
  CHECK(parse_rank_list("1,2,4,...,64") == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  CHECK(parse_rank_list("2,4,...,10") == std::vector<int>{2, 4, 8, 10});
  CHECK(parse_rank_list("1,3,...,9") == std::vector<int>{1, 3, 9});
  CHECK(parse_rank_list("3,5,...,11") == std::vector<int>{3, 5, 7, 9, 11});
  std::filesystem::remove(report);
  std::filesystem::remove(profile);
}

TEST_CASE("dtnn predict: --batch_size and --rank_samples_per_s set the one-rank step a device would take",
          "[perfmodel]") {
  const std::string report = write_temp("r20_rescale.json", fake_report("resnet20_cifar10", "25"));
  const std::string profile = dtnn::test::temp_path("r20_rescale.profile.json");
  // 64 samples per rank at 500 samples/s: one rank's step is 128 ms, whatever the report measured.
  const dtnn::test::Command c = dtnn::test::run_dtnn("predict --from-report " + report + " --batch_size 64 " +
                                                     "--rank_samples_per_s 500 --ranks 1,2 --json --write-profile " +
                                                     profile);
  REQUIRE(c.status == 0);
  const nlohmann::json j = nlohmann::json::parse(c.out);
  CHECK(j["batch_size"] == 64);
  CHECK(j["rows"][0]["step_s"].get<double>() == Approx(64.0 / 500));
  CHECK(j["rows"][0]["samples_per_s"].get<double>() == Approx(500));
  CHECK(j["rows"][1]["step_s"].get<double>() >= j["rows"][0]["step_s"].get<double>());
  CHECK_FALSE(j["measured"].contains("error"));  // a rescaled profile is not the run it came from
  // A cluster described on top of a preset: 2 ranks on one node use the intra-node link given.
  const dtnn::test::Command custom = dtnn::test::run_dtnn("predict --from-report " + report + " --ranks 2 --json " +
                                                          "--platform eth10g --ranks_per_node 2 --intra_gbps 80 " +
                                                          "--intra_alpha_us 2");
  REQUIRE(custom.status == 0);
  const nlohmann::json cj = nlohmann::json::parse(custom.out);
  CHECK(cj["platform"]["name"] == "eth10g*");
  CHECK(cj["platform"]["intra"]["beta"].get<double>() == Approx(1e-10));
  CHECK(cj["platform"]["intra"]["alpha"].get<double>() == Approx(2e-6));
  CHECK(cj["platform"]["ranks_per_node"] == 2);
  const StepProfile written = read_step_profile(profile);
  CHECK(written.batch_size == 64);
  CHECK(profile_compute_s(written) == Approx(64.0 / 500));
  CHECK_THAT(written.provenance.notes.back(), Contains("--rank_samples_per_s"));
  const dtnn::test::Command pyd = dtnn::test::run_dtnn("predict --model_kind pydtnn --model simplecnn "
                                                       "--rank_samples_per_s 10");
  CHECK(dtnn::test::one_line_error(pyd));
  CHECK_THAT(pyd.err, Contains("needs the dtnn model and a profile"));
  std::filesystem::remove(report);
  std::filesystem::remove(profile);
}

TEST_CASE("dtnn predict: bad input is one line and a non-zero exit", "[perfmodel]") {
  const std::string report = write_temp("bad_r20.json", fake_report("resnet20_cifar10", "25"));
  const std::string not_profile = write_temp("not_profile.json", "{\"schema\": \"dtnn.step_profile/0\"}");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"predict --from-report " + report + " --platform myrinet", "unknown platform 'myrinet'"},
      {"predict --from-report " + report + " --ranks 1,x", "--ranks: expected positive integers"},
      {"predict --from-report " + report + " --ranks 1,...,8", "needs two rank counts"},
      {"predict --from-report " + report + " --ranks 0,1", "not in 1..1048576"},
      {"predict --from-report " + report + " --ranks 1000000000", "--ranks: 1000000000 is not in 1..1048576"},
      {"predict --from-report " + report + " --ranks 1,2,2", "--ranks: the counts must increase (2 after 2)"},
      {"predict --from-report " + report + " --ranks 4,2,1", "the counts must increase (2 after 4)"},
      {"predict --from-report " + report + " --scaling strong --global_batch 100.5", "--global_batch must be a whole number"},
      {"predict --from-report " + report + " --scaling strong --global_batch 1e30", "--global_batch must be a whole number"},
      {"predict --model simplecnn --model_kind pydtnn --network_lat inf", "--network_lat must be finite and >= 0"},
      {"predict --from-report " + report + " --profile " + not_profile, "give one of --from-run"},
      {"predict --model resnet20_cifar10", "the dtnn model needs measured times"},
      {"predict --from-report " + report + " --mode sometimes", "--mode must be blocking or non_blocking"},
      {"predict --from-report " + report + " --scaling diagonal", "--scaling must be weak or strong"},
      {"predict --from-report " + report + " --model simplecnn", "--model simplecnn but the profile is of resnet20"},
      {"predict --from-report " + report + " --collectives mpich", "unknown collective rules 'mpich'"},
      {"predict --from-report " + report + " --algorithm tree", "unknown allreduce algorithm 'tree'"},
      {"predict --from-report " + report + " --bucket_mb -1", "--bucket_mb must be >= 0"},
      {"predict --profile " + not_profile, "schema must be \"dtnn.step_profile/1\""},
      {"predict --profile /nonexistent/p.json", "/nonexistent/p.json"},
      {"predict --from-report " + not_profile, "not a dtnn run report"},
      {"predict --from-run 3 --db /nonexistent/x.db", "x.db"},
      {"predict --model_kind pydtnn", "needs --model"},
      {"predict --model_kind pydtnn --model nosuchnet", "nosuchnet"},
      {"predict --model_kind pydtnn --model simplecnn --network_alg ring", "--network_alg must be bta or vdg"},
      {"predict --model_kind pydtnn --model simplecnn --scaling strong --global_batch 4 --ranks 8", "no sample"},
      {"predict --model_kind tensorflow --model simplecnn", "--model_kind must be dtnn or pydtnn"},
      {"predict --from-report " + report + " --fit-collectives " + not_profile, "not a bench_allreduce"},
      {"predict --from-report " + report + " --ranks", "--ranks"},
      {"predict --from-report " + report + " --inter_gbps 0", "--inter_gbps must be a positive rate"},
      {"predict --from-report " + report + " --intra_alpha_us -1", "--intra_alpha_us must be >= 0"},
      {"predict --from-report " + report + " --ranks_per_node 0", "--ranks_per_node must be >= 1"},
      {"predict --from-report " + report + " --batch_size -3", "--batch_size must be > 0"},
      {"predict --from-report " + report + " --batch_size 0", "--batch_size must be > 0 (got 0)"},  // 0 was "unset"
      {"predict --from-report " + report + " --rank_samples_per_s -1", "--rank_samples_per_s must be > 0"},
      {"predict --from-report " + report + " --ranks 2,4,...,3", "the count after \"...\" (3) must be above"},
      {"predict --from-report " + report + " --scaling strong --global_batch 4 --ranks 1,8", "leaves some rank no sample"},
      {"predict --from-report " + report + " --inter_gbps 100 --fit-collectives " + std::string(DTNN_SOURCE_DIR) +
           "/results/baselines/allreduce_tcp_xeon-emr_2core.json", "--fit-collectives replaces both links"},
  };
  for (const auto& [args, what] : cases) {
    INFO(args);
    const dtnn::test::Command c = dtnn::test::run_dtnn(args);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(what));
  }
  std::filesystem::remove(report);
  std::filesystem::remove(not_profile);
}

// The measured step of the run a profile came from is compared with the prediction only for what that run was:
// a 2-rank run on one host against this machine's links (localhost2*, a fit of its collectives), with nothing
// else changed. Against another platform, forced algorithm or bucket cap the "error" measured a different run.
TEST_CASE("dtnn predict: the measured step is compared only with a prediction of the same run", "[perfmodel]") {
  const std::string report = write_temp("cmp_r20.json", fake_report("resnet20_cifar10", "25"));
  const auto predict = [&](const std::string& extra) {
    const dtnn::test::Command c =
        dtnn::test::run_dtnn("predict --from-report " + report + " --ranks 1,2 --json " + extra);
    INFO(c.err);
    REQUIRE(c.status == 0);
    return nlohmann::json::parse(c.out);
  };
  const nlohmann::json local = predict("--platform localhost2");
  CHECK(local["measured"].contains("error"));
  CHECK(local["variant"] == "");
  for (const std::string& other : {std::string("--platform ib100"), std::string("--platform localhost2 --algorithm ring"),
                                   std::string("--platform localhost2 --bucket_mb 1"),
                                   std::string("--platform localhost2 --inter_gbps 100")}) {
    INFO(other);
    CHECK_FALSE(predict(other)["measured"].contains("error"));
  }
  const dtnn::test::Command table = dtnn::test::run_dtnn("predict --from-report " + report + " --ranks 1,2 --platform ib100");
  CHECK_THAT(table.out, Contains("not compared (the run had one host's links, the prediction is for ib100"));
  CHECK_THAT(dtnn::test::run_dtnn("predict --from-report " + report + " --ranks 1,2 --platform localhost2").out,
             Contains("; predicted on localhost2 "));
  // A run placed on two hosts (its report's placement) may be compared with a cluster platform.
  nlohmann::json two_hosts = nlohmann::json::parse(fake_report("resnet20_cifar10", "25"));
  two_hosts["placement"] = {{"node_list", "n1,n2"}, {"tasks_per_node", "1,1"}};
  const std::string placed = write_temp("cmp_r20_placed.json", two_hosts.dump());
  const dtnn::test::Command cluster =
      dtnn::test::run_dtnn("predict --from-report " + placed + " --ranks 1,2 --platform ib100 --json");
  REQUIRE(cluster.status == 0);
  CHECK(nlohmann::json::parse(cluster.out)["measured"].contains("error"));
  // What the options changed is the document's variant (a stored curve's key).
  CHECK(predict("--platform eth10g --inter_gbps 100 --algorithm ring")["variant"] == "inter 100 Gb/s; ring forced");
}
