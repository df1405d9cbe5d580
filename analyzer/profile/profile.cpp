#include "profile/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "profile/snapshot_assembler.h"

namespace allocscope {

std::optional<uint64_t> Profile::wall_ns() const {
  if (!process) return std::nullopt;
  const uint64_t start = process->info.start_mono_ns;
  std::optional<uint64_t> stop;
  if (end) {
    stop = end->end_mono_ns;
  } else if (latest_snapshot) {
    stop = latest_snapshot->mono_ns;
  }
  if (!stop) return std::nullopt;
  return *stop > start ? *stop - start : 0;
}

uint64_t Profile::events_dropped() const {
  if (end) return end->events_dropped;
  uint64_t dropped = 0;
  for (const auto& thread : threads) dropped += thread.events_dropped;
  return dropped;
}

bool Profile::trace_mode() const {
  return (mode_flags() & format::kModeTrace) != 0 || !trace_chunks.empty();
}

uint64_t Profile::threads_seen() const { return end ? end->threads_seen : threads.size(); }

OpTable Profile::totals_by_op() const {
  OpTable table{};
  for (const auto& thread : threads) add_cells_to(table, thread.cells);
  return table;
}

std::vector<BucketSummary> Profile::totals_by_bucket() const {
  // Slots 0..kSizeBuckets-1 are the size buckets, slot kSizeBuckets is kBucketUnknown.
  std::vector<BucketSummary> all(kSizeBuckets + 1);
  for (unsigned slot = 0; slot < all.size(); ++slot) all[slot].bucket = slot < kSizeBuckets ? slot : kBucketUnknown;
  for (const auto& thread : threads) {
    for (const auto& [key, cell] : thread.cells) {
      BucketSummary& summary = all[key.bucket == kBucketUnknown ? kSizeBuckets : key.bucket];
      summary.total.add(cell.counters);
      summary.by_op[key.op].add(cell.counters);
    }
  }
  std::vector<BucketSummary> non_empty;
  for (const BucketSummary& summary : all) {
    if (summary.total.calls != 0 || summary.total.timed != 0) non_empty.push_back(summary);
  }
  return non_empty;
}

Profile::PeerLookCounts Profile::peer_look_counts() const {
  PeerLookCounts c;
  for (const PeerLook& l : peer_waits) {
    const uint64_t x = l.wait.peer_start_tick;
    const bool slept = format::peer_probed(x) && format::peer_probe_slept(x);
    if (l.wait.syscall == format::kPeerHold) {
      ++c.holds;
      c.holds_released += format::hold_outcome_of(l.wait.arg1).released;
      continue;
    }
    if (l.wait.syscall == format::kPeerNoLook) {
      ++c.alone;
      c.alone_slept += slept;
      continue;
    }
    ++c.looks;
    c.outside += format::peer_call_untimed(x);
    c.probed += format::peer_probed(x);
    c.probed_slept += slept;
  }
  return c;
}

const ThreadProfile* Profile::find_thread(uint32_t serial) const {
  const auto it = std::lower_bound(threads.begin(), threads.end(), serial,
                                   [](const ThreadProfile& t, uint32_t s) { return t.serial < s; });
  return it != threads.end() && it->serial == serial ? &*it : nullptr;
}

namespace {

// Applies chunks, in file order, to a Profile under construction.
class ProfileBuilder {
 public:
  ProfileBuilder(Profile& profile, const LoadOptions& options) : profile_(profile), options_(options) {}

  void add(const Chunk& chunk) {
    offset_ = chunk.offset;
    std::visit([this](const auto& body) { apply(body); }, chunk.body);
  }

  void finish() {
    profile_.threads = snapshots_.finish();
    profile_.incomplete_snapshots = snapshots_.incomplete_snapshots();
    profile_.stale_snapshots = snapshots_.stale_snapshots();
    for (auto& thread : profile_.threads) {
      const auto it = profile_.events_by_thread.find(thread.serial);
      if (it != profile_.events_by_thread.end()) thread.events_read = it->second;
    }
    std::optional<TickPair> start;
    if (profile_.process) start = TickPair{profile_.process->info.start_tick, profile_.process->info.start_mono_ns};
    std::optional<TickPair> latest = profile_.latest_snapshot;
    if (profile_.end) latest = later(latest, TickPair{profile_.end->end_tick, profile_.end->end_mono_ns});
    profile_.clock = TickClock::from_profile(profile_.calibration, start, latest);
  }

