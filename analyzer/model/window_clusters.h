// window_clusters.h — the cost model's timed calls summed per timing window and (class, op) cell:
// the sampling units of its error bounds (cost_errors.cpp).  Private to model/.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace allocscope::cost {

// The timed calls of each timing window, per (class, op) cell: the windows are the sampling units
// of the error bound (calls of one window are timed together, so they are not independent
// draws).  At most kMaxClusters clusters are kept: when full, neighbouring clusters merge
// pairwise and each later cluster gathers twice as many windows (memory stays bounded; a
// cluster of neighbouring windows is still a valid sampling unit, and a more cautious one).
class WindowClusters {
 public:
  static constexpr size_t kMaxClusters = 4096;
  struct Sum {
    double ticks = 0;  // corrected
    double wait = 0;   // of which waiting
    double base = 0;   // the calls' uncontended cost
    uint64_t calls = 0;
  };
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
  void add(uint32_t cell, double ticks, double wait, double base) {
    if (clusters_.empty()) begin_window();
    Cluster& c = clusters_.back();
    if (cell >= index_.size()) index_.resize(cell + 1, -1);
    if (index_[cell] < 0) {
      index_[cell] = static_cast<int32_t>(c.size());
      c.emplace_back(cell, Sum{});
    }
    Sum& s = c[static_cast<size_t>(index_[cell])].second;
    s.ticks += ticks;
    s.wait += wait;
    s.base += base;
    ++s.calls;
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
          const Sum& sum = entry.second;
          auto it = std::find_if(c.begin(), c.end(), [cell](const auto& e) { return e.first == cell; });
          if (it == c.end()) {
            c.emplace_back(cell, sum);
          } else {
            it->second.ticks += sum.ticks;
            it->second.wait += sum.wait;
            it->second.base += sum.base;
            it->second.calls += sum.calls;
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

}  // namespace allocscope::cost
