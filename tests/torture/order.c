/* order.c — allocations before any constructor and after the usual end of a program.
 *
 *   order [return | _exit]
 *
 * In the order they run (glibc):
 *   preinit_array   1 x malloc(950): the very first code of the program, before any library's
 *                   constructor (musl does not run preinit_array of dynamic programs)
 *   ctor_lib        its constructor: 3 x malloc(1700) (a DT_NEEDED library)
 *   constructor     registers atexit handler A, before anything else in the program does
 *   main            registers atexit handler B, prints "order: main (preinit ran: yes|no)",
 *                   then returns 0 — or calls _exit(0), which runs none of what follows
 *   atexit B        prints "order: atexit B", 4 x malloc(1100)
 *   atexit A        prints "order: atexit A", 3 x malloc(3900) (registered first, runs last of the
 *                   atexit handlers, yet before any library destructor)
 *   destructor      prints "order: program destructor", 5 x malloc(600)
 *   ctor_lib        its destructor: "order: library destructor", 2 x malloc(2700)
 * Every block is freed at once.  Output is written with write(2).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ctor_lib_value(void);

static void out(const char *s) {
  if (write(1, s, strlen(s)) < 0) _exit(3);
}

static void churn(size_t size, int n) {
  void *blocks[8];
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) abort();
    memset(blocks[i], i, size);
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
}

static int preinit_ran;

static void first_of_all(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  churn(950, 1);
  preinit_ran = 1;
}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(int, char **, char **) =
    first_of_all;

static void atexit_a(void) {
  out("order: atexit A\n");
  churn(3900, 3);
}

static void atexit_b(void) {
  out("order: atexit B\n");
  churn(1100, 4);
}

__attribute__((constructor(101))) static void early(void) { atexit(atexit_a); }

__attribute__((destructor)) static void program_destructor(void) {
  out("order: program destructor\n");
  churn(600, 5);
}

int main(int argc, char **argv) {
  atexit(atexit_b);
  out(preinit_ran ? "order: main (preinit ran: yes)\n" : "order: main (preinit ran: no)\n");
  if (ctor_lib_value() < 0) return 1;
  if (argc == 2 && strcmp(argv[1], "_exit") == 0) _exit(0);
  return 0;
}
