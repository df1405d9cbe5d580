// snapshot_assembler.h — folds the stream of ThreadStats chunks into one snapshot per thread.
//
// The rules of format.h: a thread's snapshots are cumulative, so only one per thread_serial is
// kept — the complete one with the highest seq.  A snapshot is complete when its parts 0, 1, …
// have arrived in order and the last of them carries kLastPart; the rows of its parts are summed,
// thread-level fields come from its last part.  A part that does not continue the snapshot being
// assembled abandons it; a snapshot still incomplete at the end is ignored (the previous complete
// one stays); a snapshot whose seq is not above the kept one is stale and ignored.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "profile/chunk_records.h"
#include "profile/thread_profile.h"

namespace allocscope {

class SnapshotAssembler {
 public:
  void add(const ThreadStatsRecord& part);

  // The kept snapshot of every thread, ordered by serial.  Counts what was left incomplete.
  std::vector<ThreadProfile> finish();

  uint64_t incomplete_snapshots() const { return incomplete_; }  // abandoned or unfinished
  uint64_t stale_snapshots() const { return stale_; }

 private:
  struct Pending {
    uint32_t seq = 0;
    uint16_t next_part = 0;
    ThreadProfile thread;
  };

  bool is_stale(const format::ThreadStatsHeader& header) const;
  Pending* continue_or_start(const format::ThreadStatsHeader& header);

  std::map<uint32_t, ThreadProfile> complete_;  // by serial
  std::map<uint32_t, Pending> pending_;         // by serial
  uint64_t incomplete_ = 0;
  uint64_t stale_ = 0;
};

}  // namespace allocscope
