/* forker — a program that runs many short-lived children, as a build driver or a shell script
 * does, for bench/overhead: a preloaded shim must follow every child (LD_PRELOAD is inherited by
 * fork and passed on through exec) and pays its start-up and exit cost in each.
 *
 * The parent runs CHILDREN children, at most JOBS at a time. For each it builds the child's
 * argument strings with malloc, forks, and then
 *   - three children in four exec this program again (`/proc/self/exe --child SEED WORDS`: a new
 *     image, so a preloaded library starts afresh in it);
 *   - every fourth stays a fork of the parent (no exec) and does the same work before _exit, as a
 *     shell's subshell does.
 * A child's work: it builds WORDS pseudo-random words into a chained hash table of malloc'd
 * nodes and strings (growing the table with calloc, some strings with realloc), counts the
 * distinct ones, frees everything and exits with status 0 when its count matches the one
 * computed without the table (a bitmap), 3 otherwise.
 *
 * usage: forker [CHILDREN [JOBS [WORDS]]]   (default 240 children, 2 jobs, 4000 words)
 * Prints `children=<n> failed=<n>` on stdout; exit status 0 when every child exited 0, else 1
 * (2 on a bad argument or when fork/exec fails).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct node {
  struct node *next;
  char *word;
  unsigned count;
};

static uint64_t next_rand(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Word i of a child: one of 2^12 values, spelled with 3..10 letters. */
static unsigned word_id(uint64_t *x) { return (unsigned)(next_rand(x) & 0xfff); }

static void spell(unsigned id, char *out) {
  const unsigned len = 3 + id % 8;
  for (unsigned i = 0; i < len; i++) out[i] = (char)('a' + ((id >> i) + 7 * i) % 26);
  snprintf(out + len, 8, "%u", id);
}

static int child_work(uint64_t seed, unsigned long words) {
  size_t cap = 64, used = 0;
  struct node **table = calloc(cap, sizeof *table);
  unsigned char seen[4096 / 8];
  memset(seen, 0, sizeof seen);
  unsigned expected = 0;
  uint64_t x = seed * 2654435761u + 88172645463325252ull;
  if (!table) return 4;
  for (unsigned long i = 0; i < words; i++) {
    char buf[32];
    const unsigned id = word_id(&x);
    if (!(seen[id / 8] & (1u << (id % 8)))) {
      seen[id / 8] |= (unsigned char)(1u << (id % 8));
      expected++;
    }
    spell(id, buf);
    const uint64_t h = hash(buf);
    struct node *n = table[h & (cap - 1)];
    while (n && strcmp(n->word, buf) != 0) n = n->next;
    if (n) {
      n->count++;
      if (n->count % 4 == 0) { /* a value that grows: the string is rebuilt longer */
        const size_t len = strlen(n->word);
        char *w = realloc(n->word, len + 2);
        if (!w) return 4;
        n->word = w;
        w[len] = '\0';
      }
      continue;
    }
    n = malloc(sizeof *n);
    if (!n || !(n->word = strdup(buf))) return 4;
    n->count = 1;
    n->next = table[h & (cap - 1)];
    table[h & (cap - 1)] = n;
    if (++used > cap * 2) { /* rehash into a table twice as large */
      struct node **bigger = calloc(cap * 2, sizeof *bigger);
      if (!bigger) return 4;
      for (size_t b = 0; b < cap; b++) {
        for (struct node *m = table[b], *nx; m; m = nx) {
          nx = m->next;
          const uint64_t mh = hash(m->word);
          m->next = bigger[mh & (cap * 2 - 1)];
          bigger[mh & (cap * 2 - 1)] = m;
        }
      }
      free(table);
      table = bigger;
      cap *= 2;
    }
  }
  for (size_t b = 0; b < cap; b++) {
    for (struct node *m = table[b], *nx; m; m = nx) {
      nx = m->next;
      free(m->word);
      free(m);
    }
  }
  free(table);
  return used == expected ? 0 : 3;
}

static int parse(const char *s, unsigned long *out) {
  char *end = NULL;
  *out = strtoul(s, &end, 10);
  return *s && !*end && *out > 0;
}

int main(int argc, char **argv) {
  unsigned long children = 240, jobs = 2, words = 4000, seed;
  if (argc == 4 && strcmp(argv[1], "--child") == 0) {
    if (!parse(argv[2], &seed) || !parse(argv[3], &words)) return 2;
    return child_work(seed, words);
  }
  if ((argc > 1 && !parse(argv[1], &children)) || (argc > 2 && !parse(argv[2], &jobs)) ||
      (argc > 3 && !parse(argv[3], &words)) || argc > 4) {
    fprintf(stderr, "usage: forker [CHILDREN [JOBS [WORDS]]] (positive integers)\n");
    return 2;
  }
  unsigned long started = 0, running = 0, failed = 0;
  while (started < children || running > 0) {
    if (started < children && running < jobs) {
      char *args[5];
      args[0] = strdup("forker");
      args[1] = strdup("--child");
      if (asprintf(&args[2], "%lu", started + 1) < 0 || asprintf(&args[3], "%lu", words) < 0)
        return 2;
      args[4] = NULL;
      const int exec_it = started % 4 != 3;
      fflush(stdout);
      const pid_t pid = fork();
      if (pid < 0) {
        perror("forker: fork");
        return 2;
      }
      if (pid == 0) {
        if (!exec_it) _exit(child_work(started + 1, words));
        execv("/proc/self/exe", args);
        perror("forker: exec");
        _exit(2);
      }
      for (int i = 0; i < 4; i++) free(args[i]);
      started++;
      running++;
      continue;
    }
    int status;
    if (wait(&status) < 0) {
      perror("forker: wait");
      return 2;
    }
    running--;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
  }
  printf("children=%lu failed=%lu\n", children, failed);
  return failed ? 1 : 0;
}
