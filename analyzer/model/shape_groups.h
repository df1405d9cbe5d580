// shape_groups.h — shapes merged across adjacent size classes, so that the few shapes of a
// workload read at a glance: "short-lived same-thread 16–1039 B" rather than sixty rows of one
// size class each.
//
// A fine shape (lifetimes.h) is (size class, lifetime band, same/cross thread).  A shape group
// keeps the thread pattern, coarsens the band into a lifetime group — short-lived (bands below
// 10 µs), medium-lived (below 1 s), long-lived (1 s or more), leaked — and merges size classes
// that are adjacent among the classes holding blocks: a run of classes ends at a class that holds
// blocks, none of them in this (lifetime group, thread pattern).  Classes that hold no block at
// all do not end a run.  The groups' rows themselves are built in shapes.cpp, for one profile and
// for the difference between two.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "model/lifetimes.h"

namespace allocscope {

enum class LifetimeGroup : uint8_t { Short, Medium, Long, Leaked };

LifetimeGroup lifetime_group(LifetimeBand band);
// "short", "medium", "long", "leaked" (stable: JSON).
const char* lifetime_group_name(LifetimeGroup group);

struct ShapeGroupKey {
  LifetimeGroup group = LifetimeGroup::Short;
  bool cross_thread = false;
  auto operator<=>(const ShapeGroupKey&) const = default;
};

inline ShapeGroupKey shape_group_key(LifetimeBand band, bool cross_thread) {
  return ShapeGroupKey{lifetime_group(band), cross_thread};
}

using ShapeCell = std::pair<ShapeGroupKey, uint32_t>;  // (group key, size class index)

// For every cell holding blocks, the first class of the run it belongs to (see above).
std::map<ShapeCell, uint32_t> class_runs(const std::set<ShapeCell>& cells);

}  // namespace allocscope
