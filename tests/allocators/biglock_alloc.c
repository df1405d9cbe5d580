/* libbiglock_alloc.so — forwards the malloc family to glibc, with ONE global mutex held around the
 * calls for requests of 4 KiB or more (and the frees and reallocs of blocks that large) and no lock
 * for the smaller ones: one lock on the large sizes' path, as allocators take one for their large
 * or mmapped blocks.  Ground truth: contention in places, never one global lock.  fork() takes the
 * lock first. */
#include <stddef.h>

#include "some_calls_lock.h"

#define BIG 4096

static void family_before_malloc(size_t n) { lock_this_call = n >= BIG; }
#define FAMILY_CLASS_OF_REQUEST(n) (lock_this_call = (n) >= BIG)
#define FAMILY_CLASS_OF_BLOCK(p) (lock_this_call = (p) ? malloc_usable_size_of(p) >= BIG : 0)

#include "family.h"
