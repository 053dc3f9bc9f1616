// A small .npz whose directory declares a huge uncompressed size: refused by deflate's maximum ratio, or,
// under it, failing after inflating what the file holds, without allocating the declared size first.
#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/data_helpers.h"
#include "io/npz.h"

using namespace dtnn;

namespace {

// A deflated archive of one uint8 array of `n` random bytes (so the entry barely compresses), with the
// central directory's uncompressed size replaced by `declared`. Returns the compressed size.
uint64_t write_lying_archive(const std::string& path, size_t n, uint64_t declared) {
  io::NpyArray a;
  a.name = "a";
  a.dtype = io::NpyDType::u8;
  a.shape = {static_cast<int64_t>(n)};
  Rng rng(7);
  a.bytes.resize(n);
  for (uint8_t& v : a.bytes) v = static_cast<uint8_t>(rng.below(256));
  io::write_npz(path, {a}, true);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  auto rd32 = [&](size_t p) { return b[p] | b[p + 1] << 8 | b[p + 2] << 16 | static_cast<uint32_t>(b[p + 3]) << 24; };
  const size_t cd = rd32(b.size() - 22 + 16);  // the one central-directory entry (no archive comment)
  for (int i = 0; i < 4; ++i) b[cd + 24 + i] = static_cast<uint8_t>(declared >> (8 * i));
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()),
                                                                static_cast<std::streamsize>(b.size()));
  return rd32(cd + 20);
}

// Runs read_npz(path) in a child whose address space may grow by at most `headroom` bytes; returns the
// error message it threw (or "no error" / "bad_alloc" / "crashed").
std::string read_with_memory_limit(const std::string& path, uint64_t headroom) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    long pages = 0;
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + headroom;
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    std::string msg = "no error";
    try {
      io::read_npz(path);
    } catch (const io::NpzError& e) {
      msg = e.what();
    } catch (const std::bad_alloc&) {
      msg = "bad_alloc";
    }
    if (::write(fds[1], msg.data(), msg.size()) < 0) ::_exit(2);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(k));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return msg.empty() ? "crashed" : msg;
}

}  // namespace

TEST_CASE("npz: a declared size the file cannot hold fails with a message, not an allocation", "[io][npz]") {
  const test::ScratchDir dir("npz_limits");
  const std::string path = dir / "lying.npz";
  SECTION("under deflate's 1032:1 ratio: inflates what is there (1 MiB), never allocates the ~1 GB claimed") {
    const uint64_t csize = write_lying_archive(path, 1u << 20, 0);
    write_lying_archive(path, 1u << 20, csize * 1000);
    const std::string msg = read_with_memory_limit(path, 256u << 20);
    CHECK_THAT(msg, Catch::Contains(path) && Catch::Contains("'a.npy'") && Catch::Contains("does not match the declared"));
  }
  SECTION("over the ratio: refused before inflating") {
    write_lying_archive(path, 4096, 0xfffffff0u);
    const std::string msg = read_with_memory_limit(path, 256u << 20);
    CHECK_THAT(msg, Catch::Contains(path) && Catch::Contains("more than deflate can produce"));
    CHECK_THROWS_WITH(io::read_npz_info(path), Catch::Contains("more than deflate can produce"));
  }
}
