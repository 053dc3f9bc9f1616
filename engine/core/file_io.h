// Reading a whole file and writing one atomically: the only file helpers dtnn has.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtnn {

// A read-only file descriptor (O_CLOEXEC) of an input file; the caller closes it. Opened without blocking,
// then made blocking: a FIFO nobody writes to reads as an empty file instead of hanging in open() (a pipe
// from `<(...)` that has a writer reads as it should). Throws dtnn::Error "<path>: cannot read the file
// (<reason>)" when it cannot be opened or is a directory.
int open_input(const std::string& path);
// open_input for readers with their own error type (.npz): -1 and the reason in *why instead of a throw.
int try_open_input(const std::string& path, std::string* why);

// The whole file as bytes (opened by open_input). Throws dtnn::Error "<path>: cannot read the file
// (<reason>)" when it is a directory, cannot be opened, or a read fails, and "<path>: larger than <max_bytes> bytes ..." as soon as
// more than max_bytes were read: a limit stops /dev/zero or a wrong multi-GB file before it fills memory.
std::string read_file(const std::string& path, std::size_t max_bytes = static_cast<std::size_t>(-1));
// The limit for a JSON document a user names (benchmark files, run reports, step profiles, predictions):
// far above any such file, below what fills memory (`--profile /dev/zero` grew to gigabytes without one).
inline constexpr std::size_t kMaxJsonFileBytes = std::size_t{1} << 30;

// One file a command reads or writes, named as its user gave it ("--db", "c1.db").
struct CommandFile {
  std::string option;
  std::string path;  // "" when the option is not set (ignored)
  bool written;      // the command replaces it (an input that is also written, as --weights_and_bias_filename, counts once)
};
// Throws dtnn::Error "<option> <path> is also <other option>: ..." when a written file is another listed
// one: the same inode when both exist, else the same path once "." , ".." and symlinks of its directory are
// resolved. Called before anything is written, so `dtnn check --db r.db --junit r.db` destroys nothing.
void check_files_distinct(const std::vector<CommandFile>& files);
// Whether a and b name one file, by the rule above.
bool same_file(const std::string& a, const std::string& b);

// What may be written at an output path. Regular files are replaced atomically (AtomicFile), except an SQLite
// database (a results store: refused, never replaced by an output). A symlink
// is followed (up to 40 links): its final target is written atomically, in the target's directory, and
// the link stays. Anything else - a directory, FIFO, character or block device (/dev/full, /dev/null),
// socket - is refused and never replaced: rename() would put a regular file in its place. An absent path
// is created. Returns "" when `path` may be written, else the reason ("is a FIFO; ..."); *target (when
// given) receives the path the bytes land on. The answer can change before the write (another process):
// AtomicFile checks again when it opens.
std::string output_path_problem(const std::string& path, std::string* target = nullptr);

// A file that appears at `path` whole or not at all (`path` as output_path_problem allows: a symlink's
// target is what is replaced; other non-regular files throw at construction). Bytes go to
// `<target>.tmp.<pid>`; commit() flushes and fsyncs it, renames it over the target and fsyncs the
// directory, so after commit() returns the new file survives a crash. Destroyed without commit() (an
// exception on the way), it removes the temporary file and leaves whatever was at `path` untouched.
// Every failure (a write error such as a full disk or a file-size limit included) throws dtnn::Error
// naming `path` and the reason. A stop signal before commit() removes the temporary file where the command
// called remove_temp_files_on_stop_signals (core/temp_cleanup.h).
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Flushes and fsyncs the temporary file without renaming it: files that belong together (a Paraver trace's
  // .prv, .pcf and .row) are all synced first, so a full disk fails before any of them is replaced, then
  // committed. Throws as commit() does.
  void sync();
  void commit();  // sync() unless done, then the rename

 private:
  std::string path_, target_, tmp_;  // as given; where it resolves to; the temporary beside target_
  std::FILE* file_ = nullptr;
  bool synced_ = false;              // sync() done, the temporary not yet renamed
  int cleanup_slot_ = -1;            // core/temp_cleanup.h: removed if a stop signal ends the process
};

// Throws dtnn::Error "<option>=<path>: ..." for the first output (option, path; "" paths skipped) that
// cannot be written: its directory does not exist, or output_path_problem refuses it. Called before a
// command measures or trains, so a typo in an output's directory fails at once, not after the work.
void check_outputs_writable(const std::vector<std::pair<std::string, std::string>>& outputs);

// One AtomicFile holding `bytes`.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace dtnn
