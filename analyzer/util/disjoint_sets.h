// util/disjoint_sets.h — union-find over small integer ids (thread serials): which threads a set
// of pairs joins.  Path halving; ids grow on demand.
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

namespace allocscope {

class DisjointSets {
 public:
  // Makes ids 0..id exist, each its own set.
  void grow(uint32_t id) {
    if (id < parent_.size()) return;
    const size_t old = parent_.size();
    parent_.resize(static_cast<size_t>(id) + 1);
    size_.resize(static_cast<size_t>(id) + 1, 1);
    std::iota(parent_.begin() + static_cast<std::ptrdiff_t>(old), parent_.end(), static_cast<uint32_t>(old));
  }
  // The set's representative; an id never grown is its own.
  uint32_t find(uint32_t x) {
    if (x >= parent_.size()) return x;
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  // Joins the sets of a and b; returns how many ids the joined set holds.
  uint32_t unite(uint32_t a, uint32_t b) {
    grow(a > b ? a : b);
    a = find(a);
    b = find(b);
    if (a != b) {
      parent_[a] = b;
      size_[b] += size_[a];
    }
    return size_[b];
  }

 private:
  std::vector<uint32_t> parent_;
  std::vector<uint32_t> size_;  // by representative: ids in its set
};

}  // namespace allocscope
