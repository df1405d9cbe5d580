// The single-producer, single-consumer ring (include/allocscope/ring.h).
#include "allocscope/ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace allocscope {
namespace {

// Consumes up to `max` records into a vector, checking that indices are consecutive.
template <class T>
std::vector<T> drain(Ring<T>& ring, uint64_t max = ~uint64_t{0}) {
  std::vector<T> out;
  ring.consume(max, [&](const T* records, uint64_t count, uint64_t first_index) {
    EXPECT_EQ(first_index, ring.consumed() + out.size());
    out.insert(out.end(), records, records + count);
  });
  return out;
}

TEST(Ring, PushThenConsumeInOrder) {
  std::vector<int> storage(8);
  Ring<int> ring;
  ring.init(storage.data(), storage.size());
  EXPECT_EQ(ring.capacity(), 8u);
  EXPECT_EQ(ring.size(), 0u);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(ring.push(i));
  EXPECT_EQ(ring.size(), 5u);
  EXPECT_EQ(drain(ring), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ring.size(), 0u);
  EXPECT_EQ(ring.consumed(), 5u);
}

TEST(Ring, RefusesPushWhenFull) {
  std::vector<int> storage(4);
  Ring<int> ring;
  ring.init(storage.data(), storage.size());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ring.push(i));
  EXPECT_TRUE(ring.full());
  EXPECT_FALSE(ring.push(99));
  EXPECT_EQ(drain(ring, 1), std::vector<int>{0});
  EXPECT_FALSE(ring.full());
  EXPECT_TRUE(ring.push(4));
  EXPECT_EQ(drain(ring), (std::vector<int>{1, 2, 3, 4}));
}

TEST(Ring, WrapsAroundInTwoSpans) {
  std::vector<int> storage(8);
  Ring<int> ring;
  ring.init(storage.data(), storage.size());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(ring.push(i));
  EXPECT_EQ(drain(ring, 6).size(), 6u);
  for (int i = 6; i < 13; ++i) ASSERT_TRUE(ring.push(i));  // occupies slots 6,7 then 0..4
  std::vector<uint64_t> spans;
  std::vector<int> seen;
  ring.consume(~uint64_t{0}, [&](const int* records, uint64_t count, uint64_t) {
    spans.push_back(count);
    seen.insert(seen.end(), records, records + count);
  });
  EXPECT_EQ(spans, (std::vector<uint64_t>{2, 5}));
  EXPECT_EQ(seen, (std::vector<int>{6, 7, 8, 9, 10, 11, 12}));
}

TEST(Ring, ConsumeRespectsMax) {
  std::vector<int> storage(16);
  Ring<int> ring;
  ring.init(storage.data(), storage.size());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(ring.push(i));
  EXPECT_EQ(drain(ring, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(drain(ring, 0), std::vector<int>{});
  EXPECT_EQ(ring.size(), 7u);
}

TEST(Ring, ProducerAndConsumerThreadsSeeEveryRecordOnceInOrder) {
  constexpr uint64_t kRecords = 2'000'000;
  std::vector<uint64_t> storage(64);
  Ring<uint64_t> ring;
  ring.init(storage.data(), storage.size());

  std::thread producer([&] {
    for (uint64_t i = 0; i < kRecords;) {
      if (ring.push(i)) {
        ++i;
      } else {
        std::this_thread::yield();
      }
    }
  });
  uint64_t expected = 0;
  bool in_order = true;
  while (expected < kRecords) {
    const uint64_t got = ring.consume(17, [&](const uint64_t* records, uint64_t count, uint64_t first) {
      in_order = in_order && first == expected;
      for (uint64_t k = 0; k < count; ++k) in_order = in_order && records[k] == expected + k;
      expected += count;
    });
    if (got == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kRecords);
  EXPECT_EQ(ring.size(), 0u);
}

}  // namespace
}  // namespace allocscope
