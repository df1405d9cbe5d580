#include "run/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "util/units.h"

namespace allocscope {

namespace {

constexpr std::array kForwardedSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kReportFreshPathExisted = -1;  // sent instead of an errno
constexpr int kExitCannotExecute = 127;
constexpr int kExitNotStarted = 2;

volatile sig_atomic_t g_forward_to = 0;

void forward_signal(int signal, siginfo_t* info, void*) {
  if (info && info->si_code == SI_KERNEL) return;  // from the terminal: the child got it too
  const pid_t child = g_forward_to;
  if (child > 0) kill(child, signal);
}

// Installs forward_signal for the forwarded signals (except those ignored), restores on exit.
class SignalForwarding {
 public:
  SignalForwarding() {
    for (size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], nullptr, &saved_[i]);
      if (saved_[i].sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_sigaction = forward_signal;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      sigaction(kForwardedSignals[i], &action, nullptr);
    }
  }
  ~SignalForwarding() {
    for (size_t i = 0; i < kForwardedSignals.size(); ++i) sigaction(kForwardedSignals[i], &saved_[i], nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  std::array<struct sigaction, kForwardedSignals.size()> saved_{};
};

// Everything the child needs, prepared before fork so that the child does not allocate.
struct ExecImage {
  std::vector<std::string> fixed_env;
  std::vector<std::vector<char>> pid_env;  // buffers for the completed templates
  std::vector<char> fresh_path;
  std::vector<char*> argv;
  std::vector<char*> sh_argv;  // /bin/sh PROGRAM ARGS…, for files execve refuses with ENOEXEC
  std::vector<char*> envp;
};

constexpr size_t kMaxPidDigits = 20;

std::vector<char> pid_buffer(const PidTemplate& t) {
  return std::vector<char>(t.prefix.size() + kMaxPidDigits + t.suffix.size() + 1, '\0');
}

ExecImage prepare(const ChildSpec& spec) {
  ExecImage image;
  image.fixed_env = spec.env;
  for (const auto& t : spec.pid_env) image.pid_env.push_back(pid_buffer(t));
  if (spec.fresh_path) image.fresh_path = pid_buffer(*spec.fresh_path);
  auto* program = const_cast<char*>(spec.program.c_str());
  image.sh_argv.push_back(const_cast<char*>("/bin/sh"));
  image.sh_argv.push_back(program);
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    image.argv.push_back(const_cast<char*>(spec.argv[i].c_str()));
    if (i > 0) image.sh_argv.push_back(const_cast<char*>(spec.argv[i].c_str()));
  }
  image.argv.push_back(nullptr);
  image.sh_argv.push_back(nullptr);
  for (auto& entry : image.fixed_env) image.envp.push_back(entry.data());
  for (auto& buffer : image.pid_env) image.envp.push_back(buffer.data());
  image.envp.push_back(nullptr);
  return image;
}

// Async-signal-safe: writes prefix + pid + suffix + NUL into `out` (sized by pid_buffer).
void complete(const PidTemplate& t, pid_t pid, char* out) {
  char digits[kMaxPidDigits];
  size_t n = 0;
  auto value = static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  std::memcpy(out, t.prefix.data(), t.prefix.size());
  out += t.prefix.size();
  while (n > 0) *out++ = digits[--n];
  std::memcpy(out, t.suffix.data(), t.suffix.size());
  out[t.suffix.size()] = '\0';
}

void report(int fd, int code) {
  while (write(fd, &code, sizeof code) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void child_main(const ChildSpec& spec, ExecImage& image, int report_fd, int output_fd,
                             const sigset_t& mask) {
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  if (output_fd >= 0 && (dup2(output_fd, STDOUT_FILENO) < 0 || dup2(output_fd, STDERR_FILENO) < 0)) {
    report(report_fd, errno);
    _exit(kExitCannotExecute);
  }
  if (spec.directory && chdir(spec.directory->c_str()) != 0) {
    report(report_fd, errno);
    _exit(kExitCannotExecute);
  }
  const pid_t pid = getpid();
  for (size_t i = 0; i < spec.pid_env.size(); ++i) complete(spec.pid_env[i], pid, image.pid_env[i].data());
  if (spec.fresh_path) {
    complete(*spec.fresh_path, pid, image.fresh_path.data());
    if (access(image.fresh_path.data(), F_OK) == 0) {
      report(report_fd, kReportFreshPathExisted);
      _exit(kExitNotStarted);
    }
  }
  execve(spec.program.c_str(), image.argv.data(), image.envp.data());
  if (errno == ENOEXEC) execve("/bin/sh", image.sh_argv.data(), image.envp.data());
  report(report_fd, errno);
  _exit(kExitCannotExecute);
}

// What the child sent before exec: 0 when exec succeeded (the pipe closed on exec).
int read_report(int fd) {
  int code = 0;
  ssize_t got;
  while ((got = read(fd, &code, sizeof code)) < 0 && errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof code) ? code : 0;
}

// Waits for `pid`; past `deadline` (when given) kills it with SIGKILL first and says so.
int wait_for(pid_t pid, struct rusage& usage, std::optional<std::chrono::steady_clock::time_point> deadline,
             bool& killed) {
  int status = 0;
  if (deadline) {
    for (;;) {
      const pid_t done = wait4(pid, &status, WNOHANG, &usage);
      if (done == pid) break;
      if (done < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
      if (std::chrono::steady_clock::now() >= *deadline) {
        kill(pid, SIGKILL);
        killed = true;
        deadline.reset();
        break;
      }
      usleep(5000);
    }
  }
  while (!deadline && wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "wait4");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

std::string PidTemplate::with_pid(pid_t pid) const { return prefix + std::to_string(pid) + suffix; }

ChildResult run_child(const ChildSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("run_child: empty argv");
  ExecImage image = prepare(spec);
  int output_fd = -1;
  if (spec.output) {
    output_fd = open(spec.output->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (output_fd < 0) {
      throw std::system_error(errno, std::generic_category(), "cannot create " + spec.output->string());
    }
  }
  struct OutputCloser {
    int fd;
    ~OutputCloser() {
      if (fd >= 0) close(fd);
    }
  } output_closer{output_fd};

  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int signal : kForwardedSignals) sigaddset(&forwarded, signal);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);  // until the forwarding handlers are in place

  const auto started = std::chrono::steady_clock::now();
  int report_pipe[2];
  if (pipe2(report_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    throw std::system_error(error, std::generic_category(), "pipe2");
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(report_pipe[0]);
    child_main(spec, image, report_pipe[1], output_fd, previous);
  }
  const int fork_errno = errno;
  close(report_pipe[1]);
  if (pid < 0) {
    close(report_pipe[0]);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    throw std::system_error(fork_errno, std::generic_category(), "fork");
  }

  ChildResult result;
  result.pid = pid;
  {
    g_forward_to = pid;
    SignalForwarding forwarding;
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    const int code = read_report(report_pipe[0]);
    close(report_pipe[0]);
    result.fresh_path_existed = code == kReportFreshPathExisted;
    result.exec_errno = code > 0 ? code : 0;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (spec.time_limit) {
      deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(*spec.time_limit));
    }
    result.status = wait_for(pid, result.usage, deadline, result.killed_at_time_limit);
    result.wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    sigprocmask(SIG_BLOCK, &forwarded, nullptr);
    g_forward_to = 0;
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return result;
}

std::string last_output_line(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  std::string line, last;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (!line.empty()) last = line;
  }
  constexpr size_t kMax = 160;
  if (last.size() > kMax) last = last.substr(0, kMax) + "...";
  return printable(last);
}

}  // namespace allocscope
