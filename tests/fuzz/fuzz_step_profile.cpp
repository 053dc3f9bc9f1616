// Every reader that yields a step profile (dtnn.step_profile/1, analysis/perfmodel/STEP_PROFILE.md), all fed
// files a user may have edited: dtnn's (`read_step_profile`, analysis/perfmodel/step_profile.cpp: `dtnn
// predict --profile`), the SimGrid replay proxy's header-only one (`step_replay::load_profile`,
// suites/step_replay/profile.h: no dtnn engine, so it refuses with std::runtime_error), and the profile made
// from a run report (`profile_from_report_file`, analysis/perfmodel/profile_from_report.cpp: `dtnn predict
// --from-report`). All three run on every input (the seeds are profiles and run reports).
// Properties: what dtnn's readers accept has a finite compute time and its JSON reads back to the same JSON;
// what the proxy accepts has buckets laid end to end over total_floats (non_blocking) and a finite compute time.
#include <cmath>
#include <stdexcept>

#include "analysis/perfmodel/profile_from_report.h"
#include "analysis/perfmodel/step_profile.h"
#include "fuzz_common.h"
#include "suites/step_replay/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("profile.json", data, size);

  for (bool from_report : {false, true}) {
    perf::StepProfile p;
    if (!fuzz::accepted([&] {
          p = from_report ? perf::profile_from_report_file(path, {}) : perf::read_step_profile(path);
        }))
      continue;
    fuzz::require(std::isfinite(perf::profile_compute_s(p)) && perf::profile_compute_s(p) >= 0,
                  "an accepted profile has a finite compute time >= 0");
    const std::string text = perf::step_profile_json(p);
    perf::StepProfile again;
    fuzz::require(fuzz::accepted([&] { again = perf::parse_step_profile(text, "written"); }),
                  "the JSON written for an accepted profile reads back");
    fuzz::require(perf::step_profile_json(again) == text, "an accepted profile's JSON reads back to the same JSON");
  }

  for (const char* mode : {"", "non_blocking"}) {
    step_replay::Profile r;
    try {
      r = step_replay::load_profile(path, mode);
    } catch (const std::runtime_error& e) {  // the proxy's documented refusal
      fuzz::refused(e.what());
      continue;
    }
    int64_t end = 0;
    for (const step_replay::ProfileBucket& b : r.buckets) {
      fuzz::require(b.begin == end && b.floats >= 0 && b.ready_after <= r.layers.size(),
                    "the proxy's buckets are laid end to end, each ready after a layer");
      end += b.floats;
    }
    fuzz::require(r.mode != "non_blocking" || end == r.total_floats, "non_blocking buckets cover total_floats");
    fuzz::require(std::isfinite(r.compute_s()) && r.compute_s() >= 0, "the proxy's compute time is finite and >= 0");
  }
  return 0;
}
