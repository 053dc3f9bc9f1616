// What AtomicFile may replace (core/file_io.h): regular files atomically, a symlink's target, and nothing
// else - a FIFO, a device or a directory is refused and left as it was.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "core/temp_cleanup.h"
#include "data/data_helpers.h"

namespace fs = std::filesystem;

TEST_CASE("core: AtomicFile replaces regular files and a symlink's target, never a FIFO or a device", "[core]") {
  const dtnn::test::ScratchDir dir("file_io_kinds");
  SECTION("a FIFO is refused and stays a FIFO") {
    const std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(dtnn::write_file_atomically(fifo, "x"), Catch::Contains(fifo) && Catch::Contains("a FIFO"));
    CHECK(fs::is_fifo(fifo));
    CHECK(dtnn::output_path_problem(fifo).find("a FIFO") != std::string::npos);
  }
  SECTION("a character device is refused") {
    // Asked, never written: run as root by a build whose check regressed, a write would replace the node.
    CHECK(dtnn::output_path_problem("/dev/full").find("a character device") != std::string::npos);
    CHECK(dtnn::output_path_problem("/dev/null").find("a character device") != std::string::npos);
  }
  SECTION("a directory is refused") {
    CHECK_THROWS_WITH(dtnn::write_file_atomically(dir.path, "x"), Catch::Contains("a directory"));
  }
  SECTION("a symlink is followed: the target is replaced, the link stays") {
    fs::create_directories(dir / "real");
    dtnn::write_file_atomically(dir / "real/out.txt", "old");
    fs::create_symlink("real/out.txt", dir / "link");
    dtnn::write_file_atomically(dir / "link", "new");
    CHECK(fs::is_symlink(dir / "link"));
    CHECK(dtnn::read_file(dir / "real/out.txt") == "new");
    CHECK(fs::is_empty(dir / "real") == false);
    CHECK(std::distance(fs::directory_iterator(dir / "real"), fs::directory_iterator()) == 1);  // no temp left
  }
  SECTION("a results database is never replaced by an output; a file that only starts alike is") {
    // SQLite's header (tests/results/test_store.cpp tries a real store through dtnn's options).
    const std::string db = dir / "results.db";
    const std::string before = std::string("SQLite format 3") + '\0' + std::string(100, 'x');
    dtnn::write_file_atomically(db, before);
    CHECK_THROWS_WITH(dtnn::write_file_atomically(db, "{}"), Catch::Contains(db) && Catch::Contains("is an SQLite database"));
    fs::create_symlink("results.db", dir / "report.json");
    CHECK(dtnn::output_path_problem(dir / "report.json").find("is an SQLite database") != std::string::npos);
    CHECK(dtnn::read_file(db) == before);
    dtnn::write_file_atomically(dir / "notes.txt", "SQLite format 2 is not 3");
    CHECK_NOTHROW(dtnn::write_file_atomically(dir / "notes.txt", "x"));
  }
  SECTION("a symlink to a FIFO is refused, naming the target") {
    const std::string fifo = dir / "fifo2";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_symlink(fifo, dir / "link2");
    CHECK_THROWS_WITH(dtnn::write_file_atomically(dir / "link2", "x"), Catch::Contains("a FIFO") && Catch::Contains(fifo));
    CHECK(fs::is_symlink(dir / "link2"));
    CHECK(fs::is_fifo(fifo));
  }
}

TEST_CASE("core: read_file stops at its limit, even on a file without an end", "[core]") {
  const dtnn::test::ScratchDir dir("file_io_limit");
  const std::string f = dir / "f.txt";
  dtnn::write_file_atomically(f, std::string(100, 'a'));
  CHECK(dtnn::read_file(f, 100).size() == 100);  // exactly the limit is allowed
  CHECK_THROWS_WITH(dtnn::read_file(f, 99), Catch::Contains(f) && Catch::Contains("larger than 99 bytes"));
  CHECK(dtnn::read_file(f).size() == 100);  // no limit by default
  // /dev/zero never ends: without the limit this would fill memory.
  CHECK_THROWS_WITH(dtnn::read_file("/dev/zero", 1 << 20), Catch::Contains("larger than 1048576 bytes"));
}

TEST_CASE("core: read_file of a FIFO nobody writes to is empty (not a hang), a pipe with a writer reads", "[core]") {
  const dtnn::test::ScratchDir dir("file_io_fifo");
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Before open_input, std::ifstream blocked in open() until a writer came: `dtnn run fifo` hung.
  CHECK(dtnn::read_file(fifo).empty());
  // `<(...)`: a writer holds the other end and writes after the reader opened; the reader waits for it.
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);  // blocks until the reader has opened
    if (fd >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      (void)!::write(fd, "abc", 3);
      ::close(fd);
    }
  });
  std::string got;
  for (int tries = 0; tries < 500 && got.empty(); ++tries) {  // empty until the writer thread has opened
    got = dtnn::read_file(fifo);
    if (got.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int late = got.empty() ? ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK) : -1;  // a late writer's open returns
  writer.join();
  if (late >= 0) ::close(late);
  CHECK(got == "abc");
  CHECK_THROWS_WITH(dtnn::read_file(dir.path), Catch::Contains("it is a directory"));
  CHECK_THROWS_WITH(dtnn::open_input(dir / "none"), Catch::Contains("none: cannot read the file (No such file"));
}

