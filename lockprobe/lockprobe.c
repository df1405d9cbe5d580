// allocscope-lockprobe: does one lock of the allocator stop every thread's allocations?
//
// An experiment on the allocator a program ran with, made in a process of its own after the
// program has ended (`allocscope record` runs it with the program's environment and allocator:
// analyzer/run/lock_test.cpp). It never runs inside the observed program, which must not get a
// helper thread.
//
// Two worker threads allocate and free all the time, each its own size. Now and then the main
// thread sends one of them a signal; its handler keeps that worker where the signal found it —
// inside malloc, inside free, or between calls — for kHoldNs, and meanwhile watches the other
// worker's completed calls (two workers: on two CPUs, neither waits for a CPU behind a third). Under one lock that every allocation takes, a worker held while it
// holds that lock stops the others at their next allocation, whatever their sizes; under a lock
// per size class it stops only workers of its own class; without a shared lock it stops nobody.
// A worker that made no progress is told apart from one that merely lost its CPU: it either used
// the CPU meanwhile (spinning on a lock) or sleeps in a futex wait (its /proc syscall file); a
// worker waiting for a CPU proves nothing and is counted as such.
//
// Two phases, taking turns in short blocks: sizes twice apart or more (48 and 400 bytes: three
// powers of two apart), and one size for all (48 bytes). Output, on stdout or in the file
// --output names, one line per counter:
//   allocscope-lockprobe 1
//   allocator <the object that defines malloc here>
//   <phase> <where> <held worker> <watched worker> <outcome> <count>
//   lost <holds that never ended>
// A phase ends once kEnough holds inside malloc told something (passed or stopped), or once 40 or
// more have settled what the analyzer will read with a margin (decided()), or when --max-seconds
// is spent (a busy machine leaves fewer).
// (the names of include/allocscope/lock_test_probe.h, in the order of format.h LockTest)
// phase: apart | same; where: malloc | malloc_syscall | free | outside (where the held worker was);
// outcome: passed | stopped | stopped_later | preempted | other. Exit status 0, or 1 with a reason
// on stderr.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "allocscope/lock_test_probe.h"

enum { kWorkers = 2, kRing = 16 };
// Where the held worker was: kInMallocSyscall is inside malloc, just back from a system call (a
// waiter woken by the signal: it held no lock then), told by the instruction before its program
// counter (x86-64 only; elsewhere every hold inside malloc counts as kInMalloc).
enum { kOut = 0, kInMalloc = 1, kInFree = 2, kInMallocSyscall = 3, kWheres = 4 };
enum { kPassed, kStopped, kStoppedLater, kPreempted, kOther, kOutcomes };
enum { kApart = 0, kSame = 1, kPhases = 2 };
// The output names these indices by include/allocscope/lock_test_probe.h's arrays, in this order.
#define ALLOCSCOPE_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(ALLOCSCOPE_COUNT_OF(allocscope_lock_test_phase_names) == kPhases, "phase names");
_Static_assert(ALLOCSCOPE_COUNT_OF(allocscope_lock_test_where_names) == kWheres, "where names");
_Static_assert(ALLOCSCOPE_COUNT_OF(allocscope_lock_test_outcome_names) == kOutcomes, "outcome names");

static const size_t kApartSizes[kWorkers] = {48, 400};
static const size_t kSameSize = 48;

static const int64_t kHoldNs = 100000;      // how long a held worker is kept
static const int64_t kProgressTailNs = 25000;  // progress within this much of the end: passed
static const int64_t kMaxHoldNs = 10000000;  // … or longer, while the watched worker waits for a CPU
static const int64_t kJudgeGapNs = 20000;    // how often it is judged meanwhile
static const int64_t kSpunNs = 50000;        // CPU time without a completed call that means it spins
static const long kYieldedSwitches = 2;      // runnable switches without a completed call that mean it yields
static const int64_t kYieldedCpuNs = 2000;   // … with this much CPU time at least: it ran, and completed nothing
static const int kStoppedAtOnce = 2;        // at most this many calls completed after the hold began
static const unsigned long kEnough = 120;
static const unsigned long kFewestTelling = 30;
static const unsigned long kBlockTelling = 10;
static const unsigned kControlEvery = 8;

struct worker {
  pthread_t thread;
  pid_t tid;
  clockid_t cpu_clock;
  size_t size;                 // written by main between phases
  volatile int gate;           // kOut, kInMalloc, kInFree: written by the worker itself
  uint64_t completed;          // calls completed (atomic, read by the others' handlers)
  int index;
  int hold_done;               // set by the handler: 1 a hold has ended, 2 it returned at once
  unsigned misses;             // signals that found it outside malloc (the handler's own count)
};

