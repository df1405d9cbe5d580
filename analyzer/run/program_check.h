// program_check.h — finding the program a command runs, and whether LD_PRELOAD can observe it.
//
// resolve_command() searches PATH the way execvp(3) does.  inspect_executable() reads the start
// of a file: an ELF executable (its class, machine, and whether it has a PT_INTERP, i.e. is
// dynamically linked) or a "#!" script (its interpreter).  check_preloadable() follows "#!"
// interpreters as the kernel does (and treats a file that is neither as a /bin/sh script, as
// execvp does) down to the ELF that would really run, and says whether a preload library built
// for this machine can be loaded into it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace allocscope {

std::optional<std::filesystem::path> resolve_command(std::string_view command);

struct ExecutableInfo {
  enum class Kind { DynamicElf, StaticElf, Script, Other, Unreadable };
  Kind kind = Kind::Other;
  bool native = true;                   // ELF: same class and machine as this analyzer
  std::filesystem::path interpreter;    // ELF: PT_INTERP; script: the "#!" program
  std::string error;                    // Other, Unreadable: what is wrong with the file
};

ExecutableInfo inspect_executable(const std::filesystem::path& path);

// A file that cannot be read (but may still be executable) passes: execve will decide.
struct PreloadCheck {
  bool ok = false;
  std::filesystem::path elf;  // the ELF file that execve would load
  std::string problem;        // when !ok: "is statically linked", "is not a native …", …
};

PreloadCheck check_preloadable(const std::filesystem::path& program);

}  // namespace allocscope
