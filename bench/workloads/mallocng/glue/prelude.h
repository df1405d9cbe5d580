/* prelude.h — included before everything else in the mallocng build (gcc -include). glibc's
 * headers declare malloc and friends with malloc/alloc_size/dealloc attributes; musl's do not,
 * and mallocng's code reads the in-band header just below a pointer that malloc returned, which
 * those attributes tell the compiler is out of bounds. Declare them plainly, as musl does. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap, MREMAP_MAYMOVE; defined empty, as realloc.c defines it */
#endif
#include <sys/cdefs.h>
#undef __attribute_malloc__
#define __attribute_malloc__
#undef __attribute_alloc_size__
#define __attribute_alloc_size__(params)
#undef __attribute_alloc_align__
#define __attribute_alloc_align__(param)
#undef __attr_dealloc
#define __attr_dealloc(dealloc, argno)
#undef __attr_dealloc_free
#define __attr_dealloc_free
