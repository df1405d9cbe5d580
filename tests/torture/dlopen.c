/* dlopen.c — loads and unloads a library that allocates (dl_lib.c, found next to this program).
 *
 *   dlopen plain        dlopen(RTLD_NOW), dl_work(100), dlclose
 *   dlopen deepbind     the same with RTLD_NOW | RTLD_DEEPBIND (glibc; elsewhere it prints
 *                       "dlopen: RTLD_DEEPBIND unsupported" and exits 0)
 *   dlopen cycle N      N times: dlopen, dl_work(10), dlclose
 *
 * Prints "dlopen: usable size of a 6000-byte block: U" (U as the library's malloc_usable_size
 * says), then "dlopen: MODE ok", and exits 0 (1 if loading failed, 2 on a usage error).  Output is
 * written with write(2).
 *
 * Expected calls made by the library (dl_lib.c): per load 4 x malloc(1500), per dl_work(n)
 * n x malloc(6000) and n frees of blocks of usable size U, per unload 6 x malloc(700).  Under
 * RTLD_DEEPBIND the library's own calls still go through the global scope only if a preload
 * clears the flag: otherwise they bind to libc directly, past any preload.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __GLIBC__
#define LIB_NAME "dl_lib-glibc.so"
#else
#define LIB_NAME "dl_lib-musl.so"
#endif

static void out(const char *s) {
  if (write(1, s, strlen(s)) < 0) _exit(3);
}

static char lib[4200];

static int load_use_unload(int flags, int n, int report) {
  void *h = dlopen(lib, flags);
  if (h == NULL) {
    out("dlopen: cannot load the library\n");
    return 1;
  }
  size_t (*work)(int) = (size_t(*)(int))dlsym(h, "dl_work");
  if (work == NULL) return 1;
  size_t usable = work(n);
  if (report) {
    char line[96];
    snprintf(line, sizeof line, "dlopen: usable size of a 6000-byte block: %zu\n", usable);
    out(line);
  }
  return dlclose(h) != 0;
}

int main(int argc, char **argv) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  *strrchr(self, '/') = '\0';
  snprintf(lib, sizeof lib, "%s/%s", self, LIB_NAME);

  if (argc == 2 && strcmp(argv[1], "plain") == 0) {
    if (load_use_unload(RTLD_NOW, 100, 1)) return 1;
  } else if (argc == 2 && strcmp(argv[1], "deepbind") == 0) {
#ifdef RTLD_DEEPBIND
    if (load_use_unload(RTLD_NOW | RTLD_DEEPBIND, 100, 1)) return 1;
#else
    out("dlopen: RTLD_DEEPBIND unsupported\n");
    return 0;
#endif
  } else if (argc == 3 && strcmp(argv[1], "cycle") == 0) {
    int n = atoi(argv[2]);
    for (int i = 0; i < n; i++)
      if (load_use_unload(RTLD_NOW, 10, i == 0)) return 1;
  } else {
    out("usage: dlopen plain|deepbind | dlopen cycle N\n");
    return 2;
  }
  out("dlopen: ");
  out(argv[1]);
  out(" ok\n");
  return 0;
}
