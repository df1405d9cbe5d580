/* glue.h — what musl's mallocng (src/malloc/mallocng/ of musl's source) expects from musl's
 * internals, provided on top of glibc so that mallocng builds as a preloadable allocator
 * (libmallocng.so) for glibc processes. The set-up script copies mallocng's sources next to this
 * file, in place of musl's own glue.h; mallocng's code is used unchanged.
 *
 * What differs from musl's glue, and why:
 * - malloc, realloc, free keep their public names (musl renames them to __libc_* and wraps them);
 *   aligned_alloc is never disabled (it is ours, not a replaced one).
 * - Locking: one global lock, __malloc_lock, taken by rdlock() and wrlock() exactly as in musl,
 *   with a lock of the same design as musl's __lock/__unlock (preload.c).
 * - "Need locks": musl locks only once the process has started a second thread (libc.need_locks,
 *   set by pthread_create). Under glibc the same information is __libc_single_threaded, which
 *   glibc clears in pthread_create before the new thread exists. Unlike musl's flag it never
 *   turns back on when the process returns to one thread, so such a process keeps locking: an
 *   uncontended lock costs one atomic and no syscall, so this changes little. Built with
 *   -DMALLOCNG_ALWAYS_LOCK the allocator locks on every call whatever the thread count.
 * - brk, mmap, madvise, mremap, mprotect go through glibc's wrappers (musl's are direct syscalls).
 * - The heap secret comes from AT_RANDOM via getauxval (musl reads its saved auxv).
 */
#ifndef MALLOC_GLUE_H
#define MALLOC_GLUE_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/auxv.h>
#include <sys/single_threaded.h>

#define hidden __attribute__((__visibility__("hidden")))

/* Keep mallocng's internal symbols out of the way, as musl does. */
#define size_classes __malloc_size_classes
#define ctx __malloc_context
#define alloc_meta __malloc_alloc_meta
#define is_allzero __malloc_allzerop
#define dump_heap __dump_heap

static inline void a_crash(void)
{
	__builtin_trap();
}

#undef assert
#define assert(x) do { if (!(x)) a_crash(); } while (0)

/* musl's atomics, as the compiler's sequentially consistent builtins. */
static inline int a_cas(volatile int *p, int expected, int desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expected; /* the old value, as musl's a_cas returns */
}
static inline int a_fetch_add(volatile int *p, int v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline void a_or(volatile int *p, int v)
{
	__atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
static inline int a_ctz_32(uint32_t x)
{
	return __builtin_ctz(x);
}
static inline int a_clz_32(uint32_t x)
{
	return __builtin_clz(x);
}

/* The raw brk syscall: returns the new break (or the old one on failure), as musl's does. */
#define brk(p) ((uintptr_t)syscall(SYS_brk, (p)))

#define DISABLE_ALIGNED_ALLOC 0

static inline uint64_t get_random_secret(void)
{
	uint64_t secret = (uintptr_t)&secret * 1103515245;
	const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
	if (r) memcpy(&secret, r + 8, sizeof secret);
	return secret;
}

#if defined(__x86_64__) || defined(__i386__)
#define PAGESIZE 4096 /* as musl defines it for these architectures */
#else
#define get_page_size() ((size_t)sysconf(_SC_PAGESIZE))
#endif

#ifdef MALLOCNG_ALWAYS_LOCK
#define MT 1
#else
#define MT (!__libc_single_threaded)
#endif

#define RDLOCK_IS_EXCLUSIVE 1

/* preload.c: a lock of the same design as musl's __lock/__unlock. */
hidden void __mallocng_lock(volatile int *);
hidden void __mallocng_unlock(volatile int *);

hidden extern int __malloc_lock[1];

#define LOCK_OBJ_DEF \
int __malloc_lock[1]; \
hidden void __malloc_atfork(int who) { malloc_atfork(who); }

static inline void rdlock(void)
{
	if (MT) __mallocng_lock(__malloc_lock);
}
static inline void wrlock(void)
{
	if (MT) __mallocng_lock(__malloc_lock);
}
static inline void unlock(void)
{
	__mallocng_unlock(__malloc_lock);
}
static inline void upgradelock(void)
{
}
static inline void resetlock(void)
{
	__malloc_lock[0] = 0;
}

static inline void malloc_atfork(int who)
{
	if (who < 0) rdlock();
	else if (who > 0) resetlock();
	else unlock();
}

#endif
