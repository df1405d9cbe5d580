/* nodeepbind.c — a preloadable dlopen() that drops RTLD_DEEPBIND.
 *
 * glibc builds of PHP load their shared extensions with RTLD_DEEPBIND: an extension then binds
 * free() (and malloc) to glibc's own, ahead of a preloaded allocator, while PHP's main binary
 * uses the preloaded one — pointers cross allocators and the process crashes. With this library
 * preloaded as well (LD_PRELOAD=libnodeepbind.so:<allocator>.so) every extension binds to the
 * preloaded allocator. It changes nothing else.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef void *(*dlopen_fn)(const char *, int);

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
	static dlopen_fn next;
	if (!next) next = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
	if (!next) return NULL;
	return next(file, mode & ~RTLD_DEEPBIND);
}
