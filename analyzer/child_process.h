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
#pragma once
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
};

struct ChildResult {
  pid_t pid = -1;
  int status = 0;            // shell-style exit status
  int exec_errno = 0;        // the program could not be executed (status 127)
  bool fresh_path_existed = false;  // the child stopped before exec
};

ChildResult run_child(const ChildSpec& spec);

}  // namespace allocscope
