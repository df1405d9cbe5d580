/* secure.c — reports whether it runs in secure-execution mode (AT_SECURE: set-user-ID and the
 * like) and allocates a little.  The tests make set-user-ID root copies of it and run them as
 * nobody.  secure-<libc> needs the shim (DT_NEEDED, by an absolute RUNPATH); secure_plain-<libc>
 * is the same program without it.
 *
 *   secure        prints "secure: AT_SECURE=N" and "secure: done"; 10 x malloc(1234), 10 frees
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void) {
  char line[64];
  snprintf(line, sizeof line, "secure: AT_SECURE=%lu\n", getauxval(AT_SECURE));
  if (write(1, line, strlen(line)) < 0) return 3;
  for (int i = 0; i < 10; i++) {
    char *volatile p = malloc(1234);
    if (p == NULL) return 1;
    p[0] = 1;
    free(p);
  }
  static const char done[] = "secure: done\n";
  return write(1, done, sizeof done - 1) < 0;
}
