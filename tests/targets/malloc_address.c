/* malloc_address.c — a program built without PIE (-fno-pic -no-pie) that takes the addresses of
 * malloc and free: its dynamic symbol table then carries both as undefined entries whose value is
 * their PLT stub, the canonical address every object sees for them, and dlsym(RTLD_DEFAULT) finds
 * that stub in the executable.  The program defines neither: its calls go through the PLT to the
 * shim, which must record them and say nothing of calls past it.
 *
 *   malloc_address   1000 x (malloc(64 + i % 64), free) called directly, then 1000 more through
 *                    the pointers: malloc 2000, free 2000.  Prints "ok" (write(2)); exits 1 if a
 *                    pointer differs from the function's address or an allocation fails.
 */
#include <stdlib.h>
#include <unistd.h>

void* (*volatile take_malloc)(size_t);
void (*volatile take_free)(void*);

int main(void) {
  take_malloc = malloc;
  take_free = free;
  if (take_malloc != malloc || take_free != free) return 1;
  for (int i = 0; i < 1000; i++) {
    void* p = malloc(64 + i % 64);
    if (!p) return 1;
    free(p);
  }
  for (int i = 0; i < 1000; i++) {
    void* p = take_malloc(64 + i % 64);
    if (!p) return 1;
    take_free(p);
  }
  (void)!write(1, "ok\n", 3);
  return 0;
}
