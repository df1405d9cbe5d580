// window_clusters.h — timed calls summed per timing window and cell: the sampling units of the
// error bounds (the cost model's, cost_errors.cpp; the faults inside calls', faults_in_calls.cpp).
// Private to model/.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace allocscope::cost {

// Timing windows (clusters) a sampled estimate needs before their spread bounds anything: with
// fewer, its bound is the estimate itself (docs/analysis.md, "Error bounds").  Every bound over
// windows takes it from here: the allocator time's and the faults inside calls'.
constexpr size_t kMinWindowsForBound = 5;

// Sums of the timed calls of each timing window, per cell: the windows are the sampling units of
// an error bound (calls of one window are timed together, so they are not independent draws).
// At most kMaxClusters clusters are kept: when full, neighbouring clusters merge pairwise and each
// later cluster gathers twice as many windows (memory stays bounded; a cluster of neighbouring
// windows is still a valid sampling unit, and a more cautious one).  `Sum` adds with +=.
template <class Sum>
class WindowClustersOf {
 public:
  static constexpr size_t kMaxClusters = 4096;
  using Cluster = std::vector<std::pair<uint32_t, Sum>>;  // (cell, sum), cells unsorted

  void begin_window() {
    ++windows_;
    if (clusters_.empty() || in_last_ >= per_cluster_) {
      if (clusters_.size() == kMaxClusters) merge_pairs();
      // The last cluster's index is cleared entry by entry (it holds few cells).
      if (!clusters_.empty()) {
        for (const auto& [cell, sum] : clusters_.back()) index_[cell] = -1;
      }
      clusters_.emplace_back();
      in_last_ = 0;
    }
    ++in_last_;
  }
  // The current window's sum of `cell`.
  Sum& at(uint32_t cell) {
    if (clusters_.empty()) begin_window();
    Cluster& c = clusters_.back();
    if (cell >= index_.size()) index_.resize(cell + 1, -1);
    if (index_[cell] < 0) {
      index_[cell] = static_cast<int32_t>(c.size());
      c.emplace_back(cell, Sum{});
    }
    return c[static_cast<size_t>(index_[cell])].second;
  }
  const std::vector<Cluster>& clusters() const { return clusters_; }
  uint64_t windows() const { return windows_; }

 private:
  void merge_pairs() {
    std::vector<Cluster> merged;
    for (size_t i = 0; i < clusters_.size(); i += 2) {
      Cluster c = std::move(clusters_[i]);
      if (i + 1 < clusters_.size()) {
        for (const auto& entry : clusters_[i + 1]) {
          const uint32_t cell = entry.first;
          auto it = std::find_if(c.begin(), c.end(), [cell](const auto& e) { return e.first == cell; });
          if (it == c.end()) {
            c.emplace_back(cell, entry.second);
          } else {
            it->second += entry.second;
          }
        }
      }
      merged.push_back(std::move(c));
    }
    clusters_ = std::move(merged);
    per_cluster_ *= 2;
    // begin_window() starts a new cluster next: no cell of the merged ones is current.
    std::fill(index_.begin(), index_.end(), -1);
  }
  std::vector<Cluster> clusters_;
  std::vector<int32_t> index_;  // cell -> its entry in the last cluster, or -1
  uint64_t per_cluster_ = 1, in_last_ = 0, windows_ = 0;
};

// The cost model's timed calls per window and (class, op) cell (cost_errors.cpp).
struct TimeSum {
  double ticks = 0;  // corrected
  double wait = 0;   // of which waiting
  double base = 0;   // the calls' uncontended cost
  uint64_t calls = 0;
  TimeSum& operator+=(const TimeSum& o) {
    ticks += o.ticks;
    wait += o.wait;
    base += o.base;
    calls += o.calls;
    return *this;
  }
};

class WindowClusters : public WindowClustersOf<TimeSum> {
 public:
  using Sum = TimeSum;
  void add(uint32_t cell, double ticks, double wait, double base) {
    Sum& s = at(cell);
    s.ticks += ticks;
    s.wait += wait;
    s.base += base;
    ++s.calls;
  }
};

}  // namespace allocscope::cost
