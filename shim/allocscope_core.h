/* shim/allocscope_core.h — the recorder's plain C API.
 *
 * Each allocscope_<fn> does exactly what <fn> does (it forwards to the next allocator in the
 * search order) and records the call.  The preload library's exported malloc, free, … are one-line
 * calls into these; tests link the core directly and call them without LD_PRELOAD.
 * allocscope_configure must come before the first recorded call to take effect. */
#ifndef ALLOCSCOPE_CORE_H
#define ALLOCSCOPE_CORE_H
#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void* allocscope_malloc(size_t size);
void allocscope_free(void* ptr);
void* allocscope_calloc(size_t n, size_t size);
void* allocscope_realloc(void* ptr, size_t size);
void* allocscope_reallocarray(void* ptr, size_t n, size_t size);
int allocscope_posix_memalign(void** out, size_t align, size_t size);
void* allocscope_aligned_alloc(size_t align, size_t size);
void* allocscope_memalign(size_t align, size_t size);
void* allocscope_valloc(size_t size);
void* allocscope_pvalloc(size_t size);
size_t allocscope_malloc_usable_size(void* ptr);
void* allocscope_dlopen(const char* file, int mode);
/* sigaction and signal (signal_api.h): a handler installed on the holds' signal stops the holds. */
struct sigaction;
int allocscope_sigaction(int sig, const struct sigaction* act, struct sigaction* old);
typedef void (*allocscope_sighandler)(int);
allocscope_sighandler allocscope_signal(int sig, allocscope_sighandler handler);
/* sigwait, sigwaitinfo, sigtimedwait and signalfd (signal_api.h): the holds' signal (also the CPU
 * samples') is taken out of the set, so that a program never reads one as its own.  `set`, `info`
 * and `timeout` are the C library's sigset_t, siginfo_t and struct timespec. */
int allocscope_sigwait(const void* set, int* sig);
int allocscope_sigwaitinfo(const void* set, void* info);
int allocscope_sigtimedwait(const void* set, void* info, const void* timeout);
int allocscope_signalfd(int fd, const void* mask, int flags);
int allocscope_sigaltstack(const void* ss, void* old);
/* pthread_sigmask and sigprocmask (signal_api.h): a thread that blocks the shim's signal has no
 * CPU-sample timer meanwhile (cpu_samples.h). */
int allocscope_pthread_sigmask(int how, const void* set, void* old);
int allocscope_sigprocmask(int how, const void* set, void* old);

/* The C++ operators (cxx_api.cpp): operator new (allocscope_new*), new[] (allocscope_new_array*),
 * delete (allocscope_delete*) and delete[] (allocscope_delete_array*).  `nt` is the caller's
 * std::nothrow_t, `a` the std::align_val_t, `n` of a sized delete the size it was given.  The
 * throwing ones throw what the next definition throws. */
void* allocscope_new(size_t n);
void* allocscope_new_nothrow(size_t n, const void* nt);
void* allocscope_new_aligned(size_t n, size_t a);
void* allocscope_new_aligned_nothrow(size_t n, size_t a, const void* nt);
void* allocscope_new_array(size_t n);
void* allocscope_new_array_nothrow(size_t n, const void* nt);
void* allocscope_new_array_aligned(size_t n, size_t a);
void* allocscope_new_array_aligned_nothrow(size_t n, size_t a, const void* nt);
void allocscope_delete(void* p);
void allocscope_delete_nothrow(void* p, const void* nt);
void allocscope_delete_sized(void* p, size_t n);
void allocscope_delete_aligned(void* p, size_t a);
void allocscope_delete_aligned_nothrow(void* p, size_t a, const void* nt);
void allocscope_delete_sized_aligned(void* p, size_t n, size_t a);
void allocscope_delete_array(void* p);
void allocscope_delete_array_nothrow(void* p, const void* nt);
void allocscope_delete_array_sized(void* p, size_t n);
void allocscope_delete_array_aligned(void* p, size_t a);
void allocscope_delete_array_aligned_nothrow(void* p, size_t a, const void* nt);
void allocscope_delete_array_sized_aligned(void* p, size_t n, size_t a);

/* The image is replaced by exec: final flush; and the way back if the exec failed. */
void allocscope_image_ending(void);
void allocscope_exec_failed(void);
void allocscope__exit(int status) __attribute__((noreturn));
void allocscope__Exit(int status) __attribute__((noreturn));
int allocscope_execve(const char* path, char* const argv[], char* const envp[]);
int allocscope_execv(const char* path, char* const argv[]);
int allocscope_execvp(const char* file, char* const argv[]);
int allocscope_execvpe(const char* file, char* const argv[], char* const envp[]);
int allocscope_fexecve(int fd, char* const argv[], char* const envp[]);
/* execl (kind 0), execlp (1), execle (2): the variadic list after arg0. */
int allocscope_execl_list(int kind, const char* path, const char* arg0, va_list ap);

/* Starts recording now (calibration, profile file) instead of at the first allocator call. */
void allocscope_start(void);
/* Output path (NULL: from the environment) and 1-in-N timing (-1: from the environment). */
void allocscope_configure(const char* output_path, int sample_every);
/* Flushes every thread's statistics and events to the profile. */
void allocscope_flush(void);
/* Final flush and end-of-process record, as at exit. Later calls are forwarded, not recorded. */
void allocscope_shutdown(void);
/* The profile being written ("" when not recording). */
const char* allocscope_profile_path(void);

#ifdef __cplusplus
}
#endif
#endif
