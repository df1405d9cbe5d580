/* A program for the symbolizer tests, built with -g -O0: functions at known lines, one with a
 * function inlined into it.  It is read, never run by the tests (running it prints the sum). */
#include <stdio.h>

static inline __attribute__((always_inline)) int fixture_inner(int x) {
  return x * 3 + 1; /* fixture_inner body */
}

__attribute__((noinline)) int fixture_outer(int x) {
  int y = fixture_inner(x);
  return y + fixture_inner(y);
}

__attribute__((noinline)) int fixture_alpha(int x) {
  return fixture_outer(x) + 2;
}

int main(void) {
  printf("%d\n", fixture_alpha(4));
  return 0;
}
