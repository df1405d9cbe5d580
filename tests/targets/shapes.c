/* shapes.c — allocation shapes and call sites known in advance, for the trace-mode tests.
 *
 *   shapes pc        producer/consumer: a producer thread mallocs 1000 blocks of 3000 bytes and
 *                    hands them through a fixed ring to a consumer thread, which frees them:
 *                    1000 cross-thread frees of 3000-byte blocks
 *   shapes realloc   10 growth chains: malloc(16), then 12 reallocs doubling the size up to
 *                    65536 bytes, then free: 10 chains of length 12, growth 4096 each
 *   shapes life      100 blocks of 5000 bytes freed at once; 20 blocks of 7000 bytes each held
 *                    for 2 ms; 7 blocks of 9000 bytes never freed (63000 bytes leaked at exit)
 *   shapes sites     alpha_alloc: 30 x malloc(1111); beta_alloc: 20 x malloc(2222);
 *                    gamma_alloc: 10 x calloc(3, 1111); release_all frees all 60 blocks
 *   shapes stacks    8192 distinct call stacks (13 levels of left/right calls): at the end of
 *                    each path, leaf_alloc mallocs 48 bytes and frees them: 16384 distinct stacks
 *   shapes badfp     (x86-64) 100 x malloc(32) and free called with %rbp holding addresses no
 *                    frame can have (-8, -16, 8, 0, and 1 GiB above the stack): a frame-pointer
 *                    walk must stop there, not fault
 *
 * Built with frame pointers and debug information so that call stacks and file:line resolve.
 * Output goes through write(2) only, so that stdio allocates nothing: apart from what the C
 * library does for thread creation (pc mode), every allocator call is the program's own.
 * Prints "shapes MODE ok" and exits 0; exits 1 on a failure, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static void fail(const char *why) {
  out("shapes: ");
  out(why);
  out("\n");
  exit(1);
}

/* ---- pc: producer / consumer ---- */

enum { PC_BLOCKS = 1000, PC_SIZE = 3000, RING = 16 };
static void *ring[RING];
static unsigned head, tail; /* head: next to fill, tail: next to take */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static __attribute__((noinline)) void *produce_block(unsigned i) {
  unsigned char *p = malloc(PC_SIZE);
  if (!p) fail("malloc failed");
  memset(p, (int)(i & 0xff), PC_SIZE);
  return p;
}

static void *producer(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < PC_BLOCKS; i++) {
    void *p = produce_block(i);
    pthread_mutex_lock(&lock);
    while (head - tail == RING) pthread_cond_wait(&changed, &lock);
    ring[head++ % RING] = p;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
  }
  return NULL;
}

static __attribute__((noinline)) void consume_block(void *p, unsigned i) {
  if (((unsigned char *)p)[PC_SIZE - 1] != (unsigned char)(i & 0xff)) fail("corrupt block");
  free(p);
}

static void *consumer(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < PC_BLOCKS; i++) {
    pthread_mutex_lock(&lock);
    while (head == tail) pthread_cond_wait(&changed, &lock);
    void *p = ring[tail++ % RING];
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    consume_block(p, i);
  }
  return NULL;
}

static void mode_pc(void) {
  pthread_t prod, cons;
  if (pthread_create(&cons, NULL, consumer, NULL) != 0) fail("pthread_create");
  if (pthread_create(&prod, NULL, producer, NULL) != 0) fail("pthread_create");
  pthread_join(prod, NULL);
  pthread_join(cons, NULL);
}

/* ---- realloc growth chains ---- */

enum { CHAINS = 10, STEPS = 12, FIRST = 16 };

static __attribute__((noinline)) void grow_chain(unsigned seed) {
  size_t size = FIRST;
  unsigned char *p = malloc(size);
  if (!p) fail("malloc failed");
  p[0] = (unsigned char)seed;
  for (int s = 0; s < STEPS; s++) {
    size *= 2;
    unsigned char *q = realloc(p, size);
    if (!q) fail("realloc failed");
    if (q[0] != (unsigned char)seed) fail("realloc lost the contents");
    q[size - 1] = 1;
    p = q;
  }
  free(p);
}

static void mode_realloc(void) {
  for (unsigned c = 0; c < CHAINS; c++) grow_chain(c);
}

/* ---- lifetimes and leaks ---- */

enum { QUICK = 100, QUICK_SIZE = 5000, HELD = 20, HELD_SIZE = 7000, LEAKS = 7, LEAK_SIZE = 9000 };
static void *volatile sink;

static void mode_life(void) {
  for (int i = 0; i < QUICK; i++) {
    void *p = malloc(QUICK_SIZE);
    if (!p) fail("malloc failed");
    sink = p;
    free(p);
  }
  const struct timespec two_ms = {0, 2000000};
  for (int i = 0; i < HELD; i++) {
    void *p = malloc(HELD_SIZE);
    if (!p) fail("malloc failed");
    sink = p;
    nanosleep(&two_ms, NULL);
    free(p);
  }
  for (int i = 0; i < LEAKS; i++) {
    sink = malloc(LEAK_SIZE);
    if (!sink) fail("malloc failed");
  }
}

