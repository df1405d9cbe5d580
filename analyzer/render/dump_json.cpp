// The JSON document of `allocscope dump --json`:
//
// {"schema": "allocscope-dump/1", "file", "format_version", "created_realtime_ns", "truncated", "truncated_at",
//  "process": {"pid","ppid","exe","args":[],"libc":"glibc|musl|unknown","libc_version",
//              "allocator","secure","tick_hz","clock","start_realtime_ns","wall_ns",
//              "complete","exit_kind","threads_seen","max_live_threads","events_dropped",
//              "write_errors"},
//  "calibration": null | {"clock","sample_every","cpu_sample_every","window_shift","tick_hz",
//              "tick_hz_effective","tick_hz_source","calib_tick0","calib_mono0","calib_tick1",
//              "calib_mono1", and for each probe "<probe>_ticks" and "<probe>_ps" (picoseconds)},
//  "threads": [{"serial","tid","seq","state","first_tick","last_tick","snapshot_tick",
//              "snapshot_mono_ns","wall_ns","rusage":{…null when unavailable},"events_written",
//              "events_dropped","events_read","reentrant_calls",
//              "totals":{op:{"calls","bytes","failed","timed","timed_ns","max_ns"}}}],
//  "totals": {op:{"calls","bytes","failed","timed","timed_ns","max_ns","mean_ns","p50_ns",
//              "p90_ns","p99_ns","p999_ns","latency_bins":[{"bin","lo_ns","hi_ns","count"}]}},
//  "buckets": [{"bucket","size_known","lo","hi","calls","bytes","failed","ops":{op:{"calls","bytes"}}}],
//  "events": {"count","written","dropped","by_thread":[{"serial","count"}]},
//  "snapshots": {"incomplete","stale"}, "skipped_chunks", "notes": [], "lock_test": null | {…},
//  "trace": {"records","chunks","by_thread":[{"serial","records","chunks"}]},
//  "stacks": {"distinct","ids"}, "modules": [{"path","load_bias","start","end"}]}
// The calibration also says "trace", "stacks", "locks", "peer_waits", "peer_looks_outside_windows" and "peer_probes_between_looks" and "holds" (mode_flags), "peer_looks", "peer_looks_outside", "peer_probes_alone", "hold_calls", "hold_calls_released", "fault_reads", "rusage_since_observed", "stack_every", "stack_slow_ticks",
// and where the timing windows fall: "window_phase" (kModeWindowPhase: at an offset per period
// drawn from "window_seed"; false: at the start of each period), and "cxx_operators"
// (kModeCxxOperators: the shim counted the C++ operators as new, new[], delete, delete[]).
//
// Absent values are null.  Only operations with calls > 0 appear in "totals" and "ops" maps.
// "buckets" lists the non-empty size buckets in size order, then (bucket 255, size_known false,
// lo/hi null) the calls whose size was not taken, so that bucket sums equal operation totals.
// "exit_kind" is "exit", "_exit", "exec" or "explicit"; "complete" says whether a ProcessEnd
// was written.
// Byte sums are exact and may exceed 2^64 (failed huge requests count their size).
// Durations are nanoseconds (integers, rounded) except the probe costs (fractional).  Each
// operation's "timed_ns" total is the sum of the threads' "timed_ns", so the document's numbers
// add up exactly despite rounding.
#include <cmath>

#include "render/dump.h"
#include "profile/format_names.h"
#include "render/rusage_json.h"
#include "util/json_writer.h"

