/* libfreelock_alloc.so — forwards the malloc family to glibc with ONE global mutex held around
 * every free (and malloc_usable_size) and no lock for malloc, calloc, realloc and the aligned
 * family: frees exclude each other, allocations never wait.  Threads that free between their
 * allocations then move in step, and their calls' ends keep apart as under one lock — yet an
 * allocation never takes it.  Ground truth: never one global lock.  fork() takes the lock first. */
#include <stddef.h>

#include "some_calls_lock.h"

static void family_before_malloc(size_t n) { (void)n; }
#define FAMILY_CLASS_OF_BLOCK(p) (lock_this_call = 1)

#include "family.h"