/* ---- call sites ---- */

enum { ALPHA = 30, BETA = 20, GAMMA = 10 };
static void *blocks[ALPHA + BETA + GAMMA];

__attribute__((noinline)) void *alpha_alloc(void) { return malloc(1111); }
__attribute__((noinline)) void *beta_alloc(void) { return malloc(2222); }
__attribute__((noinline)) void *gamma_alloc(void) { return calloc(3, 1111); }

__attribute__((noinline)) void release_all(void) {
  for (int i = 0; i < ALPHA + BETA + GAMMA; i++) free(blocks[i]);
}

static void mode_sites(void) {
  int n = 0;
  for (int i = 0; i < ALPHA; i++) blocks[n++] = alpha_alloc();
  for (int i = 0; i < BETA; i++) blocks[n++] = beta_alloc();
  for (int i = 0; i < GAMMA; i++) blocks[n++] = gamma_alloc();
  for (int i = 0; i < n; i++) {
    if (!blocks[i]) fail("allocation failed");
  }
  release_all();
}

/* ---- many distinct stacks ---- */

enum { LEVELS = 13, LEAF_SIZE = 48 };
static volatile unsigned side;

__attribute__((noinline)) void leaf_alloc(void) {
  void *p = malloc(LEAF_SIZE);
  if (!p) fail("malloc failed");
  sink = p;
  free(p);
}

static void descend(unsigned path, int level);
/* Each keeps its frame (a store after the call): the return address says which way it went. */
__attribute__((noinline)) void go_left(unsigned path, int level) {
  side = 1;
  descend(path, level + 1);
  side = 1;
}
__attribute__((noinline)) void go_right(unsigned path, int level) {
  side = 2;
  descend(path, level + 1);
  side = 2;
}
static __attribute__((noinline)) void descend(unsigned path, int level) {
  if (level == LEVELS) {
    leaf_alloc();
  } else if ((path >> level) & 1) {
    go_right(path, level);
  } else {
    go_left(path, level);
  }
}

static void mode_stacks(void) {
  for (unsigned path = 0; path < (1u << LEVELS); path++) descend(path, 0);
}

/* ---- hostile frame pointers ---- */

#if defined(__x86_64__)
/* call_with_rbp(fn, arg, rbp): fn(arg) with %rbp = rbp, as a function built without frame
 * pointers may leave it; %rbp is restored after. */
void *call_with_rbp(void *(*fn)(void *), void *arg, unsigned long rbp);
__asm__(".text\n"
        ".globl call_with_rbp\n"
        ".type call_with_rbp,@function\n"
        "call_with_rbp:\n"
        "  push %rbp\n" /* also aligns the stack for the call */
        "  mov %rdx, %rbp\n"
        "  mov %rdi, %rax\n"
        "  mov %rsi, %rdi\n"
        "  call *%rax\n"
        "  pop %rbp\n"
        "  ret\n"
        ".size call_with_rbp, .-call_with_rbp\n");

static void *call_malloc(void *size) { return malloc((size_t)size); }
static void *call_free(void *p) {
  free(p);
  return NULL;
}

static void mode_badfp(void) {
  char here;
  const unsigned long bad[] = {(unsigned long)-8, (unsigned long)-16, 8, 0,
                               ((unsigned long)&here + (1ul << 30)) & ~7ul};
  for (int i = 0; i < 100; i++) {
    const unsigned long rbp = bad[i % (int)(sizeof bad / sizeof bad[0])];
    void *p = call_with_rbp(call_malloc, (void *)32, rbp);
    if (!p) fail("malloc failed");
    call_with_rbp(call_free, p, rbp);
  }
}
#else
static void mode_badfp(void) {}
#endif

int main(int argc, char **argv) {
  if (argc != 2) {
    out("usage: shapes pc|realloc|life|sites|stacks|badfp\n");
    return 2;
  }
  const char *mode = argv[1];
  if (strcmp(mode, "pc") == 0) {
    mode_pc();
  } else if (strcmp(mode, "realloc") == 0) {
    mode_realloc();
  } else if (strcmp(mode, "life") == 0) {
    mode_life();
  } else if (strcmp(mode, "sites") == 0) {
    mode_sites();
  } else if (strcmp(mode, "stacks") == 0) {
    mode_stacks();
  } else if (strcmp(mode, "badfp") == 0) {
    mode_badfp();
  } else {
    out("usage: shapes pc|realloc|life|sites|stacks|badfp\n");
    return 2;
  }
  out("shapes ");
  out(mode);
  out(" ok\n");
  return 0;
}
