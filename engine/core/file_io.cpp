// See file_io.h.
#include "core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace dtnn {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, ": cannot read the file (it is a directory)");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, ": cannot read the file (", std::strerror(errno), ")");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path, ": cannot read the file (read error)");
  return ss.str();
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) fail(path_, ": cannot create ", tmp_, " (", std::strerror(errno), ")");
}

AtomicFile::~AtomicFile() {
  if (!file_) return;
  std::fclose(file_);
  std::remove(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  DTNN_CHECK(file_, path_, ": write after commit");
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) fail(path_, ": write error (", std::strerror(errno), ")");
}

void AtomicFile::commit() {
  DTNN_CHECK(file_, path_, ": committed twice");
  std::FILE* f = file_;
  file_ = nullptr;  // from here on failures clean up below, not in the destructor
  const bool synced = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int sync_errno = errno;
  if (std::fclose(f) != 0 || !synced) {
    const int err = synced ? errno : sync_errno;
    std::remove(tmp_.c_str());
    fail(path_, ": write error (", std::strerror(err), ")");
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp_.c_str());
    fail(path_, ": cannot rename ", tmp_, " into place (", std::strerror(err), ")");
  }
  // The rename is durable only once the directory entry is on disk. A directory that cannot be opened
  // or synced (some network file systems) leaves the file written but not crash-proof: not an error.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace dtnn
