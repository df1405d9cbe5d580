// record.h — `allocscope record [-o FILE] [--allocator NAME|PATH] [--sample N] [--trace]
//             [--stacks[=N]] [--locks] [--] CMD ARGS…`
//
// Runs CMD with the shim preloaded (LD_PRELOAD=<shim>[:<allocator>][:<previous LD_PRELOAD>]) and
// tells the shim where to write: ALLOCSCOPE_OUTPUT=<file>, ALLOCSCOPE_ROOT_PID=<CMD's pid>.  The
// process CMD starts as writes <file>; any other process writes <file>.<pid> (or
// <file>.<pid>.<n> when that exists).  Without -o, <file> is allocscope.<CMD basename>.<pid>.asp
// in the current directory.  An existing <file> is never overwritten.
//
// record refuses (exit 2) when the shim or allocator cannot be found or when CMD is statically
// linked; otherwise it exits with CMD's own status (128 + signal if CMD was killed, 127 if it
// could not be executed) after saying on stderr which profiles were written.
//
// record_program() is the same run as a library call, for commands that record many runs
// (compare): it says nothing on stderr and returns what happened instead.
#pragma once
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "run/child_process.h"

namespace allocscope {

struct RecordOptions {
  std::optional<std::filesystem::path> output;  // -o
  bool force = false;                           // --force: -o may replace an existing file
  std::optional<std::string> allocator;         // --allocator
  std::optional<uint32_t> sample_every;         // --sample (0: count only, time nothing)
  bool trace = false;                           // --trace: every call
  std::optional<uint32_t> stacks_every;         // --stacks[=N]: a stack on 1 timed call in N
  bool locks = false;                           // --locks: the program's contended lock waits
  bool no_lock_test = false;                    // --no-lock-test: no lock test after the run (run/lock_test.h)
  std::vector<std::string> command;             // CMD ARGS…
  std::optional<std::filesystem::path> program; // what to execute for CMD (default: CMD looked up in PATH)
  std::optional<std::filesystem::path> command_output;  // CMD's stdout and stderr go here (not a
                                                         // command-line option: compare uses it)
};

class CommandNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RecordedRun {
  ChildResult child;                        // status, exec errno, rusage, wall time
  std::filesystem::path profile;            // the profile of CMD's own process
  bool profile_written = false;
  std::vector<std::filesystem::path> other_profiles;  // of the processes CMD started, in order
};

// LD_PRELOAD value: the shim, then the allocator, then what was preloaded before.  Throws
// std::runtime_error for paths LD_PRELOAD cannot express (containing ':' or a space).
std::string preload_list(const std::filesystem::path& shim,
                         const std::optional<std::filesystem::path>& allocator, const char* previous);

// The program `command` runs (looked up in PATH), checked to be one the shim can observe.  Throws
// CommandNotFound, or std::runtime_error saying what is wrong (statically linked, another machine…).
std::filesystem::path observable_program(const std::string& command);
// Only the check, for a program already found.
void check_observable(const std::string& command, const std::filesystem::path& program);

// Runs CMD as `record` does.  Throws CommandNotFound, ShimNotFound, AllocatorLookupError and
// std::runtime_error (a statically linked CMD, an existing output file) before running anything.
RecordedRun record_program(const RecordOptions& options);

// `record`'s run: runs CMD, says on stderr where its profiles went (or why it could not be
// executed) and returns CMD's exit status (127: CMD was not found).
int record_and_report(const RecordOptions& options);

}  // namespace allocscope
