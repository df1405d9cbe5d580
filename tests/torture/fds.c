/* fds.c — descriptors and file limits, as daemons and sandboxed programs use them.
 *
 *   fds firstfd          opens /dev/null twice and prints the descriptors it got ("fds: first
 *                        descriptors 3 4" when 0-2 are open): a preload must not take the numbers
 *                        a program counts on.
 *   fds reuse DIR        closes every descriptor from 3 to 1023, opens DIR/data.txt read-write,
 *                        writes "hello\n", then allocates in a thread for 600 ms (a recorder
 *                        flushes meanwhile) and checks that the file still holds exactly
 *                        "hello\n": "fds: data intact" or "fds: data CORRUPTED (N bytes)".
 *   fds busy MS          allocates in two threads for MS milliseconds, then prints "fds: busy
 *                        done" (the tests run it under a file size limit: RLIMIT_FSIZE).
 *
 * Output is written with write(2).  Exit status 0; 1 if the data was damaged; 2 on a usage error.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void out(const char *s) {
  if (write(1, s, strlen(s)) < 0) _exit(3);
}

static volatile int stop;

static void *worker(void *arg) {
  for (unsigned i = 0; !stop; i++) {
    size_t size = 16 + (i & 1023);
    unsigned char *volatile p = malloc(size);
    if (p == NULL) abort();
    p[0] = (unsigned char)i;
    free(p);
  }
  return arg;
}

static void busy(long ms) {
  pthread_t t[2];
  stop = 0;
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) exit(1);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  stop = 1;
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
  char line[4200];
  if (argc == 2 && strcmp(argv[1], "firstfd") == 0) {
    int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
    snprintf(line, sizeof line, "fds: first descriptors %d %d\n", a, b);
    out(line);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "reuse") == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    snprintf(line, sizeof line, "%s/data.txt", argv[2]);
    int fd = open(line, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    static const char hello[] = "hello\n";
    if (write(fd, hello, 6) != 6) return 1;
    busy(600);
    char back[64];
    ssize_t n = pread(fd, back, sizeof back, 0);
    off_t size = lseek(fd, 0, SEEK_END);
    if (n == 6 && size == 6 && memcmp(back, hello, 6) == 0) {
      out("fds: data intact\n");
      return 0;
    }
    snprintf(line, sizeof line, "fds: data CORRUPTED (%lld bytes)\n", (long long)size);
    out(line);
    return 1;
  }
  if (argc == 3 && strcmp(argv[1], "busy") == 0) {
    busy(atol(argv[2]));
    out("fds: busy done\n");
    return 0;
  }
  out("usage: fds firstfd | fds reuse DIR | fds busy MS\n");
  return 2;
}
