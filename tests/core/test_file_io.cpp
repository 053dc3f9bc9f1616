// What AtomicFile may replace (core/file_io.h): regular files atomically, a symlink's target, and nothing
// else - a FIFO, a device or a directory is refused and left as it was.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
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
  SECTION("a symlink to a FIFO is refused, naming the target") {
    const std::string fifo = dir / "fifo2";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_symlink(fifo, dir / "link2");
    CHECK_THROWS_WITH(dtnn::write_file_atomically(dir / "link2", "x"), Catch::Contains("a FIFO") && Catch::Contains(fifo));
    CHECK(fs::is_symlink(dir / "link2"));
    CHECK(fs::is_fifo(fifo));
  }
}
