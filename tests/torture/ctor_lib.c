/* ctor_lib.c — a library the order program needs (DT_NEEDED): its constructor allocates before the
 * program's own constructors and main run, its destructor allocates during the teardown.
 *
 *   constructor   3 x malloc(1700), then 3 x free
 *   destructor    prints "order: library destructor", 2 x malloc(2700), then 2 x free
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int value;

static void churn(size_t size, int n) {
  void *blocks[4];
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) abort();
    memset(blocks[i], i, size);
    value += ((unsigned char *)blocks[i])[size - 1];
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
}

__attribute__((constructor)) static void ctor_lib_loaded(void) { churn(1700, 3); }

__attribute__((destructor)) static void ctor_lib_unloaded(void) {
  static const char line[] = "order: library destructor\n";
  if (write(1, line, sizeof line - 1) < 0) _exit(3);
  churn(2700, 2);
}

int ctor_lib_value(void) { return value; }
