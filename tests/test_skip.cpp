// tests/skip.h itself: under ctest a skipped case exits 77 with its reason (ctest: "Skipped"); by hand it
// returns and the binary runs on. Hidden ([.]): tests.skip_out_loud (tests/CMakeLists.txt) runs it both ways.
#include <catch2/catch.hpp>

#include "skip.h"

TEST_CASE("skip: a case that cannot run here is skipped out loud", "[.][skip_self_test]") {
  DTNN_SKIP("skip.h self-test");
  FAIL("DTNN_SKIP returned into the case");
}
