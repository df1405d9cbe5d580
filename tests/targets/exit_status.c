/* exit_status.c — makes a few allocations, then ends the process the way it is told to.
 *
 *   exit_status exit N    prints "exit_status: exit N",  calls exit(N)   -> status N
 *   exit_status _exit N   prints "exit_status: _exit N", calls _exit(N)  -> status N, no atexit
 *                         handlers and no destructors run
 *   exit_status abort     prints "exit_status: abort",   calls abort()   -> killed by SIGABRT
 *   exit_status segv      prints "exit_status: segv",    writes through a NULL pointer
 *                                                                         -> killed by SIGSEGV
 *   anything else         usage on stderr, exit 2
 *
 * N is 0..255. The line is printed on stdout with write(2) before the process ends (so it is
 * there even with _exit), and the program never uses stdio.
 *
 * Expected calls before the process ends, in every mode:
 *   malloc  4 calls: 32, 64, 128, 256 bytes
 *   free    2 calls: the 32- and 64-byte blocks
 *   live at exit: 2 blocks, 128 + 256 = 384 bytes
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void out(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static int usage(void) {
  static const char msg[] = "usage: exit_status exit N | _exit N | abort | segv\n";
  if (write(2, msg, sizeof msg - 1) < 0) return 2;
  return 2;
}

/* Parses 0..255; -1 on anything else. */
static int parse_status(const char *s) {
  if (s == NULL || *s == '\0' || strlen(s) > 3) return -1;
  int v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
  }
  return v <= 255 ? v : -1;
}

/* Live blocks stay reachable from here until the process ends. */
void *volatile exit_status_live[2];

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *mode = argv[1];
  int status = 0;
  if (strcmp(mode, "exit") == 0 || strcmp(mode, "_exit") == 0) {
    if (argc != 3 || (status = parse_status(argv[2])) < 0) return usage();
  } else if (strcmp(mode, "abort") == 0 || strcmp(mode, "segv") == 0) {
    if (argc != 2) return usage();
  } else {
    return usage();
  }

  static const size_t sizes[4] = {32, 64, 128, 256};
  void *volatile blocks[4];
  for (int i = 0; i < 4; i++) {
    blocks[i] = malloc(sizes[i]);
    if (blocks[i] == NULL) {
      out("exit_status: malloc failed\n");
      return 1;
    }
    memset(blocks[i], i + 1, sizes[i]);
  }
  free(blocks[0]);
  free(blocks[1]);
  exit_status_live[0] = blocks[2];
  exit_status_live[1] = blocks[3];

  out("exit_status: ");
  out(mode);
  if (argc == 3) {
    out(" ");
    out(argv[2]);
  }
  out("\n");

  if (strcmp(mode, "exit") == 0) exit(status);
  if (strcmp(mode, "_exit") == 0) _exit(status);
  if (strcmp(mode, "abort") == 0) abort();

  /* segv: make sure the default action applies, then fault. */
  signal(SIGSEGV, SIG_DFL);
  volatile int *volatile null_ptr = NULL; /* volatile: no compile-time null reasoning */
  *null_ptr = 1;
  return 3; /* not reached */
}
