/* preload.c — the rest of the glue that lets musl's mallocng run as a preloaded allocator in a
 * glibc process (see glue.h): the global lock, fork handling, and the allocation functions glibc
 * expects a replacement malloc to provide that musl keeps elsewhere (valloc, pvalloc).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#include "glue.h"

#ifdef PAGESIZE
#define PAGESIZE_OR_SYSCONF ((size_t)PAGESIZE)
#else
#define PAGESIZE_OR_SYSCONF ((size_t)sysconf(_SC_PAGESIZE))
#endif

/* The lock follows the design of musl's __lock (src/thread/__lock.c): one int holds a lock flag
 * (the sign bit) and the number of threads inside the critical section. Taking it: a CAS from 0,
 * then up to 10 CAS retries, then count ourselves in and FUTEX_WAIT until the flag clears.
 * Releasing it issues FUTEX_WAKE whenever another thread is counted in — so a contended unlock
 * costs a syscall, as in musl. Futexes are process-private, as musl's are. */
static void futex_wait(volatile int *addr, int val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, (void *)0);
}

static void futex_wake_one(volatile int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1);
}

hidden void __mallocng_lock(volatile int *l)
{
	int current = a_cas(l, 0, INT_MIN + 1);
	if (!current) return;
	for (unsigned i = 0; i < 10; ++i) {
		if (current < 0) current -= INT_MIN + 1;
		int seen = a_cas(l, current, INT_MIN + (current + 1));
		if (seen == current) return;
		current = seen;
	}
	current = a_fetch_add(l, 1) + 1;
	for (;;) {
		if (current < 0) {
			futex_wait(l, current);
			current -= INT_MIN + 1;
		}
		int seen = a_cas(l, current, INT_MIN + current);
		if (seen == current) return;
		current = seen;
	}
}

hidden void __mallocng_unlock(volatile int *l)
{
	if (l[0] < 0) { /* held: we took it (a single-threaded process never does) */
		if (a_fetch_add(l, -(INT_MIN + 1)) != INT_MIN + 1) futex_wake_one(l);
	}
}

/* fork: hold the lock across it, as musl's fork does through __malloc_atfork. Registered from a
 * constructor of the preloaded library, so these run after (prepare) and before (parent, child)
 * the handlers the program registers itself, which may allocate. */
hidden void __malloc_atfork(int who);
static void atfork_prepare(void) { __malloc_atfork(-1); }
static void atfork_parent(void) { __malloc_atfork(0); }
static void atfork_child(void) { __malloc_atfork(1); }

__attribute__((constructor)) static void mallocng_init(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* What glibc expects of a malloc replacement beyond what musl's sources define. musl has valloc
 * in src/legacy; pvalloc is glibc's. */
void *valloc(size_t size)
{
	return aligned_alloc(PAGESIZE_OR_SYSCONF, size);
}

void *pvalloc(size_t size)
{
	size_t page = PAGESIZE_OR_SYSCONF;
	if (size > SIZE_MAX - page) {
		errno = ENOMEM;
		return 0;
	}
	return aligned_alloc(page, (size + page - 1) & ~(page - 1));
}