static struct worker g_workers[kWorkers];
static int g_stop;
static int g_ready;
static int g_phase;
static __thread struct worker* t_self;
static unsigned long g_counts[kPhases][kWheres][kWorkers][kWorkers][kOutcomes];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Whether thread `tid` sleeps in a futex wait: the first field of /proc/self/task/TID/syscall is
// the number of the system call it is blocked in ("running" when it is on a CPU or waiting for
// one). Returns 1 futex, 0 running or runnable, 2 another system call or unknown.
static int blocked_in_futex(pid_t tid) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 2;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 2;
  buf[n] = '\0';
  if (strncmp(buf, "running", 7) == 0) return 0;
  return atol(buf) == SYS_futex ? 1 : 2;
}

// How many times thread `tid` was switched out while still runnable (preempted, or after
// sched_yield): /proc/self/task/TID/status, nonvoluntary_ctxt_switches; -1 if unknown.
static long nonvoluntary_switches(pid_t tid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* at = strstr(buf, "nonvoluntary_ctxt_switches:");
  return at ? atol(at + strlen("nonvoluntary_ctxt_switches:")) : -1;
}

// Whether the thread was in a system call when the signal came: the instruction just before
// `pc` is one (x86-64 `syscall`, 0f 05), or `pc` is one, when the kernel will restart the call
// (a futex wait interrupted under SA_RESTART goes back to its `syscall` instruction).
static int after_syscall(const void* context) {
#if defined(__x86_64__)
  const ucontext_t* uc = context;
  const unsigned char* pc = (const unsigned char*)uc->uc_mcontext.gregs[REG_RIP];
  return (pc[-2] == 0x0f && pc[-1] == 0x05) || (pc[0] == 0x0f && pc[1] == 0x05);
#else
  (void)context;
  return 0;
#endif
}

// The worker watched during a hold.
struct watched {
  struct worker* w;
  uint64_t first, last;             // its completed calls when the hold began, and last seen
  int64_t last_change, cpu_at_change;  // when that count last changed, and its CPU time then
  long switched_at_start;           // its nonvoluntary switches when the hold began
  int outcome;                      // -1 until judged
};

// What the watched worker did, at `t`; -1 while it only waited for a CPU and `final` is not set.
static int judge(const struct watched* o, int64_t t, int final) {
  if (t - o->last_change < kProgressTailNs) return kPassed;
  const int64_t cpu = cpu_ns(o->w->cpu_clock);
  const int64_t stalled = t - o->last_change;
  const int futex = blocked_in_futex(o->w->tid);
  // On a CPU for half the time since its last completed call, or long enough to have completed
  // hundreds: it spins (or yields) waiting for something.
  const int64_t used = o->cpu_at_change >= 0 && cpu >= 0 ? cpu - o->cpu_at_change : 0;
  const int spun = used * 2 >= stalled || used >= kSpunNs;
  if (futex == 1 || (futex == 0 && spun)) {
    return o->last - o->first <= (uint64_t)kStoppedAtOnce ? kStopped : kStoppedLater;
  }
  // Given the CPU again and again without completing a call since the hold began: it yields
  // waiting for something (a lock whose waiters call sched_yield, beside a busy program that
  // takes the CPU each time). A worker that only waited for a CPU completes calls once it has one.
  if (futex == 0 && o->last - o->first == 0 && o->switched_at_start >= 0) {
    const long switched = nonvoluntary_switches(o->w->tid);
    if (switched >= 0 && switched - o->switched_at_start >= kYieldedSwitches && used >= kYieldedCpuNs) return kStopped;
  }
  if (futex == 0) return final ? kPreempted : -1;
  return kOther;
}

