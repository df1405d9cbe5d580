/* run_child.c — runs a program as a child and exits with its status.
 *
 *   run_child PROGRAM [ARGS...]
 *
 * Allocates and frees 3 blocks of 500 bytes, then fork()s and execv()s PROGRAM with ARGS, waits
 * for it and exits with its exit status (128 + signal number if it was killed).  Built for musl
 * it starts glibc programs and the other way round, so that tests can record process trees that
 * mix both C libraries.  Exit 127 if the exec fails, 1 if fork or wait fails, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    static const char msg[] = "usage: run_child PROGRAM [ARGS...]\n";
    (void)!write(2, msg, sizeof msg - 1);
    return 2;
  }
  for (int i = 0; i < 3; i++) {
    char *volatile p = malloc(500);
    p[0] = (char)i;
    free(p);
  }
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return 1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
