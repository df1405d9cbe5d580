/* mlock.c — a program that locks all its memory, present and future, then runs threads.
 *
 *   mlock THREADS
 *
 * Calls mlockall(MCL_CURRENT | MCL_FUTURE), then starts THREADS threads (1..256) at once; each
 * mallocs and frees 1,000 blocks of 16-1039 bytes, then waits until all have done so, and ends.
 * Prints "mlock: THREADS threads ok" on stdout and its peak resident size on stderr ("mlock:
 * maxrss N KiB"), and exits 0; 4 when mlockall is not allowed here (no privilege, or too low a
 * RLIMIT_MEMLOCK), 1 when a thread could not start, 2 on a usage error.  With every future
 * mapping locked, each page a mapping can be read from is resident: a recorder must not map
 * memory per thread that it does not use (it once took 1.2 MiB a thread).
 *
 * Expected calls made by the program's own code: THREADS x 1,000 mallocs of 16-1039 bytes and as
 * many frees.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

static pthread_barrier_t g_all_done;

static void *worker(void *arg) {
  unsigned seed = (unsigned)(size_t)arg;
  for (int i = 0; i < 1000; i++) {
    seed = seed * 1103515245u + 12345u;
    char *volatile p = malloc(16 + (seed >> 8) % 1024);
    if (p) p[0] = 1;
    free(p);
  }
  pthread_barrier_wait(&g_all_done);
  return NULL;
}

int main(int argc, char **argv) {
  const long threads = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "usage: mlock THREADS (1..256)\n");
    return 2;
  }
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    perror("mlock: mlockall");
    return 4;
  }
  pthread_barrier_init(&g_all_done, NULL, (unsigned)threads);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);  /* locked stacks: keep them small */
  pthread_t t[256];
  for (long i = 0; i < threads; i++)
    if (pthread_create(&t[i], &attr, worker, (void *)(size_t)(i + 1)) != 0) return 1;
  for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("mlock: %ld threads ok\n", threads);
  fprintf(stderr, "mlock: maxrss %ld KiB\n", ru.ru_maxrss);
  return 0;
}
