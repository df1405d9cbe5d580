// shim/entry_points.cpp — the symbols the preload library exports: one line each.
#include <cstdarg>
#include <cstddef>

#include "allocscope_core.h"

// Start-up at load time, so that every observed process has a profile (even one that never
// allocates) and its start time is the image's.  (A library constructor that allocates earlier
// starts it instead.)  Only the preload library does this: tests drive the core by hand.
__attribute__((constructor)) static void allocscope_at_load() { allocscope_start(); }

#define EXPORT extern "C" __attribute__((visibility("default")))

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
