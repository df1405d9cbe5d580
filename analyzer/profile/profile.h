// profile.h — the in-memory model of one profile file, and the questions reports ask of it.
//
// load_profile() reads a file with ProfileReader and keeps what is small: process information,
// calibration, ProcessEnd, notes, and the winning snapshot of each thread (snapshot_assembler.h).
// Events are not kept: they stream through LoadOptions::on_events and are only counted.  Trace
// records (trace mode) are not kept either: they stream through LoadOptions::on_trace, and the
// profile keeps where each TraceEvents chunk is (trace_chunks), so that trace_decode.h can read
// the threads' records again merged in time order.  Stacks and modules are kept (stack_table.h).
//
// Derived views (totals_by_op, totals_by_bucket, ThreadProfile::totals_by_op) are all sums of the
// same per-thread cells, so they agree: bucket totals and per-thread totals add up to the
// per-operation totals.  Durations are ticks of the profile's clock; `clock` converts them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "allocscope/format.h"
#include "profile/chunk_records.h"
#include "profile/profile_reader.h"
#include "profile/stack_table.h"
#include "profile/stats.h"
#include "profile/thread_profile.h"
#include "profile/tick_clock.h"

namespace allocscope {

// Where one TraceEvents chunk is, and what it covers.
struct TraceChunkRef {
  uint64_t offset = 0;       // file offset of the chunk header
  uint64_t first_index = 0;  // TraceHeader::first_index
  uint32_t count = 0;        // records
  uint64_t first_tick = 0;   // start tick of its first record
  uint64_t last_tick = 0;    // start tick of its last record
};

struct Profile {
  std::string file;
  format::FileHeader header{};
  std::optional<uint64_t> truncated_at;  // offset where a file cut short stops

  std::optional<ProcessRecord> process;
  std::optional<format::Calibration> calibration;
  std::optional<format::ProcessEnd> end;  // the last ProcessEnd: the program image ended normally
  std::vector<std::string> notes;

  std::vector<ThreadProfile> threads;             // winning snapshots, ordered by serial
  std::optional<TickPair> latest_snapshot;        // latest (tick, mono_ns) of any ThreadStats chunk
  std::map<uint32_t, uint64_t> events_by_thread;  // events read per thread_serial
  uint64_t events_read = 0;
  uint64_t incomplete_snapshots = 0;  // snapshots ignored because their parts never completed
  uint64_t stale_snapshots = 0;       // snapshots ignored because a later one was already complete
  uint64_t skipped_chunks = 0;        // chunks of types this analyzer does not know

  // Trace mode: every TraceEvents chunk per thread_serial, in file order.
  std::map<uint32_t, std::vector<TraceChunkRef>> trace_chunks;
  uint64_t trace_records_read = 0;
  StackTable stacks;   // Stacks chunks
  // LockWaits chunks (record --locks): per thread_serial the one with the highest seq (the rows
  // are cumulative); the last in file order among equal seqs.
  std::map<uint32_t, LockWaitsRecord> lock_waits;
  // The allocator's own waits on pthread locks (format.h kModeAllocatorLocks, rows with
  // kLockRowInAllocator), kept the same way; their headers' program counts belong to lock_waits.
  std::map<uint32_t, LockWaitsRecord> allocator_lock_waits;
  // CpuSamples chunks (kModeCpuSamples): per thread_serial the one with the highest seq.
  std::map<uint32_t, format::CpuSamples> cpu_samples;
  ModuleMap modules;   // Modules chunks
  // The LockTest chunk `record` appends after the program ended: whether one lock of the
  // allocator stops every thread (model/lock_test.h reads it).
  std::optional<LockTestRecord> lock_test;
  // PeerWaits chunks: every record, with the serial of the thread that looked, in file order.
  struct PeerLook {
    uint32_t observer;
    format::PeerWait wait;
  };
  std::vector<PeerLook> peer_waits;
  // Those records counted: looks (all but the probes alone), of them outside the windows and
  // followed by a probe (and that probe asleep), and the probes alone (kPeerNoLook; and asleep).
  struct PeerLookCounts {
    uint64_t looks = 0, outside = 0, probed = 0, probed_slept = 0;
    uint64_t alone = 0, alone_slept = 0;
    // Holds (format.h kPeerHold), and of them those whose call a held thread inside a call let go.
    uint64_t holds = 0, holds_released = 0;
  };
  PeerLookCounts peer_look_counts() const;

  TickClock clock;  // ticks -> ns for this profile

  bool truncated() const { return truncated_at.has_value(); }
  bool complete() const { return end.has_value(); }
  // The shim ran in trace mode (Calibration::mode_flags), or the file holds trace records.
  bool trace_mode() const;
  // The shim traced the program's lock waits (Calibration::mode_flags kModeLocks).
  bool lock_mode() const { return (mode_flags() & format::kModeLocks) != 0; }
  uint64_t mode_flags() const { return calibration ? calibration->mode_flags : 0; }
  uint64_t ticks_to_ns(uint64_t ticks) const { return clock.to_ns(ticks); }

  // ProcessEnd's end_mono_ns, else the latest snapshot's mono_ns, minus the process start.
  std::optional<uint64_t> wall_ns() const;
  // ProcessEnd's total when present, else the sum over the threads' latest snapshots.
  uint64_t events_dropped() const;
  // ProcessEnd's count when present, else the threads with a snapshot.
  uint64_t threads_seen() const;

  OpTable totals_by_op() const;
  // Non-empty buckets in size order, then kBucketUnknown if any call had no size taken.
  std::vector<BucketSummary> totals_by_bucket() const;
  const ThreadProfile* find_thread(uint32_t serial) const;
};

// Receives each Events chunk's header and events, in file order.
using EventSink = std::function<void(const format::EventsHeader&, std::span<const format::Event>)>;
// Receives each TraceEvents chunk, in file order (decode it with trace_decode.h TraceCursor).
using TraceSink = std::function<void(const TraceEventsRecord&)>;

struct LoadOptions {
  EventSink on_events;                // optional
  TraceSink on_trace;                 // optional
  WarningSink warn = warn_to_stderr;  // a file cut short warns once
};

// Reads and validates a whole profile; throws ProfileError.
Profile load_profile(const std::filesystem::path& path, const LoadOptions& options = {});

}  // namespace allocscope
