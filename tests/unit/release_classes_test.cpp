// The rule that puts releases in size classes (release_classes.h): own blocks first, then other
// threads' kept blocks; exact thread and class totals; free(NULL) stays in the class of 0 B.
#include "model/release_classes.h"

#include <gtest/gtest.h>

#include "allocscope/ops.h"

namespace allocscope {
namespace {

constexpr uint8_t kMalloc = static_cast<uint8_t>(Op::Malloc);
constexpr uint8_t kFree = static_cast<uint8_t>(Op::Free);
constexpr uint8_t kNew = static_cast<uint8_t>(Op::New);
constexpr uint8_t kDelete = static_cast<uint8_t>(Op::Delete);

void put(ClassCellMap& m, uint32_t cls, uint8_t op, uint64_t calls, uint64_t failed = 0) {
  Cell& c = m[ClassCellKey{cls, op}];
  c.counters.calls += calls;
  c.counters.failed += failed;
}

uint64_t calls(const ClassCellMap& m, uint32_t cls, uint8_t op) {
  const auto it = m.find(ClassCellKey{cls, op});
  return it == m.end() ? 0 : it->second.counters.calls;
}

TEST(ReleaseClasses, AThreadThatFreesWhatItMakesGetsExactClasses) {
  // glibc's usable sizes put the frees in other classes than their requests (issue: chunk 32).
  std::vector<ClassCellMap> t(1);
  put(t[0], 1, kMalloc, 300);
  put(t[0], 2, kMalloc, 700);
  put(t[0], 2, kFree, 100);  // timed frees, classed by usable size
  put(t[0], kNoClass, kFree, 900);
  const std::vector<const CellMap*> raw(1, nullptr);
  const ReleaseTotals totals = attribute_releases(t, raw, bucket_class_table());
  EXPECT_EQ(calls(t[0], 1, kFree), 300u);
  EXPECT_EQ(calls(t[0], 2, kFree), 700u);
  EXPECT_EQ(calls(t[0], kNoClass, kFree), 0u);
  EXPECT_EQ(totals.blocks_made, 1000u);
  EXPECT_EQ(totals.releases, 1000u);
  EXPECT_EQ(totals.unreleased(), 0u);
}

TEST(ReleaseClasses, CrossThreadFreesTakeTheBlocksTheMakersKept) {
  // Thread 0 makes 400 blocks of class 1 and frees 100 of them; thread 1 makes 50 of class 2 and
  // frees them, plus 300 of thread 0's.  Thread 2 makes 10 of class 3 and keeps them.
  std::vector<ClassCellMap> t(3);
  put(t[0], 1, kMalloc, 400);
  put(t[0], kNoClass, kFree, 100);
  put(t[1], 2, kMalloc, 50);
  put(t[1], kNoClass, kFree, 350);
  put(t[2], 3, kMalloc, 10);
  const std::vector<const CellMap*> raw(3, nullptr);
  const ReleaseTotals totals = attribute_releases(t, raw, bucket_class_table());
  EXPECT_EQ(calls(t[0], 1, kFree), 100u);  // its own blocks first
  EXPECT_EQ(calls(t[1], 2, kFree), 50u);
  // Its 300 others' blocks: in proportion to the 310 kept (300 of class 1, 10 of class 3):
  // 290.3 and 9.7, largest remainder.
  EXPECT_EQ(calls(t[1], 1, kFree), 290u);
  EXPECT_EQ(calls(t[1], 3, kFree), 10u);
  EXPECT_EQ(calls(t[2], 3, kFree), 0u);
  EXPECT_EQ(totals.blocks_made, 460u);
  EXPECT_EQ(totals.releases, 450u);
  EXPECT_EQ(totals.unreleased(), 10u);
}

TEST(ReleaseClasses, ThreadAndClassTotalsAreExact) {
  std::vector<ClassCellMap> t(4);
  for (uint32_t cls = 1; cls <= 7; ++cls) put(t[0], cls, kMalloc, 1000 + 37 * cls, 3);
  put(t[0], kNoClass, kFree, 2001);
  put(t[1], kNoClass, kFree, 1999);
  put(t[2], kNoClass, kFree, 1333);
  put(t[3], 4, kFree, 2682);
  const std::vector<const CellMap*> raw(4, nullptr);
  attribute_releases(t, raw, bucket_class_table());
  const uint64_t thread_totals[4] = {2001, 1999, 1333, 2682};
  uint64_t made = 0;
  for (uint32_t cls = 1; cls <= 7; ++cls) {
    uint64_t freed = 0;
    for (const auto& m : t) freed += calls(m, cls, kFree);
    EXPECT_EQ(freed, 1000 + 37 * cls - 3) << cls;  // 8015 releases = every block made
    made += 1000 + 37 * cls - 3;
  }
  EXPECT_EQ(made, 8015u);
  for (size_t i = 0; i < 4; ++i) {
    uint64_t n = 0;
    for (uint32_t cls = 1; cls <= 7; ++cls) n += calls(t[i], cls, kFree);
    EXPECT_EQ(n, thread_totals[i]) << i;
  }
}

TEST(ReleaseClasses, DeleteFollowsNewAndFreeFollowsMalloc) {
  std::vector<ClassCellMap> t(1);
  put(t[0], 5, kMalloc, 10);
  put(t[0], 9, kNew, 20);
  put(t[0], kNoClass, kFree, 10);
  put(t[0], kNoClass, kDelete, 20);
  const std::vector<const CellMap*> raw(1, nullptr);
  attribute_releases(t, raw, bucket_class_table());
  EXPECT_EQ(calls(t[0], 5, kFree), 10u);
  EXPECT_EQ(calls(t[0], 9, kFree), 0u);
  EXPECT_EQ(calls(t[0], 9, kDelete), 20u);
}

TEST(ReleaseClasses, FreeOfNullStaysInTheClassOfZeroBytes) {
  const ClassTable& table = bucket_class_table();
  const uint32_t zero = static_cast<uint32_t>(table.class_of(0));
  const uint32_t c64 = static_cast<uint32_t>(table.class_of(64));
  CellMap raw;
  raw[CellKey{kFree, 0}].counters.calls = 4;  // free(NULL): the shim counts it with size 0
  std::vector<ClassCellMap> t(1);
  put(t[0], c64, kMalloc, 100);
  put(t[0], zero, kFree, 4);
  put(t[0], kNoClass, kFree, 100);
  const std::vector<const CellMap*> cells{&raw};
  const ReleaseTotals totals = attribute_releases(t, cells, table);
  EXPECT_EQ(calls(t[0], zero, kFree), 4u);
  EXPECT_EQ(calls(t[0], c64, kFree), 100u);
  EXPECT_EQ(totals.releases, 100u);
  EXPECT_EQ(totals.unreleased(), 0u);
}

}  // namespace
}  // namespace allocscope
