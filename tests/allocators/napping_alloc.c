/* libnapping_alloc.so — forwards the malloc family to glibc, each call first sleeping for no time
 * (usleep(0): a system call that gives up the CPU), with no lock at all: every slow call sleeps
 * inside the allocator, made alone or beside other threads alike, yet no call waits for another.
 * Ground truth: never one global lock. */
#include <errno.h>
#include <stddef.h>
#include <unistd.h>

static void family_enter(void) {
  const int saved = errno;
  usleep(0);
  errno = saved;
}
static void family_leave(void) {}
static void family_before_malloc(size_t n) { (void)n; }

#include "family.h"
