// The Paraver writer on hand-made traces: what the 2-rank run cannot show (ranks on several hosts, a rank
// without events, clock offsets, events of one type that nest and tie to the nanosecond), and the paths
// --tracer_output accepts. The files also pass tests/trace/paraver_check.py (the format's checker).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "core/file_io.h"
#include "data/data_helpers.h"
#include "trace/trace_output.h"
#include "trace/trace_paraver.h"

using dtnn::RankTrace;
using dtnn::TraceEvent;
using dtnn::TraceKind;

namespace {

TraceEvent event(TraceKind kind, int id, double begin, double end, int lane = 0) {
  TraceEvent e;
  e.kind = kind;
  e.id = id;
  e.begin = begin;
  e.end = end;
  e.lane = static_cast<uint8_t>(lane);
  return e;
}

// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("trace: Paraver files of ranks on two hosts, nested events of one type tied to the nanosecond", "[trace]") {
  dtnn::TraceNames names;
  names.layers = {{0, "Conv2D", ""}, {1, "FC", ""}};
  names.bucket_layer = {0};
  names.top_layer = 1;
  names.per_bucket = true;
  std::vector<RankTrace> ranks(3);
  ranks[0].host = "a";
  ranks[1].host = "b";
  ranks[2].host = "a";  // no events: a task with one thread and no records
  ranks[0].events = {
      event(TraceKind::step, -1, 1.0, 2.0),        // type 60000003 value 1, contains ...
      event(TraceKind::comm_calls, 0, 1.0, 1.2),   // ... 60000003:4, beginning at the same time
      event(TraceKind::forward, 0, 1.0, 1.5),      // 60000001:1
      event(TraceKind::loss, -1, 1.5, 1.5),        // 60000003:3, zero length
      event(TraceKind::backward, 0, 1.5, 2.0),     // 60000001:2, ending with the step
      event(TraceKind::in_flight, 0, 1.6, 2.1, 1)  // lane 1: 60000001:3 (bucket 0 -> layer 0)
  };
  ranks[1].offset_s = 0.5;  // rank 1's clock reads 0.5 s more than rank 0's
  ranks[1].events = {event(TraceKind::data_wait, -1, 1.75, 1.8)};

  const dtnn::ParaverText t = dtnn::paraver_text(ranks, names, "01/02/26 at 03:04");
  // Origin 1.0 s (rank 0's first event), ftime 2.1 s - 1.0 s; node a has ranks 0 and 2 (CPUs 1, 2), node b
  // rank 1 (CPU 3); rank 0 has 2 threads (lanes 0, 1).
  CHECK(lines_with(t.prv, "#")[0] == "#Paraver (01/02/26 at 03:04):1100000000_ns:2(2,1):1:3(2:1,1:2,1:1)");
  // At one time, one record per thread; in each type, begins outermost first, ends before begins.
  CHECK(lines_with(t.prv, "2:1:1:1:1:") == std::vector<std::string>{
                                               "2:1:1:1:1:0:60000001:1:60000003:1:60000003:4",
                                               "2:1:1:1:1:200000000:60000003:0",
                                               "2:1:1:1:1:500000000:60000001:0:60000001:2:60000003:3:60000003:0",
                                               "2:1:1:1:1:1000000000:60000001:0:60000003:0"});
  CHECK(lines_with(t.prv, "2:1:1:1:2:") ==
        std::vector<std::string>{"2:1:1:1:2:600000000:60000001:3", "2:1:1:1:2:1100000000:60000001:0"});
  CHECK(lines_with(t.prv, "2:3:1:2:1:") ==
        std::vector<std::string>{"2:3:1:2:1:250000000:60000003:2", "2:3:1:2:1:300000000:60000003:0"});
  CHECK(lines_with(t.prv, "1:") == std::vector<std::string>{
                                       "1:1:1:1:1:0:200000000:6",           // communication calls: Test/Probe
                                       "1:1:1:1:1:200000000:1000000000:1",  // Running
                                       "1:3:1:2:1:250000000:300000000:5",   // data wait: Synchronization
                                       "1:1:1:1:2:600000000:1100000000:13"});
  CHECK(lines_with(t.prv, "2:2:").empty());
  CHECK(t.row.find("LEVEL CPU SIZE 3\nrank 0 (a)\nrank 2 (a)\nrank 1 (b)\n") != std::string::npos);
  CHECK(t.row.find("LEVEL THREAD SIZE 4\nrank 0 training\nrank 0 bucket 0\nrank 1 training\nrank 2 training\n") !=
        std::string::npos);
  CHECK(t.pcf.find("EVENT_TYPE\n0    60000001    Model layers\nVALUES\n0      End\n1      000_Conv2D_forward\n"
                   "2      000_Conv2D_backward\n3      000_Conv2D_allreduce_dw\n") != std::string::npos);

  const dtnn::test::ScratchDir dir("paraver");
  dtnn::write_file_atomically(dir / "t.prv", t.prv);
  dtnn::write_file_atomically(dir / "t.pcf", t.pcf);
  dtnn::write_file_atomically(dir / "t.row", t.row);
  CHECK(std::system(("/usr/bin/python3 " DTNN_SOURCE_DIR "/tests/trace/paraver_check.py " + (dir / "t.prv")).c_str()) ==
        0);
}

TEST_CASE("trace: --tracer_output's Paraver paths: X.prv, an existing directory, a path ending in '/'", "[trace]") {
  const dtnn::test::ScratchDir dir("paraver_paths");
  using V = std::vector<std::string>;
  CHECK(dtnn::trace_format("run.prv") == "paraver");
  CHECK(dtnn::trace_files("out/run.prv") == V{"out/run.prv", "out/run.pcf", "out/run.row"});
  CHECK(dtnn::trace_files("new/") == V{"new/dtnn.prv", "new/dtnn.pcf", "new/dtnn.row"});
  CHECK(dtnn::trace_files(dir.path) == V{dir / "dtnn.prv", dir / "dtnn.pcf", dir / "dtnn.row"});
  CHECK(dtnn::trace_files("run.csv") == V{"run.csv"});
  CHECK(dtnn::trace_outputs("a.json,a.csv,a.prv").size() == 3);
  CHECK_THROWS_WITH(dtnn::trace_format("run.xyz"), Catch::Contains("run.xyz") && Catch::Contains(".prv"));
  CHECK_THROWS(dtnn::trace_format(dir / "missing"));  // neither an extension nor a directory
}