TEST_CASE("core: a stop signal before commit removes AtomicFile's temporary file and still ends the process", "[core]") {
  const dtnn::test::ScratchDir dir("file_io_signal");
  const std::string out = dir / "out.npz", kept = dir / "kept.tmp";
  dtnn::write_file_atomically(kept, "not registered");
  for (const int sig : {SIGTERM, SIGINT}) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // a command half way through writing an output when the signal comes
      for (const int s : {SIGTERM, SIGINT, SIGHUP}) std::signal(s, SIG_DFL);  // as a fresh process (not Catch's)
      dtnn::remove_temp_files_on_stop_signals();
      dtnn::AtomicFile f(out);
      f.write(std::string(1 << 20, 'x'));
      std::raise(sig);
      ::_exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));  // still ended by the signal (exit status 128 + N for a shell)
    CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(fs::exists(out + ".tmp." + std::to_string(child)));  // was left behind, 1 MiB per run
    CHECK_FALSE(fs::exists(out));
  }
  CHECK(fs::exists(kept));  // only registered temporaries are removed
  // A signal the process ignores stays ignored (dtnn run's handlers, nohup's SIG_IGN).
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGHUP, SIG_IGN);
    dtnn::remove_temp_files_on_stop_signals();
    std::raise(SIGHUP);
    ::_exit(7);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 7));
}

TEST_CASE("core: check_files_distinct refuses an output that is an input or another output", "[core]") {
  const dtnn::test::ScratchDir dir("file_io_distinct");
  using dtnn::CommandFile;
  const std::string db = dir / "r.db", out = dir / "out.xml";
  dtnn::write_file_atomically(db, "results");
  SECTION("distinct files, and unset options, pass") {
    CHECK_NOTHROW(dtnn::check_files_distinct({{"--junit", out, true}, {"--db", db, false}, {"--markdown", "", true}}));
    // Two inputs may be one file: only what is written can destroy something.
    CHECK_NOTHROW(dtnn::check_files_distinct({{"--db", db, false}, {"--targets", db, false}}));
  }
  SECTION("the same path") {
    CHECK_THROWS_WITH(dtnn::check_files_distinct({{"--junit", db, true}, {"--db", db, false}}),
                      Catch::Contains("--junit " + db + " is also --db") && Catch::Contains("replace an input"));
    CHECK(dtnn::read_file(db) == "results");
  }
  SECTION("another spelling of the path, a symlink and a hard link") {
    fs::create_directories(dir / "sub");
    const std::string dotted = dir.path + "/sub/../r.db";
    CHECK_THROWS(dtnn::check_files_distinct({{"--db", db, false}, {"--junit", dotted, true}}));
    fs::create_symlink(db, dir / "link.db");
    CHECK_THROWS(dtnn::check_files_distinct({{"--db", dir / "link.db", false}, {"--junit", db, true}}));
    fs::create_hard_link(db, dir / "hard.db");
    CHECK_THROWS(dtnn::check_files_distinct({{"--db", dir / "hard.db", false}, {"--junit", db, true}}));
  }
  SECTION("two outputs that do not exist yet, named alike") {
    CHECK_THROWS_WITH(dtnn::check_files_distinct({{"--report", out, true}, {"--history_file", dir.path + "/./out.xml", true}}),
                      Catch::Contains("two outputs of one command may not be the same file"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("a relative path and the absolute one") {
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path);
    const bool refused = [&] {
      try {
        dtnn::check_files_distinct({{"--db", "r.db", false}, {"--junit", db, true}});
      } catch (const dtnn::Error&) {
        return true;
      }
      return false;
    }();
    fs::current_path(cwd);
    CHECK(refused);
  }
  SECTION("a bare relative name and another spelling of it, neither existing yet") {
    // weakly_canonical("new.json") stays relative when nothing on it exists: `--report=new.json
    // --history_file=$PWD/new.json` wrote both to one file.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path);
    int refused = 0;
    for (const std::string& other : {dir.path + "/new.json", std::string("./new.json"), std::string("sub/../new.json")}) {
      try {
        dtnn::check_files_distinct({{"--report", "new.json", true}, {"--history_file", other, true}});
      } catch (const dtnn::Error&) {
        ++refused;
      }
    }
    fs::current_path(cwd);
    CHECK(refused == 3);
    CHECK_FALSE(fs::exists(dir / "new.json"));
  }
}
