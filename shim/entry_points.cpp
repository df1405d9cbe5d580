// shim/entry_points.cpp — the symbols the preload library exports: one line each.
#include <dlfcn.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <cstdarg>
#include <cstddef>
#include <new>

#include "allocscope_core.h"

// Start-up at load time, so that every observed process has a profile (even one that never
// allocates) and its start time is the image's.  (A library constructor that allocates earlier
// starts it instead.)  Only the preload library does this: tests drive the core by hand.
__attribute__((constructor)) static void allocscope_at_load() { allocscope_start(); }

#define EXPORT extern "C" __attribute__((visibility("default")))

// Tells the recorder that it runs as the preload library (real_allocator.cpp).
extern "C" __attribute__((visibility("hidden"))) const char allocscope_preload_marker = 1;

EXPORT void* malloc(size_t n) { return allocscope_malloc(n); }
EXPORT void free(void* p) { allocscope_free(p); }
EXPORT void* calloc(size_t n, size_t s) { return allocscope_calloc(n, s); }
EXPORT void* realloc(void* p, size_t n) { return allocscope_realloc(p, n); }
EXPORT void* reallocarray(void* p, size_t n, size_t s) { return allocscope_reallocarray(p, n, s); }
EXPORT int posix_memalign(void** o, size_t a, size_t n) { return allocscope_posix_memalign(o, a, n); }
EXPORT void* aligned_alloc(size_t a, size_t n) { return allocscope_aligned_alloc(a, n); }
EXPORT void* memalign(size_t a, size_t n) { return allocscope_memalign(a, n); }
EXPORT void* valloc(size_t n) { return allocscope_valloc(n); }
EXPORT void* pvalloc(size_t n) { return allocscope_pvalloc(n); }
EXPORT size_t malloc_usable_size(void* p) { return allocscope_malloc_usable_size(p); }
EXPORT void* dlopen(const char* f, int m) { return allocscope_dlopen(f, m); }
EXPORT int sigaction(int s, const struct sigaction* a, struct sigaction* o) { return allocscope_sigaction(s, a, o); }
EXPORT allocscope_sighandler signal(int s, allocscope_sighandler h) { return allocscope_signal(s, h); }
EXPORT int sigwait(const sigset_t* s, int* n) { return allocscope_sigwait(s, n); }
EXPORT int sigwaitinfo(const sigset_t* s, siginfo_t* i) { return allocscope_sigwaitinfo(s, i); }
EXPORT int sigtimedwait(const sigset_t* s, siginfo_t* i, const struct timespec* t) { return allocscope_sigtimedwait(s, i, t); }
EXPORT int signalfd(int fd, const sigset_t* m, int f) { return allocscope_signalfd(fd, m, f); }
EXPORT int sigaltstack(const stack_t* s, stack_t* o) { return allocscope_sigaltstack(s, o); }
EXPORT int pthread_sigmask(int h, const sigset_t* s, sigset_t* o) { return allocscope_pthread_sigmask(h, s, o); }
EXPORT int sigprocmask(int h, const sigset_t* s, sigset_t* o) { return allocscope_sigprocmask(h, s, o); }

