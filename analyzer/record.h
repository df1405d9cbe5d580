// record.h — `allocscope record [-o FILE] [--allocator NAME|PATH] [--sample N] [--trace]
//             [--stacks[=N]] [--] CMD ARGS…`
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
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"

namespace allocscope {

struct RecordOptions {
  std::optional<std::filesystem::path> output;  // -o
  std::optional<std::string> allocator;         // --allocator
  std::optional<uint32_t> sample_every;         // --sample (0: count only, time nothing)
  bool trace = false;                           // --trace: every call
  std::optional<uint32_t> stacks_every;         // --stacks[=N]: a stack on 1 timed call in N
  std::vector<std::string> command;             // CMD ARGS…
};

// Parses the arguments after "record"; nullopt for --help.  Throws UsageError.
std::optional<RecordOptions> parse_record_options(CommandArgs args);

// LD_PRELOAD value: the shim, then the allocator, then what was preloaded before.  Throws
// std::runtime_error for paths LD_PRELOAD cannot express (containing ':' or a space).
std::string preload_list(const std::filesystem::path& shim,
                         const std::optional<std::filesystem::path>& allocator, const char* previous);

int record_command(CommandArgs args);

}  // namespace allocscope
