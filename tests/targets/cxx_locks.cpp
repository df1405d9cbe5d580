// cxx_locks: C++'s timed locks and timed condition waits, contended.  libstdc++ makes them of
// glibc's clock variants (2.30 and later): std::timed_mutex::try_lock_for → pthread_mutex_clocklock,
// std::shared_timed_mutex::try_lock_for → pthread_rwlock_clockwrlock, and
// std::condition_variable::wait_for → pthread_cond_clockwait.
//
// usage: cxx_locks [THREADS [ROUNDS [HOLD_US]]]   (defaults 4, 100, 100)
//
// THREADS workers wait at a gate (gate(): std::condition_variable::wait_for, until main lets them
// all go), then each runs ROUNDS times timed_section() — try_lock_for on `timed` (a minute away),
// spin HOLD_US microseconds, unlock — and shared_section(), the same on `shared` for writing.
// One operator new per thread and round.  The program measures itself around each try_lock_for
// and prints on stderr:
//   timed_wait_ns=<time in timed.try_lock_for> timed_calls=<its calls>
//   timed_long_ns=<the part of timed_wait_ns in calls of kLongWaitNs or longer>
//   shared_wait_ns=<time in shared.try_lock_for> shared_calls=<its calls> shared_long_ns=<likewise>
// (A call that did not wait still takes the clock's and the lock's own time: over hundreds of
// calls that is more than a few short waits.  The long calls are the waits.)
// Built with frame pointers and line tables, so that call sites resolve.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFarAway = std::chrono::minutes(1);

std::timed_mutex timed;
std::shared_timed_mutex shared;
std::mutex gate_lock;
std::condition_variable gate_cond;
bool started = false;
int waiting = 0;
int rounds = 100;
long hold_us = 100;
constexpr uint64_t kLongWaitNs = 2000;

struct CallTimes {
  uint64_t wait_ns = 0, calls = 0, long_ns = 0;
  void add(uint64_t ns) {
    wait_ns += ns;
    calls++;
    if (ns >= kLongWaitNs) long_ns += ns;
  }
};
CallTimes timed_times;   // under timed
CallTimes shared_times;  // under shared
volatile uint64_t sink;

uint64_t since_ns(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

__attribute__((noinline)) void spin_us(long us) {
  const auto end = Clock::now() + std::chrono::microseconds(us);
  uint64_t x = 0;
  while (Clock::now() < end) x++;
  sink = sink + x;
}

__attribute__((noinline)) void gate() {
  std::unique_lock<std::mutex> lock(gate_lock);
  waiting++;
  while (!started) gate_cond.wait_for(lock, kFarAway);
}

__attribute__((noinline)) void timed_section() {
  const auto t0 = Clock::now();
  if (!timed.try_lock_for(kFarAway)) std::abort();
  timed_times.add(since_ns(t0));
  spin_us(hold_us);
  timed.unlock();
}

__attribute__((noinline)) void shared_section() {
  const auto t0 = Clock::now();
  if (!shared.try_lock_for(kFarAway)) std::abort();
  shared_times.add(since_ns(t0));
  spin_us(hold_us);
  shared.unlock();
}

void worker() {
  gate();
  for (int r = 0; r < rounds; r++) {
    timed_section();
    shared_section();
    auto block = std::make_unique<char[]>(64);
    block[0] = 1;
    sink = sink + static_cast<uint64_t>(block[0]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  if (argc > 2) rounds = std::atoi(argv[2]);
  if (argc > 3) hold_us = std::atol(argv[3]);
  if (threads < 1 || threads > 256 || rounds < 1 || hold_us < 0) {
    std::fprintf(stderr, "usage: cxx_locks [THREADS [ROUNDS [HOLD_US]]]\n");
    return 2;
  }
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; i++) pool.emplace_back(worker);
  for (;;) {  // every worker at the gate, then all go at once
    {
      std::lock_guard<std::mutex> lock(gate_lock);
      if (waiting == threads) {
        started = true;
        gate_cond.notify_all();
        break;
      }
    }
    std::this_thread::yield();
  }
  for (auto& t : pool) t.join();
  for (const auto& [name, times] : {std::pair{"timed", &timed_times}, std::pair{"shared", &shared_times}}) {
    std::fprintf(stderr, "%s_wait_ns=%llu %s_calls=%llu %s_long_ns=%llu\n", name,
                 static_cast<unsigned long long>(times->wait_ns), name, static_cast<unsigned long long>(times->calls),
                 name, static_cast<unsigned long long>(times->long_ns));
  }
  return 0;
}
