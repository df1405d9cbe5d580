/* static_hello.c — a statically linked program (LD_PRELOAD cannot reach it). Prints a line. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *volatile p = malloc(64);
  free(p);
  puts("static hello");
  return 0;
}
