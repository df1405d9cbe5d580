// release_classes.h — the one rule that puts a release (free, delete, delete[]) in a size class.
//
// A release is counted in the class of the request that made its block.  The shim does not know
// that request when it sees a free (asking the allocator costs as much as the free, and the size
// it reports is the allocator's slot, not the request), so the analyzer gives releases to classes
// by the blocks made, per operation family:
//
//   free      ← malloc, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign,
//               valloc, pvalloc (successful calls; each realloc counts as one block)
//   delete    ← new          delete[] ← new[]
//
// (when the family made no block in the process, every allocating operation's blocks count).
//   1. A thread gives back its own blocks first: min(its releases, the blocks it made), in
//      proportion to the blocks it made in each class (largest remainder: exact in integers, no
//      class more than it made).
//   2. Its releases beyond that are other threads' blocks (cross-thread frees): spread over the
//      blocks the makers kept after step 1, in proportion (beyond those — blocks made before
//      recording — in proportion to all blocks made); class quotas first, then each thread's
//      share of what is left, so that class and thread totals are both exact.
// So on a workload that gives back every block it makes, each class's releases equal its
// allocations, whatever the allocator or the C library; otherwise the blocks still alive at exit
// (stated by report) stay with the threads, and classes, that made them, in proportion.  A thread
// that frees all it makes gets exact classes, so identical workloads get identical per-size
// counts under any two allocators wherever their requests are the same.  Releases of size 0 —
// free(NULL), which gives back no block, and a sized delete of a 0-byte request — are not
// apportioned: they stay in the class of a 0-byte request.
//
// A thread's timed releases of an operation go with its calls, in proportion (their usable sizes
// name the allocator's slot, not the request, and in a trace they have none): each class's
// releases cost the thread's mean release of that operation.  Each class that gets some of them
// also gets the thread's longest timed release as its `max_ticks`: a bound that caps the latency
// histogram's top bin, not that class's own longest call (the report's per-class max takes
// releases from the events, whose sizes say their class: cost_rows.cpp count_display_cells).
#pragma once
#include <vector>

#include "model/class_tables.h"

namespace allocscope {

// Blocks made (successful allocating calls, each realloc one) and releases, process-wide.
struct ReleaseTotals {
  uint64_t blocks_made = 0;
  uint64_t releases = 0;
  // Blocks not given back: made − released (0 when more were released, e.g. blocks made before
  // recording started).
  uint64_t unreleased() const { return blocks_made > releases ? blocks_made - releases : 0; }
};

// Moves the calls of the releasing operations of `per_thread` (one ClassCellMap per thread, from
// split_cells of `cells[ti]` over `table`) as described above, in place; cells whose calls become
// 0 stay (with their timed calls).  Returns the totals the apportioning rests on.
ReleaseTotals attribute_releases(std::vector<ClassCellMap>& per_thread,
                                 const std::vector<const CellMap*>& cells, const ClassTable& table);

// The operation whose blocks a release of `op` gives back weights it: Free ← the C family,
// Delete ← New, DeleteArray ← NewArray.  True when `alloc_op` makes blocks for `release_op`.
bool feeds_release(unsigned alloc_op, unsigned release_op);

}  // namespace allocscope
