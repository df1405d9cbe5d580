// apportion.h — one estimate of allocator time, split over any view's rows.
//
// The cost model (cost_model.h) estimates the allocator's time once per (size class of the
// allocator's table, operation): CostReport::cells.  Views that cut the calls differently —
// shapes, call sites, the exports, a diff's shapes — do not make estimates of their own: each
// row's part of an estimate cell is in proportion to the row's own evidence in that cell (its
// timed calls' time scaled to its calls; without timed calls, its calls at the cell's mean
// per call), so every view adds up to the report's total.  Definitions: docs/analysis.md, "One
// estimate, many views".
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "allocscope/ops.h"
#include "model/cost_model.h"

namespace allocscope {

constexpr uint32_t kAnyClass = ~uint32_t{0} - 1;  // a view cell whose class is not known (by bucket)

struct ViewCell {
  size_t row = 0;
  uint32_t cls = 0;      // index in the estimate's class table, kEstimateNoClass, or kAnyClass
  uint8_t op = 0;
  uint64_t calls = 0;
  double weight = -1;    // the row's own time in the cell (any unit, the same for all cells);
                         // < 0: no timed call, the row weighs its calls at the cell's mean
};

struct Apportioned {
  std::vector<double> row_ns;                 // per row
  std::vector<TimeSplit> row_split;           // per row
  std::array<double, kOpSlots> unplaced_ns{};  // per operation: estimate no view cell took
  double total_ns = 0;                        // sum of the rows and the unplaced parts
};

// Splits `estimate.cells` over `cells` (rows 0 .. rows-1).  Per (class, op): in proportion to the
// view cells' weights; an estimate cell no view cell shares a class with goes to the view cells
// of its operation (kAnyClass ones included) in proportion to what they already have (or their
// calls); what no view cell of the operation can take is `unplaced`.
Apportioned apportion_estimate(const CostReport& estimate, std::span<const ViewCell> cells, size_t rows);

}  // namespace allocscope
