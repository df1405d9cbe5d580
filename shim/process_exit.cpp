// shim/process_exit.cpp — flushing the profile when the image ends without running destructors.
//
// _exit/_Exit skip atexit handlers and library destructors, and exec replaces the image: without
// these wrappers a fork child that ends in _exit (the usual pattern) or a process that execs would
// lose everything since its last periodic flush.  In a vfork child (which shares its parent's
// memory) the pid check in shutdown_process keeps the parent's profile untouched.
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

#include "allocscope_core.h"
#include "cpu_samples.h"
#include "peer_waits.h"
#include "process_state.h"
#include "recorder.h"
#include "sys.h"

using namespace allocscope;

extern "C" void allocscope_image_ending(void);
extern "C" void allocscope_exec_failed(void);

namespace {

template <class F>
F next_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// Calls the next definition of an exec function, or fails with ENOSYS where the libc lacks it.
template <class F, class... Args>
int call_next_exec(const char* name, Args... args) {
  allocscope_image_ending();
  stop_cpu_samples(t_ctx.slot);  // no sample may be pending across the exec: it would end the next program
  drop_pending_hold_signal();
  const F real = next_symbol<F>(name);
  int r = -1;
  if (real) r = real(args...);
  else errno = ENOSYS;
  allocscope_exec_failed();  // only reached when the exec failed
  return r;
}

[[noreturn]] void exit_group(int status) {
  for (;;) sys::call(SYS_exit_group, status);
}

// Builds argv for the execl family on the stack. Returns false if there are too many arguments.
constexpr int kMaxListArgs = 4096;

}  // namespace

extern "C" {

void allocscope_image_ending(void) { shutdown_process(format::ExitKind::Exec); }

void allocscope_exec_failed(void) { resume_after_failed_exec(); }

void allocscope__exit(int status) {  // noreturn: allocscope_core.h
  shutdown_process(format::ExitKind::UnderscoreExit);
  auto real = next_symbol<void (*)(int)>("_exit");
  if (real) real(status);
  exit_group(status);
}

void allocscope__Exit(int status) {  // noreturn: allocscope_core.h
  shutdown_process(format::ExitKind::UnderscoreExit);
  auto real = next_symbol<void (*)(int)>("_Exit");
  if (real) real(status);
  exit_group(status);
}

int allocscope_execve(const char* path, char* const argv[], char* const envp[]) {
  return call_next_exec<int (*)(const char*, char* const*, char* const*)>("execve", path, argv, envp);
}

int allocscope_execv(const char* path, char* const argv[]) {
  return call_next_exec<int (*)(const char*, char* const*)>("execv", path, argv);
}

int allocscope_execvp(const char* file, char* const argv[]) {
  return call_next_exec<int (*)(const char*, char* const*)>("execvp", file, argv);
}

int allocscope_execvpe(const char* file, char* const argv[], char* const envp[]) {
  return call_next_exec<int (*)(const char*, char* const*, char* const*)>("execvpe", file, argv, envp);
}

int allocscope_fexecve(int fd, char* const argv[], char* const envp[]) {
  return call_next_exec<int (*)(int, char* const*, char* const*)>("fexecve", fd, argv, envp);
}

int allocscope_execl_list(int kind, const char* path, const char* arg0, va_list ap) {
  char* argv[kMaxListArgs];
  int n = 0;
  argv[n++] = const_cast<char*>(arg0);
  while (argv[n - 1] != nullptr) {
    if (n == kMaxListArgs) {
      errno = E2BIG;
      return -1;
    }
    argv[n++] = va_arg(ap, char*);
  }
  if (kind == 2) {  // execle: the environment follows the terminating NULL
    char* const* envp = va_arg(ap, char* const*);
    return allocscope_execve(path, argv, envp);
  }
  return kind == 1 ? allocscope_execvp(path, argv) : allocscope_execv(path, argv);
}

}  // extern "C"