static void on_hold(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)info;
  struct worker* self = t_self;
  if (!self) return;
  const int saved_errno = errno;
  int where = self->gate;
  if (where == kInMalloc && after_syscall(context)) where = kInMallocSyscall;
  // Outside malloc, only one signal in kControlEvery is held (the control); the others return at
  // once, and the next signal follows soon: a fast malloc is a small share of the loop's time.
  if (where != kInMalloc && self->misses++ % kControlEvery != 0) {
    __atomic_store_n(&self->hold_done, 2, __ATOMIC_RELEASE);
    errno = saved_errno;
    return;
  }
  struct watched o[kWorkers - 1];
  int n = 0;
  const int64_t t0 = now_ns();
  for (int i = 0; i < kWorkers; ++i) {
    if (&g_workers[i] == self) continue;
    o[n].w = &g_workers[i];
    o[n].first = o[n].last = __atomic_load_n(&g_workers[i].completed, __ATOMIC_RELAXED);
    o[n].last_change = t0;
    o[n].cpu_at_change = cpu_ns(g_workers[i].cpu_clock);
    o[n].switched_at_start = nonvoluntary_switches(g_workers[i].tid);
    o[n].outcome = -1;
    ++n;
  }
  // Hold kHoldNs, then judge; a watched worker that merely waits for a CPU is given until
  // kMaxHoldNs to run (on a busy machine it gets a share of one): then it either goes on, or uses
  // the CPU without completing a call, or sleeps on a lock.
  int64_t t = t0, judged_at = 0;
  for (int undecided = n; undecided > 0;) {
    t = now_ns();
    for (int k = 0; k < n; ++k) {
      const uint64_t c = __atomic_load_n(&o[k].w->completed, __ATOMIC_RELAXED);
      if (c != o[k].last) {
        o[k].last = c;
        o[k].last_change = t;
        o[k].cpu_at_change = cpu_ns(o[k].w->cpu_clock);
      }
    }
    if (t - t0 < kHoldNs || t - judged_at < kJudgeGapNs) continue;
    judged_at = t;
    undecided = 0;
    for (int k = 0; k < n; ++k) {
      if (o[k].outcome < 0) o[k].outcome = judge(&o[k], t, t - t0 >= kMaxHoldNs);
      undecided += o[k].outcome < 0;
    }
  }
  for (int k = 0; k < n; ++k) {
    __atomic_fetch_add(&g_counts[g_phase][where][self->index][o[k].w->index][o[k].outcome], 1, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&self->hold_done, 1, __ATOMIC_RELEASE);
  errno = saved_errno;
}

static void* work(void* arg) {
  struct worker* w = arg;
  t_self = w;
  w->tid = (pid_t)syscall(SYS_gettid);
  if (pthread_getcpuclockid(pthread_self(), &w->cpu_clock) != 0) w->cpu_clock = -1;
  void* ring[kRing] = {0};
  unsigned k = 0;
  __atomic_fetch_add(&g_ready, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
    const size_t size = __atomic_load_n(&w->size, __ATOMIC_RELAXED);
    w->gate = kInFree;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    free(ring[k]);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    w->gate = kOut;
    __atomic_fetch_add(&w->completed, 1, __ATOMIC_RELAXED);
    w->gate = kInMalloc;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    char* p = malloc(size);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    w->gate = kOut;
    if (!p) continue;
    p[0] = 1;
    p[size - 1] = 1;
    ring[k] = p;
    k = (k + 1) % kRing;
    __atomic_fetch_add(&w->completed, 1, __ATOMIC_RELAXED);
  }
  for (unsigned i = 0; i < kRing; ++i) free(ring[i]);
  return NULL;
}

