// Reading a whole file and writing one atomically: the only file helpers dtnn has.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace dtnn {

// The whole file as bytes. Throws dtnn::Error "<path>: cannot read the file (<reason>)" when it is a
// directory, cannot be opened, or a read fails.
std::string read_file(const std::string& path);

// A file that appears at `path` whole or not at all. Bytes go to `path.tmp.<pid>`; commit() flushes and
// fsyncs it, renames it over `path` and fsyncs the directory, so after commit() returns the new file
// survives a crash. Destroyed without commit() (an exception on the way), it removes the temporary file and
// leaves whatever was at `path` untouched. Every failure throws dtnn::Error naming `path` and the reason.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

// One AtomicFile holding `bytes`.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace dtnn
