// The one estimate of allocator time, split over a view's rows (apportion.h).
#include "model/apportion.h"

#include <gtest/gtest.h>

namespace allocscope {
namespace {

CostReport estimate_of(std::initializer_list<EstimateCell> cells) {
  CostReport r;
  for (const EstimateCell& c : cells) {
    r.cells.push_back(c);
    r.allocator_time_ns += c.time_ns;
  }
  return r;
}

EstimateCell cell(uint32_t cls, uint8_t op, uint64_t calls, double ns, double wait_ns = 0) {
  EstimateCell c;
  c.cls = cls;
  c.op = op;
  c.calls = calls;
  c.time_ns = ns;
  c.split = {ns - wait_ns, 0, wait_ns};
  return c;
}

ViewCell view(size_t row, uint32_t cls, uint8_t op, uint64_t calls, double weight) {
  ViewCell v;
  v.row = row;
  v.cls = cls;
  v.op = op;
  v.calls = calls;
  v.weight = weight;
  return v;
}

constexpr uint8_t kMalloc = 0, kFree = 1;

TEST(Apportion, RowsShareEachCellByTheirOwnEvidence) {
  const CostReport r = estimate_of({cell(3, kMalloc, 100, 1000, 400)});
  // Row 0's timed calls cost three times row 1's: it gets three quarters of the cell.
  const ViewCell cells[] = {view(0, 3, kMalloc, 50, 300), view(1, 3, kMalloc, 50, 100)};
  const Apportioned a = apportion_estimate(r, cells, 2);
  EXPECT_DOUBLE_EQ(a.row_ns[0], 750);
  EXPECT_DOUBLE_EQ(a.row_ns[1], 250);
  EXPECT_DOUBLE_EQ(a.row_split[0].wait_ns, 300);  // the cell's split, in proportion
  EXPECT_DOUBLE_EQ(a.total_ns, 1000);
}

TEST(Apportion, RowsWithoutTimedCallsWeighTheirCallsAtTheCellsMean) {
  const CostReport r = estimate_of({cell(3, kMalloc, 300, 3000)});
  // Row 0: 100 calls, 1000 ticks of evidence (10 per call); row 1: 200 calls, none timed.
  const ViewCell cells[] = {view(0, 3, kMalloc, 100, 1000), view(1, 3, kMalloc, 200, -1)};
  const Apportioned a = apportion_estimate(r, cells, 2);
  EXPECT_DOUBLE_EQ(a.row_ns[0], 1000);
  EXPECT_DOUBLE_EQ(a.row_ns[1], 2000);
}

TEST(Apportion, ACellNoRowSharesGoesToTheOperationsRowsAndTheRestIsUnplaced) {
  const CostReport r = estimate_of({cell(3, kMalloc, 10, 100), cell(4, kFree, 10, 60), cell(7, kFree, 10, 40),
                                    cell(5, 9, 10, 20)});
  // Frees of class 7 have no row of that class: they go to the free rows, in proportion.
  const ViewCell cells[] = {view(0, 3, kMalloc, 10, 5), view(1, 4, kFree, 10, 5)};
  const Apportioned a = apportion_estimate(r, cells, 2);
  EXPECT_DOUBLE_EQ(a.row_ns[0], 100);
  EXPECT_DOUBLE_EQ(a.row_ns[1], 100);
  EXPECT_DOUBLE_EQ(a.unplaced_ns[9], 20);  // no row of operation 9 at all
  EXPECT_DOUBLE_EQ(a.row_ns[0] + a.row_ns[1] + a.unplaced_ns[9], a.total_ns);
}

TEST(Apportion, RowsOfNoKnownClassShareTheirOperationsTotal) {
  const CostReport r = estimate_of({cell(3, kMalloc, 10, 100), cell(8, kMalloc, 10, 300)});
  const ViewCell cells[] = {view(0, kAnyClass, kMalloc, 10, 1), view(1, kAnyClass, kMalloc, 10, 3)};
  const Apportioned a = apportion_estimate(r, cells, 2);
  EXPECT_DOUBLE_EQ(a.row_ns[0], 100);
  EXPECT_DOUBLE_EQ(a.row_ns[1], 300);
}

}  // namespace
}  // namespace allocscope