namespace allocscope {

namespace {

constexpr struct {
  double q;
  const char* key;
} kQuantiles[] = {{0.50, "p50_ns"}, {0.90, "p90_ns"}, {0.99, "p99_ns"}, {0.999, "p999_ns"}};

// Picoseconds: probe costs are often below a nanosecond, which integer ns would round away.
uint64_t picoseconds(double ns) { return std::isfinite(ns) && ns > 0 ? static_cast<uint64_t>(std::llround(ns * 1000)) : 0; }

void write_process(JsonWriter& w, const Profile& p) {
  const ProcessRecord* proc = p.process ? &*p.process : nullptr;
  w.key("process").begin_object();
  if (proc) {
    w.field("pid", proc->info.pid).field("ppid", proc->info.ppid).field("exe", proc->exe);
    w.key("args").begin_array();
    for (const auto& arg : proc->args) w.value(arg);
    w.end_array();
    w.field("libc", libc_name(proc->info.libc)).field("libc_version", proc->libc_version);
    w.field("allocator", proc->allocator).field("secure", proc->info.secure != 0);
  } else {
    for (const char* key : {"pid", "ppid", "exe", "args", "libc", "libc_version", "allocator", "secure"}) {
      w.key(key).null();
    }
  }
  w.field("tick_hz", static_cast<uint64_t>(std::llround(p.clock.hz())));
  w.key("clock");
  p.calibration ? w.value(clock_name(p.calibration->clock)) : w.null();
  w.key("start_realtime_ns");
  proc ? w.value(proc->info.start_realtime_ns) : w.null();
  w.field("wall_ns", p.wall_ns()).field("complete", p.complete());
  const auto* end = p.end ? &*p.end : nullptr;
  w.key("exit_kind");
  end ? w.value(exit_kind_name(end->exit_kind)) : w.null();
  w.field("threads_seen", p.threads_seen());
  w.key("max_live_threads");
  end ? w.value(end->max_live_threads) : w.null();
  w.field("events_dropped", p.events_dropped());
  w.key("write_errors");
  end ? w.value(end->write_errors) : w.null();
  w.end_object();
}

void write_probe(JsonWriter& w, const Profile& p, const char* name, uint64_t ticks) {
  w.field(std::string(name) + "_ticks", ticks);
  w.field(std::string(name) + "_ps", picoseconds(p.clock.to_ns_exact(static_cast<double>(ticks))));
}

void write_calibration(JsonWriter& w, const Profile& p) {
  w.key("calibration");
  if (!p.calibration) {
    w.null();
    return;
  }
  const auto& c = *p.calibration;
  w.begin_object();
  w.field("clock", clock_name(c.clock)).field("sample_every", c.sample_every);
  w.field("cpu_sample_every", c.cpu_sample_every).field("window_shift", c.window_shift);
  w.field("tick_hz", c.tick_hz).field("tick_hz_effective", p.clock.hz());
  w.field("tick_hz_source", tick_rate_source_name(p.clock.source()));
  w.field("calib_tick0", c.calib_tick0).field("calib_mono0", c.calib_mono0);
  w.field("calib_tick1", c.calib_tick1).field("calib_mono1", c.calib_mono1);
  write_probe(w, p, "clock_read", c.clock_read_ticks);
  write_probe(w, p, "syscall", c.syscall_ticks);
  write_probe(w, p, "futex_wake", c.futex_wake_ticks);
  write_probe(w, p, "futex_wait", c.futex_wait_ticks);
  write_probe(w, p, "rusage", c.rusage_ticks);
  write_probe(w, p, "thread_cputime", c.thread_cputime_ticks);
  write_probe(w, p, "minor_fault", c.minor_fault_ticks);
  w.field("trace", (c.mode_flags & format::kModeTrace) != 0).field("stacks", (c.mode_flags & format::kModeStacks) != 0);
  w.field("stack_every", c.stack_every).field("stack_slow_ticks", c.stack_slow_ticks);
  w.field("window_phase", (c.mode_flags & format::kModeWindowPhase) != 0).field("window_seed", c.window_seed);
  w.field("cxx_operators", (c.mode_flags & format::kModeCxxOperators) != 0);
  w.field("locks", (c.mode_flags & format::kModeLocks) != 0);
  w.field("allocator_locks", (c.mode_flags & format::kModeAllocatorLocks) != 0);
  w.field("allocator_futex_waits", (c.mode_flags & format::kModeAllocatorFutexWaits) != 0);
  w.field("peer_waits", (c.mode_flags & format::kModePeerWaits) != 0);
  const Profile::PeerLookCounts looks = p.peer_look_counts();
  w.field("peer_looks", looks.looks);
  w.field("peer_looks_outside_windows", (c.mode_flags & format::kModePeerLooksOutside) != 0);
  w.field("peer_looks_outside", looks.outside);
  w.field("peer_probes_between_looks", (c.mode_flags & format::kModePeerProbes) != 0);
  w.field("peer_probes_alone", looks.alone);
  w.field("holds", (c.mode_flags & format::kModeHolds) != 0);
  w.field("hold_calls", looks.holds).field("hold_calls_released", looks.holds_released);
  w.field("fault_reads", (c.mode_flags & format::kModeFaults) != 0);
  w.field("rusage_since_observed", (c.mode_flags & format::kModeRusageSinceObserved) != 0);
  w.end_object();
}

void write_counters(JsonWriter& w, const Counters& c, uint64_t timed_ns, const Profile& p) {
  w.field("calls", c.calls).field("bytes", c.bytes).field("failed", c.failed);
  w.field("timed", c.timed).field("timed_ns", timed_ns).field("max_ns", p.ticks_to_ns(c.max_ticks));
}

// Writes one thread; adds its per-operation timed_ns into `timed_ns_by_op`.
void write_thread(JsonWriter& w, const Profile& p, const ThreadProfile& t,
                  std::array<uint64_t, kOpSlots>& timed_ns_by_op) {
  w.begin_object();
  w.field("serial", t.serial).field("tid", t.tid).field("seq", t.seq);
  w.field("state", thread_state_name(t.state));
  w.field("first_tick", t.first_tick).field("last_tick", t.last_tick);
  w.field("snapshot_tick", t.snapshot_tick).field("snapshot_mono_ns", t.snapshot_mono_ns);
  w.field("wall_ns", p.ticks_to_ns(t.active_ticks()));
  write_rusage(w, t.rusage);
  w.field("events_written", t.events_written).field("events_dropped", t.events_dropped);
  w.field("events_read", t.events_read).field("reentrant_calls", t.reentrant_calls);
  w.key("totals").begin_object();
  const OpTable table = t.totals_by_op();
  for (unsigned op = 0; op < kOpSlots; ++op) {
    const Counters& c = table[op].counters;
    if (c.calls == 0) continue;
    const uint64_t timed_ns = p.ticks_to_ns(c.timed_ticks);
    timed_ns_by_op[op] += timed_ns;
    w.key(op_label(op)).begin_object();
    write_counters(w, c, timed_ns, p);
    w.end_object();
  }
  w.end_object();
  w.end_object();
}

void write_latency_bins(JsonWriter& w, const Profile& p, const LatencyHistogram& h) {
  w.key("latency_bins").begin_array();
  for (unsigned bin = 0; bin < kLatencyBins; ++bin) {
    if (h[bin] == 0) continue;
    w.begin_object().field("bin", bin).field("lo_ns", p.ticks_to_ns(bucket_lo(bin)));
    w.key("hi_ns");
    bin + 1 == kLatencyBins ? w.null() : w.value(p.ticks_to_ns(bucket_hi(bin)));
    w.field("count", h[bin]).end_object();
  }
  w.end_array();
}

void write_totals(JsonWriter& w, const Profile& p, const std::array<uint64_t, kOpSlots>& timed_ns_by_op) {
  const OpTable table = p.totals_by_op();
  w.key("totals").begin_object();
  for (unsigned op = 0; op < kOpSlots; ++op) {
    const OpSummary& s = table[op];
    if (s.counters.calls == 0) continue;
    w.key(op_label(op)).begin_object();
    write_counters(w, s.counters, timed_ns_by_op[op], p);
    w.key("mean_ns");
    s.counters.timed ? w.value(timed_ns_by_op[op] / s.counters.timed) : w.null();
    for (const auto& [q, key] : kQuantiles) {
      w.key(key);
      histogram_total(s.latency) ? w.value(p.ticks_to_ns(latency_quantile_ticks(s.latency, q, s.counters.max_ticks)))
                                 : w.null();
    }
    write_latency_bins(w, p, s.latency);
    w.end_object();
  }
  w.end_object();
}

void write_buckets(JsonWriter& w, const Profile& p) {
  w.key("buckets").begin_array();
  for (const BucketSummary& b : p.totals_by_bucket()) {
    w.begin_object();
    const bool sized = b.bucket < kSizeBuckets;
    w.field("bucket", b.bucket).field("size_known", sized);
    w.key("lo");
    sized ? w.value(bucket_lo(b.bucket)) : w.null();
    w.key("hi");
    sized ? w.value(bucket_hi(b.bucket)) : w.null();
    w.field("calls", b.total.calls).field("bytes", b.total.bytes).field("failed", b.total.failed);
    w.key("ops").begin_object();
    for (unsigned op = 0; op < kOpSlots; ++op) {
      if (b.by_op[op].calls == 0) continue;
      w.key(op_label(op)).begin_object();
      w.field("calls", b.by_op[op].calls).field("bytes", b.by_op[op].bytes).end_object();
    }
    w.end_object();
    w.end_object();
  }
  w.end_array();
}

void write_events(JsonWriter& w, const Profile& p) {
  uint64_t written = 0;
  for (const auto& t : p.threads) written += t.events_written;
  w.key("events").begin_object();
  w.field("count", p.events_read).field("written", written).field("dropped", p.events_dropped());
  w.key("by_thread").begin_array();
  for (const auto& [serial, count] : p.events_by_thread) {
    w.begin_object().field("serial", serial).field("count", count).end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace

std::string dump_json(const Profile& p) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-dump/1");
  w.field("file", p.file).field("format_version", p.header.version);
  w.field("created_realtime_ns", p.header.created_realtime_ns);
  w.field("truncated", p.truncated()).field("truncated_at", p.truncated_at);
  write_process(w, p);
  write_calibration(w, p);
  std::array<uint64_t, kOpSlots> timed_ns_by_op{};
  w.key("threads").begin_array();
  for (const auto& thread : p.threads) write_thread(w, p, thread, timed_ns_by_op);
  w.end_array();
  write_totals(w, p, timed_ns_by_op);
  write_buckets(w, p);
  write_events(w, p);
  w.key("snapshots").begin_object();
  w.field("incomplete", p.incomplete_snapshots).field("stale", p.stale_snapshots).end_object();
  w.field("skipped_chunks", p.skipped_chunks);
  w.key("notes").begin_array();
  for (const auto& note : p.notes) w.value(note);
  w.end_array();
  w.key("lock_test");
  if (!p.lock_test) {
    w.null();
  } else {
    const format::LockTest& t = p.lock_test->test;
    w.begin_object().field("status", lock_test_status_name(t.status)).field("detail", p.lock_test->detail);
    w.field("lost", t.lost);
    w.key("counts").begin_object();
    for (int phase = 0; phase < format::kLockTestPhases; ++phase) {
      w.key(lock_test_phase_name(phase)).begin_object();
      for (int where = 0; where < format::kLockTestWheres; ++where) {
        w.key(lock_test_where_name(where)).begin_object();
        for (int o = 0; o < format::kLockTestOutcomes; ++o) w.field(lock_test_outcome_name(o), t.counts[phase][where][o]);
        w.end_object();
      }
      w.end_object();
    }
    w.end_object().end_object();
  }
  w.key("trace").begin_object();
  uint64_t chunks = 0;
  for (const auto& [serial, refs] : p.trace_chunks) chunks += refs.size();
  w.field("records", p.trace_records_read).field("chunks", chunks);
  w.key("by_thread").begin_array();
  for (const auto& [serial, refs] : p.trace_chunks) {
    uint64_t records = 0;
    for (const auto& ref : refs) records += ref.count;
    w.begin_object().field("serial", serial).field("records", records).field("chunks", refs.size()).end_object();
  }
  w.end_array();
  w.end_object();
  w.key("stacks").begin_object();
  w.field("distinct", p.stacks.stacks().size()).field("ids", p.stacks.ids()).end_object();
  w.key("modules").begin_array();
  for (const auto& m : p.modules.modules()) {
    w.begin_object().field("path", m.path).field("load_bias", m.load_bias);
    w.field("start", m.start).field("end", m.end).end_object();
  }
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace allocscope
