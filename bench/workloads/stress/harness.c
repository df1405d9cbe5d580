/* harness.c — the published allocator stress harness.
 *
 * N worker threads (argv[1], default 8) each run ITERS iterations (argv[2], default 2,000,000)
 * of malloc(16 + (i & 0x3FF)), touch the first and last byte, free. Prints "sink=<n>" on stderr
 * and exits 0. The logic is the published one; the only addition is the optional argv[2], so that
 * tests and quick benchmark runs can be short. With no argv[2] the behaviour is identical.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#define ITERS 2000000
static int n_threads = 8;
static int iters = ITERS;
static volatile size_t sink = 0;
static void *worker(void *arg) {
    size_t local = 0;
    for (int i = 0; i < iters; i++) {
        size_t sz = 16 + (i & 0x3FF);
        char *p = malloc(sz);
        p[0] = (char)i;
        p[sz-1] = (char)(i >> 8);
        local += (size_t)p ^ p[0];
        free(p);
    }
    sink += local;
    return NULL;
}
int main(int argc, char **argv) {
    if (argc > 1) n_threads = atoi(argv[1]);
    if (argc > 2) iters = atoi(argv[2]);
    pthread_t *t = calloc(n_threads, sizeof(*t));
    for (int i = 0; i < n_threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < n_threads; i++) pthread_join(t[i], NULL);
    fprintf(stderr, "sink=%zu\n", sink);
    return 0;
}
