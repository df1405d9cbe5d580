// trace_decode.h — the calls of trace mode (format.h TraceEvents), one thread or all threads.
//
// TraceCursor walks the records of one decoded chunk (chunk_decode.cpp checked them already, so
// it does not fail on a chunk the reader handed out; it stops at the first bad record of any other).
//
// merge_trace() puts every thread's calls on one time line.  Each call is two steps: *enter* at
// its start tick and *exit* at start + duration.  Steps of different threads are visited in tick
// order (at equal ticks: enters before exits, then by thread serial); the steps of one thread
// keep their order.  That is the order in which addresses change hands: a block is released no
// earlier than the start of the call that frees it, and obtained no later than the end of the
// call that returns it, so a free that made room for another thread's malloc of the same address
// is always visited first.  Visitors do the freeing part of a call at its enter and the obtaining
// part at its exit (model/lifetimes.h).
//
// The profile was loaded first (profile.h); merge_trace reads its TraceEvents chunks again from
// the file, holding at most one chunk per thread: memory does not grow with the file.  A thread's
// chunks are taken in first_index order; records a thread lost (a gap in the indices) are
// counted, repeated ones skipped, and a step earlier than its thread's previous one (a clock that
// went back) is moved to that step's tick and counted.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "allocscope/trace_codec.h"
#include "profile/chunk_records.h"
#include "profile/profile.h"

namespace allocscope {

class TraceCursor {
 public:
  explicit TraceCursor(const TraceEventsRecord& chunk);
  // The next record, or false at the end of the chunk.
  bool next(trace::Record& record);
  uint32_t read() const { return read_; }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
  trace::Cursor cursor_;
  uint32_t count_;
  uint32_t read_ = 0;
};

// The timed records of one chunk (duration > 0: those recorded in a timing window, or all of them
// when the trace was recorded with --sample 1) as the timed-call Events of sampled mode, for code
// written for those (the report's cost model): start, duration (clamped to 32 bits, kEvClamped),
// size (saturated; free has none: kBucketUnknown), operation, kEvFailed, stack id.  No rusage
// fields.
std::vector<format::Event> trace_chunk_as_events(const TraceEventsRecord& chunk);
format::EventsHeader trace_chunk_events_header(const TraceEventsRecord& chunk);
// Sets load.on_events to `sink`, and load.on_trace to pass it each trace chunk as the timed-call
// events its records are (a trace holds every call, timed): the cost model's passes read both.
void read_timed_calls(LoadOptions& load, EventSink sink);

struct TraceCall {
  uint32_t thread = 0;      // thread_serial
  uint64_t index = 0;       // position in the thread's sequence of calls
  trace::Record record;
  uint64_t enter_tick = 0;  // the steps' ticks: start and start + duration, after any correction
  uint64_t exit_tick = 0;
  uint64_t duration() const { return exit_tick - enter_tick; }
};

class TraceVisitor {
 public:
  virtual ~TraceVisitor() = default;
  virtual void enter(const TraceCall&) {}
  virtual void exit(const TraceCall&) {}
  virtual void finish() {}  // after the last step
};

struct TraceMergeStats {
  uint64_t calls = 0;
  uint32_t threads = 0;
  uint64_t missing = 0;    // records absent from a thread's sequence (gaps in first_index)
  uint64_t repeated = 0;   // records of a chunk that repeated an earlier chunk's indices
  uint64_t reordered = 0;  // steps moved forward to keep a thread's order
  uint64_t first_tick = 0, last_tick = 0;  // first enter and last exit
};

// Visits every call of `profile`'s trace (none when it holds no trace).  Throws ProfileError.
TraceMergeStats merge_trace(const Profile& profile, std::span<TraceVisitor* const> visitors);

}  // namespace allocscope
