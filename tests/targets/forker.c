/* forker.c — allocates, forks, and allocates on both sides of the fork.
 *
 *   forker [CHILD_STATUS]     CHILD_STATUS: 0..255, default 0
 *
 * 1. Before fork: malloc K = 10 blocks of 1000 bytes, free 5 of them (5 stay live across the
 *    fork, in both processes).
 * 2. fork().
 * 3. Child: malloc C = 20 blocks of 2000 bytes, free all 20, then exit(CHILD_STATUS) (exit, not
 *    _exit: atexit handlers and destructors run in the child).
 * 4. Parent: waitpid() for the child, then malloc P = 30 blocks of 3000 bytes, free all 30, free
 *    the 5 blocks still live from step 1, print "forker: child status N" and exit with the
 *    child's exit status (128 + signal number if the child was killed by a signal).
 * Exit 1 if an allocation, fork or wait fails; 2 on a usage error.
 *
 * Expected calls, per process (output is written with write(2), never stdio):
 *
 *   process  when         malloc                 free   live at exit
 *   -------  -----------  ---------------------  -----  ---------------------------
 *   parent   before fork  10 x 1000 B             5
 *   parent   after fork   30 x 3000 B            35     0
 *   parent   total        40 (10x1000, 30x3000)  40     0
 *   child    after fork   20 x 2000 B            20     5 x 1000 B (inherited, never freed)
 *   child    inherited    the parent's "before fork" row: 10 x 1000 B malloc, 5 free
 *
 * A profile of the child holds either its own calls only (20 malloc, 20 free, plus the 5
 * inherited live blocks if inherited state is reported) or its own plus the inherited ones
 * (30 malloc, 25 free), depending on how the profiler treats the state inherited at fork.
 * The sizes keep the three groups apart: 1000 = before fork, 2000 = child, 3000 = parent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { K = 10, K_FREED = 5, C = 20, P = 30 };
enum { SIZE_BEFORE = 1000, SIZE_CHILD = 2000, SIZE_PARENT = 3000 };

static void out(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* malloc n blocks of size bytes into blocks[], touching each; 0 on failure. */
static int alloc_n(void **blocks, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) return 0;
    memset(blocks[i], i & 0xFF, size);
  }
  return 1;
}

static void free_n(void **blocks, int n) {
  for (int i = 0; i < n; i++) free(blocks[i]);
}

int main(int argc, char **argv) {
  int child_status = 0;
  if (argc > 2) goto usage;
  if (argc == 2) {
    char *end = NULL;
    long v = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end != '\0' || v < 0 || v > 255) goto usage;
    child_status = (int)v;
  }

  void *before[K];
  if (!alloc_n(before, K, SIZE_BEFORE)) {
    out("forker: malloc failed\n");
    return 1;
  }
  free_n(before, K_FREED); /* blocks K_FREED..K-1 stay live across the fork */

  pid_t pid = fork();
  if (pid < 0) {
    out("forker: fork failed\n");
    return 1;
  }
  if (pid == 0) {
    void *mine[C];
    if (!alloc_n(mine, C, SIZE_CHILD)) exit(1);
    free_n(mine, C);
    exit(child_status);
  }

  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno == EINTR) continue;
    out("forker: waitpid failed\n");
    return 1;
  }
  int status;
  if (WIFEXITED(wstatus))
    status = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    status = 128 + WTERMSIG(wstatus);
  else
    status = 1;

  void *mine[P];
  if (!alloc_n(mine, P, SIZE_PARENT)) {
    out("forker: malloc failed\n");
    return 1;
  }
  free_n(mine, P);
  free_n(before + K_FREED, K - K_FREED);

  char buf[64];
  snprintf(buf, sizeof buf, "forker: child status %d\n", status);
  out(buf);
  return status;

usage:
  if (write(2, "usage: forker [CHILD_STATUS 0..255]\n", 36) < 0) return 2;
  return 2;
}