// The C++ operators, replaceable global functions ([new.delete]): defined here, they come first in
// the search order like malloc.  Only the header <new> is used, none of the C++ runtime.
#define CXX __attribute__((visibility("default")))
using std::align_val_t;
using std::nothrow_t;
using std::size_t;
CXX void* operator new(size_t n) { return allocscope_new(n); }
CXX void* operator new(size_t n, const nothrow_t& t) noexcept { return allocscope_new_nothrow(n, &t); }
CXX void* operator new(size_t n, align_val_t a) { return allocscope_new_aligned(n, size_t(a)); }
CXX void* operator new(size_t n, align_val_t a, const nothrow_t& t) noexcept { return allocscope_new_aligned_nothrow(n, size_t(a), &t); }
CXX void* operator new[](size_t n) { return allocscope_new_array(n); }
CXX void* operator new[](size_t n, const nothrow_t& t) noexcept { return allocscope_new_array_nothrow(n, &t); }
CXX void* operator new[](size_t n, align_val_t a) { return allocscope_new_array_aligned(n, size_t(a)); }
CXX void* operator new[](size_t n, align_val_t a, const nothrow_t& t) noexcept { return allocscope_new_array_aligned_nothrow(n, size_t(a), &t); }
CXX void operator delete(void* p) noexcept { allocscope_delete(p); }
CXX void operator delete(void* p, const nothrow_t& t) noexcept { allocscope_delete_nothrow(p, &t); }
CXX void operator delete(void* p, size_t n) noexcept { allocscope_delete_sized(p, n); }
CXX void operator delete(void* p, align_val_t a) noexcept { allocscope_delete_aligned(p, size_t(a)); }
CXX void operator delete(void* p, align_val_t a, const nothrow_t& t) noexcept { allocscope_delete_aligned_nothrow(p, size_t(a), &t); }
CXX void operator delete(void* p, size_t n, align_val_t a) noexcept { allocscope_delete_sized_aligned(p, n, size_t(a)); }
CXX void operator delete[](void* p) noexcept { allocscope_delete_array(p); }
CXX void operator delete[](void* p, const nothrow_t& t) noexcept { allocscope_delete_array_nothrow(p, &t); }
CXX void operator delete[](void* p, size_t n) noexcept { allocscope_delete_array_sized(p, n); }
CXX void operator delete[](void* p, align_val_t a) noexcept { allocscope_delete_array_aligned(p, size_t(a)); }
CXX void operator delete[](void* p, align_val_t a, const nothrow_t& t) noexcept { allocscope_delete_array_aligned_nothrow(p, size_t(a), &t); }
CXX void operator delete[](void* p, size_t n, align_val_t a) noexcept { allocscope_delete_array_sized_aligned(p, n, size_t(a)); }

// The two pieces of the C++ runtime that unwinding through cxx_api.cpp's cleanups needs (a
// throwing operator new of the next definition): the process's own, found when first needed.
// Hidden: they never enter the program's symbol scope, and the library keeps no DT_NEEDED.
namespace {
template <class F>
F runtime_symbol(F& cache, const char* name) {
  F f = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (!f) {
    f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
    __atomic_store_n(&cache, f, __ATOMIC_RELEASE);
  }
  return f;
}
using Personality = int (*)(int, int, unsigned long, void*, void*);
using Resume = void (*)(void*);
Personality g_personality;
Resume g_resume;
}  // namespace

extern "C" __attribute__((visibility("hidden"))) int __gxx_personality_v0(
    int version, int actions, unsigned long exception_class, void* exception, void* context) {
  const Personality f = runtime_symbol(g_personality, "__gxx_personality_v0");
  return f ? f(version, actions, exception_class, exception, context) : 3 /* _URC_FATAL_PHASE1_ERROR */;
}

extern "C" __attribute__((visibility("hidden"), noreturn)) void _Unwind_Resume(void* exception) {
  const Resume f = runtime_symbol(g_resume, "_Unwind_Resume");
  if (f) f(exception);
  __builtin_trap();
}

EXPORT void _exit(int status) { allocscope__exit(status); }
EXPORT void _Exit(int status) { allocscope__Exit(status); }
EXPORT int execve(const char* p, char* const a[], char* const e[]) { return allocscope_execve(p, a, e); }
EXPORT int execv(const char* p, char* const a[]) { return allocscope_execv(p, a); }
EXPORT int execvp(const char* f, char* const a[]) { return allocscope_execvp(f, a); }
EXPORT int execvpe(const char* f, char* const a[], char* const e[]) { return allocscope_execvpe(f, a, e); }
EXPORT int fexecve(int fd, char* const a[], char* const e[]) { return allocscope_fexecve(fd, a, e); }
#define EXECL_ENTRY(name, kind)                                      \
  EXPORT int name(const char* p, const char* arg0, ...) {            \
    va_list ap;                                                      \
    va_start(ap, arg0);                                              \
    const int r = allocscope_execl_list(kind, p, arg0, ap);          \
    va_end(ap);                                                      \
    return r;                                                        \
  }
EXECL_ENTRY(execl, 0)
EXECL_ENTRY(execlp, 1)
EXECL_ENTRY(execle, 2)