static void sleep_ns(int64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

// Holds inside malloc in `phase` that ended with `outcome`.
static unsigned long holds(int phase, int outcome) {
  unsigned long n = 0;
  for (int h = 0; h < kWorkers; ++h) {
    for (int v = 0; v < kWorkers; ++v) n += __atomic_load_n(&g_counts[phase][kInMalloc][h][v][outcome], __ATOMIC_RELAXED);
  }
  return n;
}

// Holds inside malloc that told something in `phase`: the watched worker passed or stopped.
static unsigned long telling(int phase) {
  return holds(phase, kPassed) + holds(phase, kStopped) + holds(phase, kStoppedLater);
}

// Whether `phase` may end before kEnough telling holds: from kEarliest on, once the stopped share
// lies beyond kDecidingShare by kDecidingZ standard errors (the score test, whose bounds are
// Wilson's), on the side the analyzer reads as a lock (stopped at once at least twice as often as
// later) or as none. The analyzer judges the counts with z = 2 (model/lock_test.h): a phase that
// ends early has settled with a margin, and one that has not runs on.
static const unsigned long kEarliest = 40;
static const double kDecidingShare = ALLOCSCOPE_LOCK_TEST_STOPS, kDecidingZ = 3.0;
static int decided(int phase) {
  const unsigned long told = telling(phase);
  if (told >= kEnough) return 1;
  if (told < kEarliest) return 0;
  const unsigned long stopped = holds(phase, kStopped), later = holds(phase, kStoppedLater);
  const double n = (double)told, p = (double)stopped / n, d = p - kDecidingShare;
  const int beyond = n * d * d >= kDecidingZ * kDecidingZ * kDecidingShare * (1 - kDecidingShare);
  if (!beyond) return 0;
  return d < 0 || stopped >= ALLOCSCOPE_LOCK_TEST_AT_ONCE * later;
}

static int usage(void) {
  fprintf(stderr, "usage: allocscope-lockprobe [--rounds N] [--max-seconds S] [--output FILE]\n");
  return 1;
}

int main(int argc, char** argv) {
  long rounds = 20000;
  double max_seconds = 2.0;
  const char* output = NULL;  // the counts go here (default: stdout), apart from what the allocator prints
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atol(argv[++i]);
    } else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
      max_seconds = atof(argv[++i]);
    } else {
      return usage();
    }
  }
  if (rounds <= 0 || max_seconds <= 0) return usage();
  // Sleeps of tens of microseconds between signals: without this, each would last 50 µs longer.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

  // Whatever the caller blocked or ignored: the holds' signal is taken, the alarm ends it.
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGUSR2);
  sigaddset(&unblock, SIGALRM);
  pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
  signal(SIGALRM, SIG_DFL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_hold;
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  sigfillset(&sa.sa_mask);
  if (sigaction(SIGUSR2, &sa, NULL) != 0) {
    perror("allocscope-lockprobe: sigaction");
    return 1;
  }
  alarm((unsigned)max_seconds + 10);  // never outlive the caller's patience: SIGALRM ends it
  g_rng ^= (uint64_t)now_ns();
  for (int i = 0; i < kWorkers; ++i) {
    g_workers[i].index = i;
    g_workers[i].size = kApartSizes[i];
    const int rc = pthread_create(&g_workers[i].thread, NULL, work, &g_workers[i]);
    if (rc != 0) {
      fprintf(stderr, "allocscope-lockprobe: pthread_create: %s\n", strerror(rc));
      return 1;
    }
  }
  while (__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE) < kWorkers) sleep_ns(100000);

  // The phases take turns in blocks of kBlockTelling telling holds (or an eighth of
  // --max-seconds), so that whatever else the machine does at some moment falls on both alike: a
  // lock per size class is one that stops the other thread at one size and not at sizes apart in
  // the same stretch of time. A phase is done once decided(), after `rounds` signals, or at
  // --max-seconds — or up to as much again while fewer than kFewestTelling of its holds told
  // something (a busy machine, a lock whose waiters yield).
  const int64_t max_ns = (int64_t)(max_seconds * 1e9);
  const int64_t deadline = now_ns() + max_ns, last = deadline + max_ns;
  const pid_t pid = getpid();
  long lost = 0, sent[kPhases] = {0, 0};
  int done[kPhases] = {0, 0};
  while (!done[kApart] || !done[kSame]) {
    for (int phase = 0; phase < kPhases; ++phase) {
      if (done[phase]) continue;
      for (int i = 0; i < kWorkers; ++i) {
        __atomic_store_n(&g_workers[i].size, phase == kApart ? kApartSizes[i] : kSameSize, __ATOMIC_RELAXED);
      }
      sleep_ns(1000000);  // the workers settle into their sizes
      __atomic_store_n(&g_phase, phase, __ATOMIC_RELEASE);
      const unsigned long block_end = telling(phase) + kBlockTelling;
      const int64_t block_last = now_ns() + max_ns / 8;
      while (telling(phase) < block_end && sent[phase] < rounds && now_ns() < block_last && !decided(phase)) {
        struct worker* w = &g_workers[sent[phase]++ % kWorkers];
        sleep_ns(5000 + (int64_t)(next_random() % 45000));
        __atomic_store_n(&w->hold_done, 0, __ATOMIC_RELAXED);
        if (syscall(SYS_tgkill, pid, w->tid, SIGUSR2) != 0) {
          perror("allocscope-lockprobe: tgkill");
          return 1;
        }
        const int64_t give_up = now_ns() + 200000000;
        while (!__atomic_load_n(&w->hold_done, __ATOMIC_ACQUIRE)) {
          if (now_ns() > give_up) {
            ++lost;
            break;
          }
          sleep_ns(20000);
        }
      }
      const int64_t t = now_ns();
      done[phase] = decided(phase) || sent[phase] >= rounds || t >= last ||
                    (t >= deadline && telling(phase) >= kFewestTelling);
    }
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < kWorkers; ++i) pthread_join(g_workers[i].thread, NULL);

  FILE* out = output ? fopen(output, "w") : stdout;
  if (!out) {
    perror("allocscope-lockprobe: --output");
    return 1;
  }
  fprintf(out, "allocscope-lockprobe 1\n");
  Dl_info info;
  void* real_malloc = dlsym(RTLD_DEFAULT, "malloc");
  fprintf(out, "allocator %s\n", real_malloc && dladdr(real_malloc, &info) && info.dli_fname ? info.dli_fname : "?");
  for (int p = 0; p < kPhases; ++p) {
    for (int w = 0; w < kWheres; ++w) {
      for (int h = 0; h < kWorkers; ++h) {
        for (int v = 0; v < kWorkers; ++v) {
          if (v == h) continue;
          for (int o = 0; o < kOutcomes; ++o) {
            fprintf(out, "%s %s %d %d %s %lu\n", allocscope_lock_test_phase_names[p],
                    allocscope_lock_test_where_names[w], h, v, allocscope_lock_test_outcome_names[o],
                    g_counts[p][w][h][v][o]);
          }
        }
      }
    }
  }
  fprintf(out, "lost %ld\n", lost);
  return fclose(out) == 0 ? 0 : 1;
}
