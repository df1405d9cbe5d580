// The recorder's core under concurrency, through its C API (shim/allocscope_core.h): the test a
// ThreadSanitizer build runs on the per-thread slots, their registry and the chunk writers.
//
// What happens at once: worker threads record calls and end (their pthread-key destructor flushes
// their slot, later threads reclaim it); waves of threads keep the registry scanning and claiming;
// optionally other threads flush every slot over and over while the owners record.  Then the
// final flush, and the profile must read back with every call counted exactly.
//
// The main thread starts recording before any other thread exists, as the preload library does
// at load time.  (Threads whose first call races the start-up itself read the sampling settings
// while they are being written: a known issue, docs/robustness.md.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "allocscope/ops.h"
#include "allocscope_core.h"
#include "profile/profile.h"

namespace fs = std::filesystem;
using namespace allocscope;

namespace {

constexpr int kWaves = 12, kPerWave = 6, kIters = 2000;

void work(int seed) {
  for (int i = 0; i < kIters; i++) {
    void* p = allocscope_malloc(16 + static_cast<size_t>((i * 7 + seed) % 500));
    void* q = allocscope_calloc(3, 40);
    q = allocscope_realloc(q, 200 + static_cast<size_t>(i % 64));
    allocscope_free(p);
    allocscope_free(q);
  }
}

uint64_t calls_of(const OpTable& t, Op op) { return t[static_cast<unsigned>(op)].counters.calls; }

// Records waves of threads while `flushers` other threads flush every slot over and over; then
// the final flush and the profile read back with every call counted.
void run(int flushers) {
  const fs::path path = fs::temp_directory_path() /
                        ("allocscope-core-threads-" + std::to_string(getpid()) + ".asp");
  fs::remove(path);
  // Each flush writes a snapshot of every busy thread: bound the file, whatever goes wrong (the
  // shim stops writing at RLIMIT_FSIZE; the test then fails on a profile cut short).
  const rlimit fsize{256u << 20, 256u << 20};
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &fsize), 0);
  allocscope_configure(path.c_str(), 1);  // time every call: events, rings, flushes
  allocscope_free(allocscope_malloc(1));  // start-up, on this thread alone

  std::atomic<bool> done{false};
  std::vector<std::thread> flushing;
  for (int f = 0; f < flushers; f++) {
    flushing.emplace_back([&done] {
      while (!done.load()) {
        allocscope_flush();
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    });
  }
  for (int wave = 0; wave < kWaves; wave++) {
    std::vector<std::thread> workers;
    for (int t = 0; t < kPerWave; t++) workers.emplace_back(work, wave * kPerWave + t);
    for (auto& t : workers) t.join();
  }
  done = true;
  for (auto& f : flushing) f.join();
  const std::string written = allocscope_profile_path();
  allocscope_shutdown();
  ASSERT_FALSE(written.empty());

  const Profile prof = load_profile(written);
  EXPECT_TRUE(prof.complete());
  EXPECT_FALSE(prof.truncated());
  EXPECT_EQ(prof.incomplete_snapshots, 0u);
  const OpTable totals = prof.totals_by_op();
  const uint64_t threads = kWaves * kPerWave;
  EXPECT_EQ(calls_of(totals, Op::Malloc), threads * kIters + 1);
  EXPECT_EQ(calls_of(totals, Op::Calloc), threads * kIters);
  EXPECT_EQ(calls_of(totals, Op::Realloc), threads * kIters);
  EXPECT_EQ(calls_of(totals, Op::Free), 2 * threads * kIters + 1);
  EXPECT_GE(prof.threads_seen(), threads);
  fs::remove(written);
}

}  // namespace

// Owners record and flush their own slots (ring full, every 250 ms, at exit); later waves reclaim
// the slots of threads that are gone.
TEST(CoreThreads, RecordingThreadExitAndSlotReuse) { run(0); }

// The same while two other threads flush every slot (as the final flush at exit() does while
// other threads still start): a reclaim takes the slot's flushing flag before it resets the slot,
// and a flusher reads the slot's state only with the flag held.
TEST(CoreThreads, ConcurrentFlushersWhileSlotsAreReclaimed) { run(2); }
