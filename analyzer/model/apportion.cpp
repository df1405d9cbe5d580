// apportion.cpp — see apportion.h.
#include "model/apportion.h"

#include <map>

namespace allocscope {

namespace {

// Splits estimate time over view cells, and keeps what each cell took.
class Spreader {
 public:
  Spreader(Apportioned& out, std::span<const ViewCell> cells) : out_(out), cells_(cells), placed_(cells.size(), 0.0) {}

  // Splits `ns` over view cells `ids` by `share(i)`; false when they have no share at all.
  template <class Share>
  bool spread(const std::vector<size_t>& ids, double ns, const TimeSplit& per_ns, Share share) {
    double sum = 0;
    for (size_t i : ids) sum += share(i);
    if (!(sum > 0)) return false;
    for (size_t i : ids) {
      const double s = share(i);
      if (s > 0) give(i, ns * s / sum, per_ns);
    }
    return true;
  }
  // By the cells' own evidence: rows without timed calls weigh their calls at the mean of those with.
  bool spread_by_evidence(const std::vector<size_t>& ids, double ns, const TimeSplit& per_ns) {
    double w = 0, n = 0;
    for (size_t i : ids) {
      if (cells_[i].weight >= 0) {
        w += cells_[i].weight;
        n += static_cast<double>(cells_[i].calls);
      }
    }
    const double per_call = n > 0 ? w / n : 0;
    return spread(ids, ns, per_ns, [&](size_t i) {
      return cells_[i].weight >= 0 ? cells_[i].weight : per_call * static_cast<double>(cells_[i].calls);
    });
  }
  bool spread_by_calls(const std::vector<size_t>& ids, double ns, const TimeSplit& per_ns) {
    return spread(ids, ns, per_ns, [&](size_t i) { return static_cast<double>(cells_[i].calls); });
  }
  bool spread_by_placed(const std::vector<size_t>& ids, double ns, const TimeSplit& per_ns) {
    return spread(ids, ns, per_ns, [&](size_t i) { return placed_[i]; });
  }

 private:
  void give(size_t i, double ns, const TimeSplit& per_ns) {
    placed_[i] += ns;
    out_.row_ns[cells_[i].row] += ns;
    out_.row_split[cells_[i].row].add({per_ns.fast_ns * ns, per_ns.slow_ns * ns, per_ns.wait_ns * ns});
  }
  Apportioned& out_;
  std::span<const ViewCell> cells_;
  std::vector<double> placed_;
};

// The shares of fast, slow and waiting in a split (all fast when it is empty).
TimeSplit fractions(const TimeSplit& split) {
  const double t = split.total();
  return t > 0 ? TimeSplit{split.fast_ns / t, split.slow_ns / t, split.wait_ns / t} : TimeSplit{1, 0, 0};
}

}  // namespace

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
  Spreader spreader(out, cells);
  std::array<double, kOpSlots> left{};
  std::array<TimeSplit, kOpSlots> left_split{};
  for (const EstimateCell& c : estimate.cells) {
    out.total_ns += c.time_ns;
    if (c.op >= kOpSlots || c.time_ns <= 0) continue;
    const TimeSplit per_ns = fractions(c.split);
    const auto it = by_cell.find({c.cls, c.op});
    bool done = false;
    if (it != by_cell.end()) {
      done = spreader.spread_by_evidence(it->second, c.time_ns, per_ns) ||
             spreader.spread_by_calls(it->second, c.time_ns, per_ns);
    }
    if (!done) {
      left[c.op] += c.time_ns;
      left_split[c.op].add(c.split);
    }
  }
  // What no view cell of its class took: over the operation's view cells.
  for (unsigned op = 0; op < kOpSlots; ++op) {
    if (left[op] <= 0) continue;
    const TimeSplit per_ns = fractions(left_split[op]);
    const auto& ids = by_op[op];
    // kAnyClass cells have nothing yet: weigh them by their own evidence like the others.
    bool any_class = false;
    for (size_t i : ids) any_class |= cells[i].cls == kAnyClass;
    const bool done = (any_class ? spreader.spread_by_evidence(ids, left[op], per_ns)
                                 : spreader.spread_by_placed(ids, left[op], per_ns)) ||
                      spreader.spread_by_calls(ids, left[op], per_ns);
    if (!done) out.unplaced_ns[op] += left[op];
  }
  return out;
}

}  // namespace allocscope
