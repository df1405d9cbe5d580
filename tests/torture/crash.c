/* crash.c — the process ends abruptly while threads are allocating.
 *
 *   crash abort | segv | kill | _exit   [MS]
 *
 * Two worker threads malloc and free (sizes 16..1039) in a loop.  After MS milliseconds (default
 * 600, long enough for the recorder's periodic flushes of every 250 ms to have happened) main
 * prints "crash: MODE" and ends the process: abort() (SIGABRT), a write through a null pointer
 * (SIGSEGV), raise(SIGKILL), or _exit(9) — none of which runs atexit handlers or destructors.
 * Output is written with write(2).  Exit status: killed by the signal, or 9 for _exit.
 *
 * A profile of such a process has no end record (except after _exit, which a preload can catch);
 * it holds whatever was flushed before the end, and must read back up to its last whole chunk.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void out(const char *s) {
  if (write(1, s, strlen(s)) < 0) _exit(3);
}

static void *worker(void *arg) {
  for (unsigned i = 0;; i++) {
    size_t size = 16 + (i & 1023);
    unsigned char *volatile p = malloc(size);
    if (p == NULL) abort();
    p[0] = (unsigned char)i;
    p[size - 1] = (unsigned char)i;
    free(p);
  }
  return arg;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) goto usage;
  const char *mode = argv[1];
  long ms = argc == 3 ? atol(argv[2]) : 600;
  if (strcmp(mode, "abort") && strcmp(mode, "segv") && strcmp(mode, "kill") && strcmp(mode, "_exit"))
    goto usage;
  pthread_t t;
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  out("crash: ");
  out(mode);
  out("\n");
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "segv") == 0) {
    volatile int *volatile nowhere = NULL;
    *nowhere = 1;
  }
  if (strcmp(mode, "kill") == 0) raise(SIGKILL);
  _exit(9);

usage:
  out("usage: crash abort|segv|kill|_exit [MS]\n");
  return 2;
}
