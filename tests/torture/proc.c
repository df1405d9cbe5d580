/* proc.c — process trees: fork, fork + exec, posix_spawn, vfork + exec, vfork + _exit, and an
 * exec that fails.
 *
 *   proc fork | fork_exec | spawn | vfork_exec | vfork_exit | exec_fail
 *   proc leaf SIZE N      (the program the others start: N x malloc(SIZE), then N x free)
 *
 * Every mode but leaf: the parent mallocs and frees PARENT_N blocks of PARENT_SIZE bytes before it
 * starts a child and again after the child ended, prints one line per event and exits 0 (1 if
 * something failed, 2 on a usage error).  Output is written with write(2), never stdio, so that no
 * stdio buffer lands in the size buckets below.
 *
 * Expected calls, by size (each size has a size bucket of its own):
 *
 *   mode        parent's profile                  child's profile (<out>.<pid>)
 *   ----------  --------------------------------  ---------------------------------------------
 *   fork        2 x 10 x 3333 B                   20 x 2222 B (before exit(0)), nothing of 3333
 *   fork_exec   2 x 10 x 3333 B                   the exec'd leaf: 30 x 7777 B
 *   spawn       2 x 10 x 3333 B                   the spawned leaf: 40 x 5555 B
 *   vfork_exec  2 x 10 x 3333 B                   the exec'd leaf: 50 x 6666 B
 *   vfork_exit  2 x 10 x 3333 B                   none (the child only calls _exit(7))
 *   exec_fail   2 x 10 x 3333 B, and 60 x 9999 B after the failed exec; one profile only
 *
 * The fork child of fork_exec allocates nothing before its exec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { PARENT_N = 10, PARENT_SIZE = 3333 };

static void out(const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

/* n x malloc(size), each written, then n x free; 0 if a malloc failed. */
static int churn(int n, size_t size) {
  void *blocks[100];
  if (n > 100) n = 100;
  for (int i = 0; i < n; i++) {
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) return 0;
    memset(blocks[i], i, size);
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
  return 1;
}

static char self[4096];

static int wait_for(pid_t pid, const char *what) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      out("proc: waitpid failed\n");
      return 1;
    }
  }
  char line[128];
  if (WIFEXITED(status))
    snprintf(line, sizeof line, "proc: %s child exited %d\n", what, WEXITSTATUS(status));
  else
    snprintf(line, sizeof line, "proc: %s child killed by signal %d\n", what, WTERMSIG(status));
  out(line);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "leaf") == 0) {
    int size = atoi(argv[2]), n = atoi(argv[3]);
    if (!churn(n, (size_t)size)) return 1;
    char line[96];
    snprintf(line, sizeof line, "proc: leaf %d x %d B\n", n, size);
    out(line);
    return 0;
  }
  if (argc != 2) goto usage;
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  const char *mode = argv[1];

  if (!churn(PARENT_N, PARENT_SIZE)) return 1;
  out("proc: parent before\n");

  if (strcmp(mode, "fork") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      if (!churn(20, 2222)) exit(1);
      exit(0);
    }
    if (wait_for(pid, "fork")) return 1;
  } else if (strcmp(mode, "fork_exec") == 0) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      char *args[] = {self, "leaf", "7777", "30", NULL};
      execv(self, args);
      _exit(127);
    }
    if (wait_for(pid, "fork_exec")) return 1;
  } else if (strcmp(mode, "spawn") == 0) {
    char *args[] = {self, "leaf", "5555", "40", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, NULL, NULL, args, environ);
    if (rc != 0) {
      out("proc: posix_spawn failed\n");
      return 1;
    }
    if (wait_for(pid, "spawn")) return 1;
  } else if (strcmp(mode, "vfork_exec") == 0) {
    char *args[] = {self, "leaf", "6666", "50", NULL};
    pid_t pid = vfork();
    if (pid < 0) return 1;
    if (pid == 0) {
      execv(self, args);
      _exit(127);
    }
    if (wait_for(pid, "vfork_exec")) return 1;
  } else if (strcmp(mode, "vfork_exit") == 0) {
    pid_t pid = vfork();
    if (pid < 0) return 1;
    if (pid == 0) _exit(7);
    if (wait_for(pid, "vfork_exit")) return 1;
  } else if (strcmp(mode, "exec_fail") == 0) {
    char *args[] = {"/nonexistent/allocscope-torture", NULL};
    execv(args[0], args);
    char line[96];
    snprintf(line, sizeof line, "proc: exec failed: %s\n", strerror(errno));
    out(line);
    if (!churn(60, 9999)) return 1;
  } else {
    goto usage;
  }

  if (!churn(PARENT_N, PARENT_SIZE)) return 1;
  out("proc: parent after\n");
  return 0;

usage:
  out("usage: proc fork|fork_exec|spawn|vfork_exec|vfork_exit|exec_fail | proc leaf SIZE N\n");
  return 2;
}
