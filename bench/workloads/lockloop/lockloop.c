/* lockloop: the cost of one uncontended pthread_mutex_lock + unlock, for the overhead of
 * `record --locks` (docs/overhead.md, "Lock tracing").
 *
 * usage: lockloop [N]   (default 20,000,000)
 * One thread locks and unlocks one mutex N times and prints the thread CPU time per pair:
 *   <x.xx> ns per lock+unlock */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 20000000;
  if (n <= 0) {
    fprintf(stderr, "usage: lockloop [N]\n");
    return 2;
  }
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  free(malloc(16)); /* the shim starts recording before the loop */
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; i++) {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  printf("%.2f ns per lock+unlock\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
  return 0;
}
