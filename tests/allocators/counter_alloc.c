/* libcounter_alloc.so — glibc's allocator behind one process-wide statistics counter, as tracking
 * and statistics wrappers keep one: every call adds to a word that all threads share (an atomic
 * add, no lock).  Each call takes that cache line from the thread that wrote it last, so calls of
 * different threads pay for each other, but no call ever waits for another to finish: ground
 * truth, never `global_lock`. */
#include <stddef.h>
#include <stdint.h>

static uint64_t calls __attribute__((aligned(64)));

static void family_enter(void) { __atomic_fetch_add(&calls, 1, __ATOMIC_SEQ_CST); }
static void family_leave(void) {}
static void family_before_malloc(size_t n) { (void)n; }

#include "family.h"
