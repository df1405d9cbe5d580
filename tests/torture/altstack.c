/* altstack.c — signal handlers on a small alternate stack that call the allocator.
 *
 *   altstack SIZE
 *
 * Five threads in turn (each created after the last one ended, so that each new thread's first
 * allocator call may find the last one's slot to reuse) give themselves an alternate signal stack
 * of SIZE bytes (1024..1048576) above a guard page, then raise SIGUSR1 2,000 times.  The handler
 * (SA_ONSTACK) mallocs 100 bytes, strdups a string, and frees both: each thread's first allocator
 * calls happen on that stack.  A recorder must leave whatever needs kilobytes of stack of its own
 * (writing its records, looking at other threads) to calls made on the thread's own stack.  The
 * main thread calls malloc first, so that the dynamic loader has bound it before any handler runs
 * (binding it in the handler takes stack of the loader's own).
 *
 * Prints "altstack: 10000 signals handled" and exits 0; 1 if a stack could not be set up, 2 on a
 * usage error.  Expected calls made by the program's own code: 10,000 mallocs of 100 bytes, 10,000
 * of 4 (strdup), as many frees.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { THREADS = 5, SIGNALS = 2000 };

static atomic_int g_handled;
static long g_size;

static void handler(int sig) {
  (void)sig;
  char *p = malloc(100);
  char *d = strdup("abc");
  if (p && d) {
    memset(p, 1, 100);
    atomic_fetch_add(&g_handled, 1);
  }
  free(d);
  free(p);
}

static void *thread(void *arg) {
  (void)arg;
  char *m = mmap(NULL, (size_t)g_size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE) != 0) return (void *)1;
  stack_t ss = {.ss_sp = m + 4096, .ss_size = (size_t)g_size, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) return (void *)1;
  for (int i = 0; i < SIGNALS; i++) raise(SIGUSR1);
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, NULL);
  munmap(m, (size_t)g_size + 4096);
  return NULL;
}

int main(int argc, char **argv) {
  g_size = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
  if (g_size < 1024 || g_size > 1048576) {
    fprintf(stderr, "usage: altstack SIZE (1024..1048576)\n");
    return 2;
  }
  char *volatile first = malloc(1);  /* volatile: a malloc/free pair the compiler could drop */
  char *volatile copy = strdup("x");
  free(copy);
  free(first);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_ONSTACK;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) return 1;
  for (int k = 0; k < THREADS; k++) {
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, thread, NULL) != 0) return 1;
    pthread_join(t, &r);
    if (r) return 1;
  }
  printf("altstack: %d signals handled\n", atomic_load(&g_handled));
  return 0;
}
