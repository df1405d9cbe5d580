// Running a child like a shell: exit statuses, exec failures, pid-dependent values, signals.
#include "run/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "temp_dir.h"

extern char** environ;

namespace allocscope {
namespace {

namespace fs = std::filesystem;

ChildSpec shell(const std::string& script) {
  ChildSpec spec;
  spec.program = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  for (char** entry = environ; *entry; ++entry) spec.env.emplace_back(*entry);
  return spec;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ChildProcess, ReturnsTheExitCode) {
  EXPECT_EQ(run_child(shell("exit 0")).status, 0);
  EXPECT_EQ(run_child(shell("exit 3")).status, 3);
}

TEST(ChildProcess, KilledBySignalIs128PlusTheSignal) {
  EXPECT_EQ(run_child(shell("kill -TERM $$")).status, 128 + SIGTERM);
  EXPECT_EQ(run_child(shell("kill -KILL $$")).status, 128 + SIGKILL);
}

TEST(ChildProcess, ExecFailureIs127WithTheErrno) {
  ChildSpec spec = shell("");
  spec.program = "/nonexistent/program";
  const ChildResult result = run_child(spec);
  EXPECT_EQ(result.status, 127);
  EXPECT_EQ(result.exec_errno, ENOENT);
}

TEST(ChildProcess, FilesWithoutShebangRunUnderTheShell) {
  test::TempDir dir;
  std::ofstream(dir.file("script")) << "exit 42\n";
  fs::permissions(dir.file("script"), fs::perms::owner_all);
  ChildSpec spec = shell("");
  spec.program = dir.file("script");
  spec.argv = {"script"};
  const ChildResult result = run_child(spec);
  EXPECT_EQ(result.exec_errno, 0);
  EXPECT_EQ(result.status, 42);
}

TEST(ChildProcess, PidTemplatesAreCompletedWithTheChildsPid) {
  test::TempDir dir;
  ChildSpec spec = shell("printf '%s %s' \"$MY_PID\" \"$$\" > \"$OUT\"");
  spec.env.push_back("OUT=" + dir.file("out").string());
  spec.pid_env.push_back({"MY_PID=<", ">"});
  const ChildResult result = run_child(spec);
  EXPECT_EQ(result.status, 0);
  const std::string pid = std::to_string(result.pid);
  EXPECT_EQ(read_file(dir.file("out")), "<" + pid + "> " + pid);
  EXPECT_EQ(PidTemplate({"a.", ".b"}).with_pid(42), "a.42.b");
}

TEST(ChildProcess, RunsOnlyWhenTheFreshPathDoesNotExist) {
  test::TempDir dir;
  ChildSpec spec = shell("echo ran > \"$MARK\"");
  spec.env.push_back("MARK=" + dir.file("mark").string());
  spec.fresh_path = PidTemplate{dir.file("profile.").string(), ".asp"};
  EXPECT_FALSE(run_child(spec).fresh_path_existed);
  EXPECT_TRUE(fs::exists(dir.file("mark")));

  fs::remove(dir.file("mark"));
  spec.fresh_path = PidTemplate{"/proc/", ""};  // the child's own /proc entry always exists
  const ChildResult refused = run_child(spec);
  EXPECT_TRUE(refused.fresh_path_existed);
  EXPECT_NE(refused.status, 0);
  EXPECT_FALSE(fs::exists(dir.file("mark")));
}

TEST(ChildProcess, OutputGoesToTheGivenFile) {
  test::TempDir dir;
  ChildSpec spec = shell("echo out; echo err >&2");
  spec.output = dir.file("log");
  EXPECT_EQ(run_child(spec).status, 0);
  EXPECT_EQ(read_file(dir.file("log")), "out\nerr\n");
  spec.output = dir.file("missing-dir") / "log";
  EXPECT_THROW(run_child(spec), std::system_error);
}

TEST(ChildProcess, ReportsTheChildsResourceUseAndWallTime) {
  // A shell that fills 64 MiB: its peak resident set must show it, whatever else it holds.
  const ChildResult big = run_child(shell("x=$(head -c 67108864 /dev/zero | tr '\\0' a); echo ${#x} > /dev/null"));
  const ChildResult small = run_child(shell("exit 0"));
  EXPECT_EQ(big.status, 0);
  EXPECT_GT(big.usage.ru_maxrss, small.usage.ru_maxrss + 32 * 1024);  // KiB
  const ChildResult slept = run_child(shell("sleep 0.2"));
  EXPECT_GE(slept.wall_ns, 0.2e9);
  EXPECT_GT(small.wall_ns, 0);
}

TEST(ChildProcess, ForwardsTerminationSignalsToTheChild) {
  test::TempDir dir;
  const fs::path ready = dir.file("ready");
  ChildSpec spec = shell("trap 'exit 7' TERM; : > \"$READY\"; while :; do sleep 0.05; done");
  spec.env.push_back("READY=" + ready.string());
  std::thread killer([&] {
    sigset_t term;  // let the thread inside run_child take the signal
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
    for (int i = 0; i < 400 && !fs::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    kill(getpid(), SIGTERM);  // to us: run_child must pass it on instead of dying
  });
  const ChildResult result = run_child(spec);
  killer.join();
  EXPECT_EQ(result.status, 7);
}

}  // namespace
}  // namespace allocscope
