#include "data/idx.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "core/file_io.h"

namespace dtnn {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads exactly n bytes or reports what went wrong (truncation or a zlib error). For a part of `what`:
// `done` of its `whole` bytes were read before (for the message).
void read_exact(gzFile file, const std::string& path, void* dst, size_t n, const char* what, size_t done = 0,
                size_t whole = 0) {
  auto* out = static_cast<uint8_t*>(dst) - done;
  n += done;
  if (whole == 0) whole = n;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(file, out + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(file, &errnum);
      fail(path, ": corrupt file while reading ", what, " (", msg ? msg : "zlib error", ")");
    }
    if (got == 0) fail(path, ": truncated file: ", what, " has ", done, " of ", whole, " bytes");
    done += static_cast<size_t>(got);
  }
}

}  // namespace

IdxArray read_idx_u8(const std::string& path, int expected_rank, const std::vector<int64_t>& inner) {
  const int fd = open_input(path);  // throws with the reason; a FIFO without a writer does not block
  std::unique_ptr<gzFile_s, GzCloser> file(gzdopen(fd, "rb"));
  if (!file) ::close(fd);
  DTNN_CHECK(file, path, ": cannot open file");
  uint8_t magic[4];
  read_exact(file.get(), path, magic, 4, "the header");
  DTNN_CHECK(magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08, path,
             ": not an unsigned-byte IDX file (bad magic number)");
  DTNN_CHECK(magic[3] == expected_rank, path, ": IDX rank is ", int(magic[3]), ", expected ", expected_rank);
  IdxArray array;
  int64_t total = 1;
  for (int i = 0; i < expected_rank; ++i) {
    uint8_t b[4];
    read_exact(file.get(), path, b, 4, "the dimensions");
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    DTNN_CHECK(d > 0 && d < (int64_t{1} << 31), path, ": dimension ", i, " is ", d);
    array.dims.push_back(d);
    // Checked before multiplying: three dimensions below 2^31 overflow int64 (and wrapped to a negative
    // size that passed this limit).
    DTNN_CHECK(d <= (int64_t{1} << 36) / total, path, ": declared size is implausibly large");
    total *= d;
  }
  if (!inner.empty()) {
    DTNN_ASSERT(inner.size() + 1 == static_cast<size_t>(expected_rank));
    std::vector<int64_t> have(array.dims.begin() + 1, array.dims.end());
    if (have != inner) {
      std::string got, want;
      for (size_t i = 0; i < inner.size(); ++i) {
        got += (i ? "x" : "") + std::to_string(have[i]);
        want += (i ? "x" : "") + std::to_string(inner[i]);
      }
      fail(path, ": samples are ", got, ", expected ", want);
    }
  }
  // In chunks that double (64 KiB, then as much as was read so far): a header declaring more than the file
  // holds fails at the truncation, having allocated at most twice what the file held (plus 64 KiB), never
  // the size it declares.
  const size_t size = static_cast<size_t>(total);
  for (size_t done = 0, n = 0; done < size; done += n) {
    n = std::min(std::max(done, size_t{1} << 16), size - done);
    array.data.resize(done + n);
    read_exact(file.get(), path, array.data.data() + done, n, "the data", done, size);
  }
  uint8_t extra;
  const int more = gzread(file.get(), &extra, 1);
  DTNN_CHECK(more == 0, path, more < 0 ? ": corrupt file after the data" : ": trailing bytes after the declared data");
  return array;
}

}  // namespace dtnn
