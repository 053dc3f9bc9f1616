// See file_io.h.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/temp_cleanup.h"

namespace dtnn {

int try_open_input(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  const bool is_dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  const int flags = ::fcntl(fd, F_GETFL);
  if (is_dir || flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    *why = is_dir ? "it is a directory" : std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int open_input(const std::string& path) {
  std::string why;
  const int fd = try_open_input(path, &why);
  if (fd < 0) fail(path, ": cannot read the file (", why, ")");
  return fd;
}

std::string read_file(const std::string& path, std::size_t max_bytes) {
  const int fd = open_input(path);
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {  // in chunks, so the limit holds for files whose size stat() does not tell (/dev/zero, a FIFO)
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      fail(path, ": cannot read the file (", std::strerror(err), ")");
    }
    if (got == 0) break;
    if (static_cast<std::size_t>(got) > max_bytes - std::min(max_bytes, bytes.size())) {
      ::close(fd);
      fail(path, ": larger than ", max_bytes, " bytes, more than such a file can be (not the file meant?)");
    }
    bytes.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return bytes;
}

namespace {

// `path` as it will be opened: absolute, with "." and ".." and its directory's symlinks resolved (the file
// itself need not exist). Falls back to the absolute path when that cannot be resolved. Made absolute
// first: weakly_canonical leaves a bare relative name ("r.json") as it is when nothing on it exists, while
// "./r.json" or "$PWD/r.json" becomes absolute, so the same new file compared unequal to itself.
std::filesystem::path resolved(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return std::filesystem::path(path).lexically_normal();
  std::filesystem::path p = std::filesystem::weakly_canonical(absolute, ec);
  if (ec) p = absolute.lexically_normal();
  return p;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;  // hard links and symlinks included
  return resolved(a) == resolved(b);
}

void check_files_distinct(const std::vector<CommandFile>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].written || files[i].path.empty()) continue;
    for (size_t j = 0; j < files.size(); ++j) {
      if (j == i || files[j].path.empty() || (files[j].written && j < i)) continue;  // each written pair once
      if (same_file(files[i].path, files[j].path))
        fail(files[i].option, " ", files[i].path, " is also ", files[j].option,
             files[j].written ? ": two outputs of one command may not be the same file"
                              : ": writing it would replace an input; give another path");
    }
  }
}

namespace {

// Follows symlinks from path (at most 40, as Linux does) to the path a write would land on.
std::string follow_links(const std::string& path, std::string* why) {
  std::string p = path;
  for (int hop = 0; hop < 40; ++hop) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const std::filesystem::path link = std::filesystem::read_symlink(p, ec);
    if (ec) {
      *why = "cannot read the symlink (" + ec.message() + ")";
      return p;
    }
    p = link.is_absolute() ? link.string() : (std::filesystem::path(p).parent_path() / link).string();
  }
  *why = "too many levels of symbolic links";
  return p;
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string output_path_problem(const std::string& path, std::string* target) {
  std::string why;
  const std::string t = follow_links(path, &why);
  if (target) *target = t;
  if (!why.empty()) return why;
  struct stat st {};
  if (::lstat(t.c_str(), &st) != 0) return "";  // absent: created
  if (S_ISREG(st.st_mode)) {
    // A results database is the one regular file an output option must never replace: `--report=results.db`
    // (a slip of the tab key) destroyed every stored run. Recognised by SQLite's 16-byte header.
    char head[16] = {};
    std::FILE* f = std::fopen(t.c_str(), "rb");
    const bool sqlite = f && std::fread(head, 1, sizeof head, f) == sizeof head &&
                        std::memcmp(head, "SQLite format 3", sizeof head) == 0;  // (the 16th byte is the NUL)
    if (f) std::fclose(f);
    if (sqlite)
      return std::string("is an SQLite database (a results store?)") + (t == path ? "" : " (the symlink's target " + t + ")") +
             "; dtnn does not replace one with another file (remove it first if that is meant)";
    return "";
  }
  return std::string("is ") + kind_of(st.st_mode) + (t == path ? "" : " (the symlink's target " + t + ")") +
         "; dtnn writes regular files only and replaces nothing else";
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  const std::string why = output_path_problem(path_, &target_);
  if (!why.empty()) fail(path_, ": ", why);
  tmp_ = target_ + ".tmp." + std::to_string(::getpid());
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) fail(path_, ": cannot create ", tmp_, " (", std::strerror(errno), ")");
  cleanup_slot_ = register_temp_file(tmp_);  // removed if a stop signal ends the process before the rename
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (file_ || synced_) std::remove(tmp_.c_str());  // written (or synced) but never renamed into place
  unregister_temp_file(cleanup_slot_);
}

void AtomicFile::write(const void* data, std::size_t size) {
  DTNN_CHECK(file_, path_, ": write after commit");
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) fail(path_, ": write error (", std::strerror(errno), ")");
}

void AtomicFile::sync() {
  DTNN_CHECK(file_, path_, ": synced after commit");
  std::FILE* f = file_;
  file_ = nullptr;  // from here on failures clean up below, not in the destructor
  const bool synced = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int sync_errno = errno;
  if (std::fclose(f) != 0 || !synced) {
    const int err = synced ? errno : sync_errno;
    std::remove(tmp_.c_str());
    fail(path_, ": write error (", std::strerror(err), ")");
  }
  synced_ = true;
}

void AtomicFile::commit() {
  DTNN_CHECK(file_ || synced_, path_, ": committed twice");
  if (file_) sync();
  synced_ = false;  // the temporary is renamed or removed below: nothing left for the destructor
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp_.c_str());
    fail(path_, ": cannot rename ", tmp_, " into place (", std::strerror(err), ")");
  }
  unregister_temp_file(cleanup_slot_);  // the name is the target's now: a signal must not remove it
  cleanup_slot_ = -1;
  // The rename is durable only once the directory entry is on disk. A directory that cannot be opened
  // or synced (some network file systems) leaves the file written but not crash-proof: not an error.
  std::string dir = std::filesystem::path(target_).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void check_outputs_writable(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (const auto& [option, path] : outputs) {
    if (path.empty()) continue;
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
    if (ec || !std::filesystem::is_directory(dir, ec))
      fail(option, "=", path, ": directory ", dir.string(), " does not exist");
    const std::string why = output_path_problem(path);
    if (!why.empty()) fail(option, "=", path, ": ", why);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace dtnn
