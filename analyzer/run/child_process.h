// child_process.h — runs one program as a child process, the way a shell runs a command.
//
// run_child() forks, execs `program` with exactly the environment given, waits, and returns the
// status a shell would report: the exit code, or 128 + the number of the signal that killed it.
// While it waits, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to this process are forwarded to the
// child instead of killing this process first (a terminal's ^C or ^\ already reaches the whole
// foreground process group, so those are not sent twice; signals ignored on entry stay ignored).
// A file that is neither ELF nor a "#!" script is run by /bin/sh, as execvp(3) does.
//
// Some values need the child's pid, which exists only after fork: PidTemplate values are
// completed in the child, before exec and without allocating.
//
// The result also holds what wait4(2) says the child used (its rusage, which includes the
// descendants it waited for) and the wall time from just before fork to the end of the wait.
#pragma once
#include <sys/resource.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace allocscope {

// prefix + decimal pid + suffix.
struct PidTemplate {
  std::string prefix;
  std::string suffix;
  std::string with_pid(pid_t pid) const;
};

struct ChildSpec {
  std::filesystem::path program;        // what to execute
  std::vector<std::string> argv;        // argv[0] is the command as the user typed it
  std::vector<std::string> env;         // the complete environment, "NAME=value"
  std::vector<PidTemplate> pid_env;     // more "NAME=value" entries, completed with the pid
  std::optional<PidTemplate> fresh_path;  // a path that must not exist: else the program does not run
  std::optional<std::filesystem::path> output;  // the child's stdout and stderr (created or truncated)
  std::optional<std::filesystem::path> directory;  // its working directory (default: ours)
  std::optional<double> time_limit;      // seconds: then it is killed (SIGKILL), killed_at_time_limit set
};

struct ChildResult {
  pid_t pid = -1;
  int status = 0;            // shell-style exit status
  int exec_errno = 0;        // the program could not be executed (status 127)
  bool fresh_path_existed = false;  // the child stopped before exec
  struct rusage usage {};    // from wait4: ru_maxrss is in KiB
  double wall_ns = 0;        // fork to the end of the wait
  bool killed_at_time_limit = false;
};

ChildResult run_child(const ChildSpec& spec);

// The last non-blank line of a child's output file (ChildSpec::output), printable and at most 160
// characters: what a program that failed said last.
std::string last_output_line(const std::filesystem::path& log);

}  // namespace allocscope
