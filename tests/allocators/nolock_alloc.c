/* libnolock_alloc.so — forwards the malloc family to glibc and adds nothing: the control for
 * libmutex_alloc.so (same code path, same library position, no lock). */
#include <stddef.h>

static void family_enter(void) {}
static void family_leave(void) {}
static void family_before_malloc(size_t n) { (void)n; }

#include "family.h"
