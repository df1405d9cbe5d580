// shim/calibration.cpp — see calibration.h.
#include "calibration.h"

#include <linux/futex.h>
#include <sys/mman.h>

#include <cstring>

#include "allocscope/window_phase.h"
#include "sys.h"
#include "tick_clock.h"

namespace allocscope {

bool g_use_tsc = false;

namespace {

// Repeats of each probe: their median.  Every image the program execs calibrates anew, so this is
// paid once per process (a fork child keeps its parent's): 15 repeats of the seven probes, one of
// them a page fault, and the 50 µs spin below cost about 0.45 ms less a process here than 31
// repeats and 200 µs did (docs/overhead.md, "fork+exec").
constexpr int kRuns = 15;

template <class F>
uint64_t median_ticks(F&& probe) {
  uint64_t v[kRuns];
  for (int i = 0; i < kRuns; i++) {
    const uint64_t t0 = ticks();
    probe();
    v[i] = ticks() - t0;
  }
  for (int i = 1; i < kRuns; i++)  // insertion sort: 15 values
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      const uint64_t x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
  return v[kRuns / 2];
}

}  // namespace

void calibrate(format::Calibration& c) {
  std::memset(&c, 0, sizeof c);
  g_use_tsc = cpu_has_invariant_tsc();
  c.clock = static_cast<uint8_t>(g_use_tsc ? format::Clock::Tsc : format::Clock::Monotonic);
  if (g_use_tsc) {
    // 50 µs spin: the vDSO clock read (~30 ns) bounds the error to about 0.1 %; the analyzer
    // refines the rate from the spin's start to the process's last (tick, clock) reading, a span
    // at least as long (analyzer/profile/tick_clock.cpp).
    c.calib_mono0 = mono_ns();
    c.calib_tick0 = ticks();
    uint64_t m;
    do m = mono_ns(); while (m - c.calib_mono0 < 50000);
    c.calib_tick1 = ticks();
    c.calib_mono1 = m;
    c.tick_hz = (c.calib_tick1 - c.calib_tick0) * 1000000000ull / (c.calib_mono1 - c.calib_mono0);
  } else {
    c.calib_mono0 = c.calib_tick0 = mono_ns();
    c.calib_mono1 = c.calib_tick1 = c.calib_mono0;
    c.tick_hz = 1000000000ull;
  }
  int word = 0;
  c.clock_read_ticks = median_ticks([] { (void)ticks(); });
  c.syscall_ticks = median_ticks([] { (void)sys::getppid(); });
  c.futex_wake_ticks = median_ticks([&] { sys::futex(&word, FUTEX_WAKE_PRIVATE, 1); });
  c.futex_wait_ticks = median_ticks([&] { sys::futex(&word, FUTEX_WAIT_PRIVATE, 1); });
  char ru[256];
  c.rusage_ticks = median_ticks([&] { sys::getrusage(1 /* RUSAGE_THREAD */, ru); });
  c.thread_cputime_ticks = median_ticks([&] { sys::clock_gettime(3 /* THREAD_CPUTIME */, ru); });
  // What a page fault costs: first writes to fresh anonymous pages.
  constexpr size_t kPage = 4096;
  if (auto* pages = static_cast<char*>(sys::mmap(nullptr, kRuns * kPage, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    int i = 0;
    c.minor_fault_ticks = median_ticks([&] { *static_cast<volatile char*>(pages + kPage * i++) = 1; });
    sys::munmap(pages, kRuns * kPage);
  }
  // The seed of the timing windows' offsets (allocscope/window_phase.h): it only has to differ
  // from run to run, and is no secret (it is written to the profile).  The clocks' fast-moving
  // low bits after the probes above, and the process id.
  c.window_seed = mix64(ticks() ^ mix64(realtime_ns() ^ (static_cast<uint64_t>(sys::getpid()) << 40)));
}

}  // namespace allocscope
