// shim/sys.h — raw system calls for the shim.
//
// The shim must never change errno as the program sees it, never allocate, and must bind to the
// same symbols in glibc and musl.  Raw syscalls do all three: they return -errno instead of
// setting errno, and they reference no libc symbol at all.  Return values follow the kernel's
// convention: >= 0 success, -4095..-1 failure (-errno).
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/syscall.h>

namespace allocscope::sys {

#if defined(__x86_64__)
inline long call(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long call(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#else
#error "allocscope's shim supports x86_64 and aarch64"
#endif

inline bool failed(long r) { return r < 0 && r > -4096; }
// Signal `sig` (1-64) in a kernel signal mask (the first 8 bytes of both C libraries' sigset_t).
inline uint64_t signal_bit(int sig) { return uint64_t{1} << (sig - 1); }

inline long write(int fd, const void* buf, size_t n) { return call(SYS_write, fd, (long)buf, (long)n); }
inline long read(int fd, void* buf, size_t n) { return call(SYS_read, fd, (long)buf, (long)n); }
inline long close(int fd) { return call(SYS_close, fd); }
inline long openat(int dirfd, const char* path, int flags, int mode) {
  return call(SYS_openat, dirfd, (long)path, flags, mode);
}
inline long readlink(const char* path, char* buf, size_t n) {
  return call(SYS_readlinkat, -100 /* AT_FDCWD */, (long)path, (long)buf, (long)n);
}
inline int getpid() { return (int)call(SYS_getpid); }
inline int getppid() { return (int)call(SYS_getppid); }
inline int gettid() { return (int)call(SYS_gettid); }
inline long tgkill(int pid, int tid, int sig) { return call(SYS_tgkill, pid, tid, sig); }
inline void* mmap(void* addr, size_t len, int prot, int flags, int fd, long off) {
  long r = call(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
  return failed(r) ? nullptr : (void*)r;
}
inline long munmap(void* addr, size_t len) { return call(SYS_munmap, (long)addr, (long)len); }
inline long madvise(void* addr, size_t len, int advice) {
  return call(SYS_madvise, (long)addr, (long)len, advice);
}
inline long getrusage(int who, void* ru) { return call(SYS_getrusage, who, (long)ru); }
inline long clock_gettime(int clk, void* ts) { return call(SYS_clock_gettime, clk, (long)ts); }
inline long futex(int* uaddr, int op, int val, const void* timeout = nullptr) {
  return call(SYS_futex, (long)uaddr, op, val, (long)timeout);
}
// Reads another thread's memory of this process without faulting: -EFAULT where it is unmapped.
inline long process_vm_readv(int pid, const void* local, unsigned long nl, const void* remote, unsigned long nr) {
  return call(SYS_process_vm_readv, pid, (long)local, (long)nl, (long)remote, (long)nr, 0);
}
inline long sched_yield() { return call(SYS_sched_yield); }
inline long sched_getaffinity(int pid, size_t n, void* mask) { return call(SYS_sched_getaffinity, pid, (long)n, (long)mask); }

// Appends buf with one write(2) so that concurrent appends on an O_APPEND descriptor never
// interleave.  Retries only an EINTR that wrote nothing.  Returns 0, or -errno (-ENOSPC for a
// short write: the rest can't be appended without splitting the record).
inline long append_record(int fd, const void* buf, size_t n) {
  for (;;) {
    long r = write(fd, buf, n);
    if (r == -4 /* EINTR */) continue;
    if (failed(r)) return r;
    return static_cast<size_t>(r) == n ? 0 : -28 /* ENOSPC */;
  }
}

}  // namespace allocscope::sys
