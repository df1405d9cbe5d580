// apportion.cpp — see apportion.h.
#include "model/apportion.h"

#include <map>

namespace allocscope {

Apportioned apportion_estimate(const CostReport& estimate, std::span<const ViewCell> cells, size_t rows) {
  Apportioned out;
  out.row_ns.assign(rows, 0.0);
  out.row_split.assign(rows, TimeSplit{});
  using Key = std::pair<uint32_t, uint8_t>;  // (class, op)
  std::map<Key, std::vector<size_t>> by_cell;  // view cells of each (class, op)
  std::array<std::vector<size_t>, kOpSlots> by_op;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].op >= kOpSlots || cells[i].row >= rows) continue;
    by_op[cells[i].op].push_back(i);
    if (cells[i].cls != kAnyClass) by_cell[{cells[i].cls, cells[i].op}].push_back(i);
  }
  std::vector<double> placed(cells.size(), 0.0);
  auto give = [&](size_t i, double ns, const TimeSplit& per_ns) {
    placed[i] += ns;
    out.row_ns[cells[i].row] += ns;
    out.row_split[cells[i].row].add({per_ns.fast_ns * ns, per_ns.slow_ns * ns, per_ns.wait_ns * ns});
  };
  // Splits `ns` over view cells `ids` by `share(i)`; false when they have no share at all.
  auto spread = [&](const std::vector<size_t>& ids, double ns, const TimeSplit& per_ns, auto share) {
    double sum = 0;
    for (size_t i : ids) sum += share(i);
    if (!(sum > 0)) return false;
    for (size_t i : ids) {
      const double s = share(i);
      if (s > 0) give(i, ns * s / sum, per_ns);
    }
    return true;
  };
  auto fractions = [](const EstimateCell& c) {
    const double t = c.split.total();
    return t > 0 ? TimeSplit{c.split.fast_ns / t, c.split.slow_ns / t, c.split.wait_ns / t} : TimeSplit{1, 0, 0};
  };
  std::array<double, kOpSlots> left{};
  std::array<TimeSplit, kOpSlots> left_split{};
  for (const EstimateCell& c : estimate.cells) {
    out.total_ns += c.time_ns;
    if (c.op >= kOpSlots || c.time_ns <= 0) continue;
    const TimeSplit per_ns = fractions(c);
    const auto it = by_cell.find({c.cls, c.op});
    bool done = false;
    if (it != by_cell.end()) {
      // Rows without timed calls weigh their calls at the mean of those with.
      double w = 0, n = 0;
      for (size_t i : it->second) {
        if (cells[i].weight >= 0) {
          w += cells[i].weight;
          n += static_cast<double>(cells[i].calls);
        }
      }
      const double per_call = n > 0 ? w / n : 0;
      done = spread(it->second, c.time_ns, per_ns, [&](size_t i) {
        return cells[i].weight >= 0 ? cells[i].weight : per_call * static_cast<double>(cells[i].calls);
      });
      if (!done) {
        done = spread(it->second, c.time_ns, per_ns, [&](size_t i) { return static_cast<double>(cells[i].calls); });
      }
    }
    if (!done) {
      left[c.op] += c.time_ns;
      left_split[c.op].add(c.split);
    }
  }
  // What no view cell of its class took: over the operation's view cells.
  for (unsigned op = 0; op < kOpSlots; ++op) {
    if (left[op] <= 0) continue;
    const double t = left_split[op].total();
    const TimeSplit per_ns = t > 0 ? TimeSplit{left_split[op].fast_ns / t, left_split[op].slow_ns / t, left_split[op].wait_ns / t}
                                   : TimeSplit{1, 0, 0};
    const auto& ids = by_op[op];
    // kAnyClass cells have nothing yet: weigh them by their own evidence like the others.
    bool any_class = false;
    for (size_t i : ids) any_class |= cells[i].cls == kAnyClass;
    bool done;
    if (any_class) {
      double w = 0, n = 0;
      for (size_t i : ids) {
        if (cells[i].weight >= 0) {
          w += cells[i].weight;
          n += static_cast<double>(cells[i].calls);
        }
      }
      const double per_call = n > 0 ? w / n : 0;
      done = spread(ids, left[op], per_ns, [&](size_t i) {
        return cells[i].weight >= 0 ? cells[i].weight : per_call * static_cast<double>(cells[i].calls);
      });
    } else {
      done = spread(ids, left[op], per_ns, [&](size_t i) { return placed[i]; });
    }
    if (!done) done = spread(ids, left[op], per_ns, [&](size_t i) { return static_cast<double>(cells[i].calls); });
    if (!done) out.unplaced_ns[op] += left[op];
  }
  return out;
}

}  // namespace allocscope
