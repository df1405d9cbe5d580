/* threads_short.c — many short-lived threads, each allocating a few blocks.
 *
 *   threads_short [N]     N: number of threads, 1..1000000, default 1000
 *
 * Threads are created in waves of at most 16 running at once; each wave is joined before the
 * next is created, so thread creation and thread exit overlap within a wave. Each thread mallocs
 * 4 blocks (16, 64, 256, 1024 bytes), writes them, checks them, frees all 4 and returns a
 * checksum that main verifies. Prints "threads_short: N threads ok" and exits 0; exits 1 if a
 * thread could not be created or a check failed, 2 on a usage error.
 *
 * Expected calls made by the program's own code:
 *   malloc  4*N: N each of 16, 64, 256, 1024 bytes
 *   free    4*N
 *   live at exit: none
 * The C library adds calls of its own around thread creation and exit (glibc: a calloc and a
 * free per newly created thread stack for its TLS vector, and occasionally more), so a profile
 * holds at least these counts, and exactly these at the four sizes above.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { WAVE = 16, BLOCKS = 4 };
static const size_t sizes[BLOCKS] = {16, 64, 256, 1024};

static void out(int fd, const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* Checksum a thread returns for index idx (never 0). */
static uintptr_t expected_sum(uintptr_t idx) {
  uintptr_t sum = 1;
  for (int b = 0; b < BLOCKS; b++) sum += (idx + (uintptr_t)b) & 0xFF;
  return sum;
}

static void *worker(void *arg) {
  uintptr_t idx = (uintptr_t)arg;
  unsigned char *blocks[BLOCKS];
  for (int b = 0; b < BLOCKS; b++) {
    blocks[b] = malloc(sizes[b]);
    if (blocks[b] == NULL) {
      for (int j = 0; j < b; j++) free(blocks[j]);
      return NULL;
    }
    memset(blocks[b], (int)((idx + (uintptr_t)b) & 0xFF), sizes[b]);
  }
  uintptr_t sum = 1;
  for (int b = 0; b < BLOCKS; b++) {
    if (blocks[b][0] != blocks[b][sizes[b] - 1]) sum = 0;
    if (sum != 0) sum += blocks[b][sizes[b] / 2];
  }
  for (int b = 0; b < BLOCKS; b++) free(blocks[b]);
  return (void *)sum;
}

int main(int argc, char **argv) {
  long n = 1000;
  if (argc > 2) goto usage;
  if (argc == 2) {
    char *end = NULL;
    n = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end != '\0' || n < 1 || n > 1000000) goto usage;
  }

  long bad = 0;
  for (long base = 0; base < n; base += WAVE) {
    pthread_t tids[WAVE];
    int started = 0;
    for (int i = 0; i < WAVE && base + i < n; i++) {
      int rc = pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(base + i));
      if (rc != 0) {
        char buf[96];
        snprintf(buf, sizeof buf, "threads_short: pthread_create failed (%s)\n", strerror(rc));
        out(2, buf);
        bad++;
        break;
      }
      started++;
    }
    for (int i = 0; i < started; i++) {
      void *ret = NULL;
      pthread_join(tids[i], &ret);
      if ((uintptr_t)ret != expected_sum((uintptr_t)(base + i))) bad++;
    }
    if (bad) break;
  }

  char buf[96];
  if (bad) {
    snprintf(buf, sizeof buf, "threads_short: FAILED (%ld bad threads)\n", bad);
    out(1, buf);
    return 1;
  }
  snprintf(buf, sizeof buf, "threads_short: %ld threads ok\n", n);
  out(1, buf);
  return 0;

usage:
  out(2, "usage: threads_short [N 1..1000000]\n");
  return 2;
}
