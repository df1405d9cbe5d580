/* dynlink.h — the two things musl's src/malloc/calloc.c takes from musl's dynlink.h. */
#ifndef MALLOCNG_DYNLINK_H
#define MALLOCNG_DYNLINK_H
#define weak_alias(old, new) \
	extern __typeof(old) new __attribute__((__weak__, __alias__(#old)))
/* mallocng itself is the malloc here: calloc may skip clearing memory mallocng knows is zero. */
#define __malloc_replaced 0
__attribute__((__visibility__("hidden"))) int __malloc_allzerop(void *);
#endif
