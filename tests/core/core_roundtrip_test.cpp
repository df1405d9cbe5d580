// The recorder's core writes what it is told, and the analyzer's reader reads exactly that back:
// calls, bytes and failures per operation and bucket, timed calls, events, threads, process end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "allocscope_core.h"
#include "profile/profile.h"

namespace fs = std::filesystem;
using namespace allocscope;

namespace {

constexpr int kPerThread = 5000;

void workload() {
  for (int i = 0; i < kPerThread; i++) {
    void* p = allocscope_malloc(16 + (i % 100));
    void* q = allocscope_calloc(4, 25);
    q = allocscope_realloc(q, 300);
    void* a = allocscope_aligned_alloc(64, 128);
    allocscope_free(p);
    allocscope_free(q);
    allocscope_free(a);
  }
}

const Counters& of(const OpTable& t, Op op) { return t[static_cast<unsigned>(op)].counters; }
uint64_t calls_of(const OpTable& t, Op op) { return of(t, op).calls; }

}  // namespace

TEST(CoreRoundTrip, WhatTheCoreRecordsTheReaderReadsBack) {
  const fs::path path = fs::temp_directory_path() /
                        ("allocscope-core-" + std::to_string(getpid()) + ".asp");
  fs::remove(path);
  allocscope_configure(path.c_str(), 1);  // time every call

  workload();  // main thread
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) threads.emplace_back(workload);
  for (auto& t : threads) t.join();
  errno = 0;
  EXPECT_EQ(allocscope_malloc(~size_t{0} / 2), nullptr);  // fails, errno preserved
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_STREQ(allocscope_profile_path(), path.c_str());
  allocscope_shutdown();

  const Profile prof = load_profile(path);
  ASSERT_TRUE(prof.process.has_value());
  EXPECT_EQ(prof.process->info.pid, static_cast<uint32_t>(getpid()));
  EXPECT_TRUE(prof.complete());
  EXPECT_FALSE(prof.truncated());
  EXPECT_EQ(prof.threads.size(), 3u);

  const OpTable totals = prof.totals_by_op();
  EXPECT_EQ(calls_of(totals, Op::Malloc), 3u * kPerThread + 1);
  EXPECT_EQ(calls_of(totals, Op::Calloc), 3u * kPerThread);
  EXPECT_EQ(calls_of(totals, Op::Realloc), 3u * kPerThread);
  EXPECT_EQ(calls_of(totals, Op::AlignedAlloc), 3u * kPerThread);
  EXPECT_EQ(calls_of(totals, Op::Free), 3u * 3 * kPerThread);
  EXPECT_EQ(of(totals, Op::Malloc).failed, 1u);

  uint64_t malloc_bytes = 0;
  for (int i = 0; i < kPerThread; i++) malloc_bytes += 16 + (i % 100);
  EXPECT_TRUE(of(totals, Op::Malloc).bytes == 3 * malloc_bytes);
  EXPECT_TRUE(of(totals, Op::Calloc).bytes == 3u * kPerThread * 100);

  // Every call was timed, and every timed call became an event.
  uint64_t all = 0, timed = 0;
  for (const auto& op : totals) {
    all += op.counters.calls;
    timed += op.counters.timed;
  }
  EXPECT_EQ(timed, all);
  EXPECT_EQ(prof.events_read + prof.events_dropped(), all);

  // Buckets add up to the operations, and the calloc requests all sit in 100's bucket.
  uint64_t bucket_calls = 0;
  for (const auto& b : prof.totals_by_bucket()) {
    bucket_calls += b.total.calls;
    if (b.bucket == bucket_of(100)) {
      EXPECT_EQ(b.by_op[static_cast<unsigned>(Op::Calloc)].calls, 3u * kPerThread);
    }
  }
  EXPECT_EQ(bucket_calls, all);
  fs::remove(path);
}