 private:
  static TickPair later(std::optional<TickPair> a, TickPair b) {
    return a && a->mono_ns >= b.mono_ns ? *a : b;
  }

  // Process and Calibration describe the whole process: one of each at most.
  template <class T>
  void set_once(std::optional<T>& slot, const T& value, const char* what) {
    if (slot) throw ProfileError(profile_.file, offset_, fmt::format("a second {} chunk", what));
    slot = value;
  }

  void apply(const ProcessRecord& process) { set_once(profile_.process, process, "Process"); }
  void apply(const format::Calibration& calibration) {
    set_once(profile_.calibration, calibration, "Calibration");
  }
  // An exec that fails after its ProcessEnd was written lets the program go on: the last one counts.
  void apply(const format::ProcessEnd& end) { profile_.end = end; }
  void apply(const NoteRecord& note) { profile_.notes.push_back(note.text); }

  void apply(const ThreadStatsRecord& part) {
    const TickPair pair{part.header.snapshot_tick, part.header.snapshot_mono_ns};
    profile_.latest_snapshot = later(profile_.latest_snapshot, pair);
    snapshots_.add(part);
  }

  void apply(const EventsRecord& events) {
    profile_.events_read += events.events.size();
    profile_.events_by_thread[events.header.thread_serial] += events.events.size();
    if (options_.on_events) options_.on_events(events.header, events.events);
  }

  void apply(const TraceEventsRecord& trace) {
    const auto& h = trace.header;
    profile_.trace_chunks[h.thread_serial].push_back(
        TraceChunkRef{offset_, h.first_index, h.count, trace.first_tick, trace.last_tick});
    profile_.trace_records_read += h.count;
    if (options_.on_trace) options_.on_trace(trace);
  }

  void apply(const StacksRecord& stacks) {
    for (const StackEntry& entry : stacks.stacks) profile_.stacks.add(stacks.header.thread_serial, entry);
  }

  // A thread's rows of the program's locks and those of the allocator's own (format.h
  // kLockRowInAllocator) go to separate maps; the program's only where the program's locks were
  // traced or its part holds anything.
  void apply(const LockWaitsRecord& locks) {
    LockWaitsRecord program{locks.header, {}}, allocator{locks.header, {}};
    for (const format::LockWaitRow& row : locks.rows)
      ((row.flags & format::kLockRowInAllocator) ? allocator : program).rows.push_back(row);
    program.header.count = static_cast<uint32_t>(program.rows.size());
    allocator.header.count = static_cast<uint32_t>(allocator.rows.size());
    const auto keep = [](std::map<uint32_t, LockWaitsRecord>& map, const LockWaitsRecord& rec) {
      auto [it, inserted] = map.try_emplace(rec.header.thread_serial, rec);
      if (!inserted && rec.header.seq >= it->second.header.seq) it->second = rec;
    };
    const auto& h = locks.header;
    if (profile_.lock_mode() || !program.rows.empty() || h.dropped_waits || h.unlocks) keep(profile_.lock_waits, program);
    if (!allocator.rows.empty() || h.allocator_dropped) keep(profile_.allocator_lock_waits, allocator);
  }

  void apply(const format::CpuSamples& c) {
    auto [it, inserted] = profile_.cpu_samples.try_emplace(c.thread_serial, c);
    if (!inserted && c.seq >= it->second.seq) it->second = c;
  }

  // Written once, after the program ended; a later one (a file recorded into twice) replaces it.
  void apply(const LockTestRecord& test) { profile_.lock_test = test; }

  void apply(const PeerWaitsRecord& peers) {
    for (const format::PeerWait& w : peers.waits) profile_.peer_waits.push_back({peers.header.thread_serial, w});
  }

  void apply(const ModulesRecord& modules) {
    for (const ModuleEntry& entry : modules.modules) profile_.modules.add(entry);
  }

  Profile& profile_;
  const LoadOptions& options_;
  SnapshotAssembler snapshots_;
  uint64_t offset_ = 0;
};

}  // namespace

Profile load_profile(const std::filesystem::path& path, const LoadOptions& options) {
  ProfileReader reader(path, options.warn);
  Profile profile;
  profile.file = reader.file();
  profile.header = reader.header();
  ProfileBuilder builder(profile, options);
  Chunk chunk;
  while (reader.next(chunk)) builder.add(chunk);
  builder.finish();
  profile.truncated_at = reader.truncated_at();
  profile.skipped_chunks = reader.skipped_chunks();
  return profile;
}

}  // namespace allocscope
