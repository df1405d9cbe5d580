#include "profile/snapshot_assembler.h"

#include <algorithm>

namespace allocscope {

namespace {

uint16_t part_index(const format::ThreadStatsHeader& h) { return h.part & ~format::kLastPart; }
bool is_last_part(const format::ThreadStatsHeader& h) { return (h.part & format::kLastPart) != 0; }

void copy_thread_fields(const format::ThreadStatsHeader& h, ThreadProfile& t) {
  t.serial = h.thread_serial;
  t.tid = h.tid;
  t.seq = h.seq;
  t.state = static_cast<format::ThreadState>(h.state);
  t.first_tick = h.first_tick;
  t.snapshot_tick = h.snapshot_tick;
  t.snapshot_mono_ns = h.snapshot_mono_ns;
  t.last_tick = h.last_tick;
  t.rusage = h.rusage;
  t.events_written = h.events_written;
  t.events_dropped = h.events_dropped;
  t.reentrant_calls = h.reentrant_calls;
}

void add_rows(const std::vector<StatsRowRecord>& rows, CellMap& cells) {
  for (const auto& rec : rows) {
    Cell& cell = cells[CellKey{rec.row.op, rec.row.bucket}];
    cell.counters.add(rec.row);
    for (const auto& bin : rec.bins) {
      if (bin.count != 0) cell.latency[bin.bin] += bin.count;
    }
  }
}

}  // namespace

bool SnapshotAssembler::is_stale(const format::ThreadStatsHeader& header) const {
  const auto kept = complete_.find(header.thread_serial);
  return kept != complete_.end() && header.seq <= kept->second.seq;
}

SnapshotAssembler::Pending* SnapshotAssembler::continue_or_start(const format::ThreadStatsHeader& header) {
  const auto found = pending_.find(header.thread_serial);
  const bool continues = found != pending_.end() && found->second.seq == header.seq &&
                         found->second.next_part == part_index(header);
  if (continues) return &found->second;
  if (found != pending_.end()) {  // the snapshot being assembled will never complete
    pending_.erase(found);
    ++incomplete_;
  }
  if (part_index(header) != 0) {  // a snapshot whose first parts are missing
    ++incomplete_;
    return nullptr;
  }
  Pending& fresh = pending_[header.thread_serial];
  fresh.seq = header.seq;
  return &fresh;
}

void SnapshotAssembler::add(const ThreadStatsRecord& part) {
  const auto& header = part.header;
  if (is_stale(header)) {
    ++stale_;
    return;
  }
  Pending* pending = continue_or_start(header);
  if (!pending) return;
  copy_thread_fields(header, pending->thread);
  add_rows(part.rows, pending->thread.cells);
  ++pending->next_part;
  if (is_last_part(header)) {
    complete_[header.thread_serial] = std::move(pending->thread);
    pending_.erase(header.thread_serial);
  }
}

std::vector<ThreadProfile> SnapshotAssembler::finish() {
  incomplete_ += pending_.size();
  pending_.clear();
  std::vector<ThreadProfile> threads;
  threads.reserve(complete_.size());
  for (auto& [serial, thread] : complete_) threads.push_back(std::move(thread));
  complete_.clear();
  return threads;
}

}  // namespace allocscope
