// The text rendering of `allocscope dump`: one section per part of the profile, each a table.
#include <fmt/format.h>

#include <map>

#include <cmath>
#include <ctime>

#include "render/dump.h"
#include "model/peer_waits.h"
#include "profile/format_names.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

using Align = TextTable::Align;

// A name/value list: the field names left-aligned, values after them.
class FieldList {
 public:
  FieldList() : table_({{"", Align::Left}, {"", Align::Left}}) {}
  FieldList& add(std::string name, std::string value) {
    table_.add_row({std::move(name), std::move(value)});
    return *this;
  }
  std::string render() const { return table_.render(); }

 private:
  TextTable table_;
};

std::string format_realtime(uint64_t realtime_ns) {
  if (realtime_ns == 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(realtime_ns / 1'000'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  return fmt::format("{}.{:03} UTC", text, realtime_ns % 1'000'000'000 / 1'000'000);
}

// Shell-style quoting, so the command line can be read back unambiguously.
std::string quote_arg(const std::string& arg) {
  const bool plain = !arg.empty() && arg.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") == std::string::npos;
  if (plain) return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string command_line(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& arg : args) line += (line.empty() ? "" : " ") + printable(quote_arg(arg));
  return line;
}

std::string duration(const Profile& p, uint64_t ticks) {
  return format_duration_ns(p.clock.to_ns_exact(static_cast<double>(ticks)));
}

std::string rusage_value(uint64_t value) {
  return value == kRusageUnavailable ? "-" : group_digits(value);
}

std::string rusage_time(uint64_t us) {
  return us == kRusageUnavailable ? "-" : format_duration_ns(static_cast<double>(us) * 1e3);
}

std::string section(std::string_view title, const std::string& body) {
  return fmt::format("\n{}\n{}", title, body.empty() ? "  (none)\n" : body);
}

std::string file_section(const Profile& p) {
  FieldList fields;
  fields.add("file", printable(p.file));
  fields.add("format version", std::to_string(p.header.version));
  fields.add("created", format_realtime(p.header.created_realtime_ns));
  if (p.truncated()) {
    fields.add("truncated", fmt::format("yes, at offset {} (read up to the last whole chunk)", *p.truncated_at));
  } else {
    fields.add("truncated", "no");
  }
  if (p.skipped_chunks) fields.add("skipped chunks", fmt::format("{} of unknown type", p.skipped_chunks));
  return "allocscope profile\n" + fields.render();
}

std::string process_section(const Profile& p) {
  FieldList fields;
  if (p.process) {
    const auto& proc = *p.process;
    fields.add("pid", fmt::format("{} (parent {})", proc.info.pid, proc.info.ppid));
    fields.add("exe", printable(proc.exe));
    fields.add("command", command_line(proc.args));
    fields.add("libc", proc.libc_version.empty() ? libc_name(proc.info.libc)
                                                 : fmt::format("{} {}", libc_name(proc.info.libc), printable(proc.libc_version)));
    fields.add("allocator", proc.allocator.empty() ? "-" : printable(proc.allocator));
    fields.add("secure", proc.info.secure ? "yes (AT_SECURE: nothing recorded)" : "no");
    fields.add("started", format_realtime(proc.info.start_realtime_ns));
  } else {
    fields.add("process", "no Process chunk");
  }
  const auto wall = p.wall_ns();
  fields.add("wall time", wall ? format_duration_ns(static_cast<double>(*wall)) : "-");
  fields.add("complete", p.complete() ? fmt::format("yes (ended by {})", exit_kind_name(p.end->exit_kind))
                                      : "no (no ProcessEnd: abort, a crash, a kill, or still running)");
  fields.add("threads seen", group_digits(p.threads_seen()));
  fields.add("max live threads", p.end ? group_digits(p.end->max_live_threads) : "-");
  fields.add("events dropped", group_digits(p.events_dropped()));
  fields.add("write errors", p.end ? group_digits(p.end->write_errors) : "-");
  return section("Process", fields.render());
}

std::string calibration_section(const Profile& p) {
  if (!p.calibration) return section("Calibration", "");
  const auto& c = *p.calibration;
  FieldList fields;
  fields.add("clock", clock_name(c.clock));
  fields.add("tick rate", fmt::format("{} Hz measured", group_digits(c.tick_hz)));
  fields.add("tick rate used", fmt::format("{} Hz ({})", group_digits(static_cast<uint64_t>(std::llround(p.clock.hz()))),
                                           tick_rate_source_name(p.clock.source())));
  fields.add("measured over", fmt::format("ticks {} -> {}, mono {} -> {} ns", c.calib_tick0, c.calib_tick1,
                                          c.calib_mono0, c.calib_mono1));
  fields.add("sampling", c.sample_every == 0
                             ? std::string("calls counted, none timed")
                             : fmt::format("1 call in {} timed; 1 timed call in {} reads rusage", c.sample_every,
                                           c.cpu_sample_every));
  fields.add("timing window", fmt::format("2^{} ticks", c.window_shift));
  fields.add("window phase", (c.mode_flags & format::kModeWindowPhase)
                                 ? fmt::format("an offset per period, seed {:#018x}", c.window_seed)
                                 : std::string("the start of each period"));
  TextTable probes({{"probe", Align::Left}, {"ticks"}, {"time"}});
  const std::pair<const char*, uint64_t> rows[] = {
      {"clock read", c.clock_read_ticks},       {"syscall (getppid)", c.syscall_ticks},
      {"futex wake", c.futex_wake_ticks},       {"futex wait (EAGAIN)", c.futex_wait_ticks},
      {"getrusage(thread)", c.rusage_ticks},    {"thread cputime", c.thread_cputime_ticks},
      {"minor fault", c.minor_fault_ticks}};
  for (const auto& [name, ticks] : rows) probes.add_row({name, group_digits(ticks), duration(p, ticks)});
  return section("Calibration", fields.render() + "\n" + probes.render());
}

std::string threads_section(const Profile& p) {
  TextTable table({{"serial"}, {"tid"}, {"state", Align::Left}, {"seq"}, {"active"}, {"calls"}, {"bytes"},
                   {"events"}, {"dropped"}, {"reentrant"}, {"user"}, {"sys"}, {"minflt"}, {"majflt"},
                   {"vcsw"}, {"ivcsw"}});
  for (const auto& t : p.threads) {
    const Counters total = t.total();
    table.add_row({std::to_string(t.serial), std::to_string(t.tid), thread_state_name(t.state),
                   std::to_string(t.seq), duration(p, t.active_ticks()), group_digits(total.calls),
                   format_bytes(total.bytes), group_digits(t.events_read), group_digits(t.events_dropped),
                   group_digits(t.reentrant_calls), rusage_time(t.rusage.utime_us), rusage_time(t.rusage.stime_us),
                   rusage_value(t.rusage.minflt), rusage_value(t.rusage.majflt), rusage_value(t.rusage.nvcsw),
                   rusage_value(t.rusage.nivcsw)});
  }
  std::string body = table.empty() ? "" : table.render();
  if (p.incomplete_snapshots || p.stale_snapshots) {
    body += fmt::format("  ({} incomplete and {} stale snapshots ignored)\n", p.incomplete_snapshots,
                        p.stale_snapshots);
  }
  return section("Threads", body);
}

std::string totals_section(const Profile& p, const OpTable& totals) {
  TextTable table({{"operation", Align::Left}, {"calls"}, {"bytes"}, {"failed"}, {"timed"}, {"time"}});
  Counters all;
  for (unsigned op = 0; op < kOpSlots; ++op) {
    const Counters& c = totals[op].counters;
    if (c.calls == 0) continue;
    all.add(c);
    table.add_row({op_label(op), group_digits(c.calls), format_bytes(c.bytes), group_digits(c.failed),
                   group_digits(c.timed), duration(p, c.timed_ticks)});
  }
  if (!table.empty()) {
    table.add_row({"all", group_digits(all.calls), format_bytes(all.bytes), group_digits(all.failed),
                   group_digits(all.timed), duration(p, all.timed_ticks)});
  }
  return section("Totals by operation", table.empty() ? "" : table.render());
}

std::string latency_section(const Profile& p, const OpTable& totals) {
  TextTable table({{"operation", Align::Left}, {"timed"}, {"mean"}, {"p50"}, {"p90"}, {"p99"}, {"p99.9"},
                   {"max"}});
  for (unsigned op = 0; op < kOpSlots; ++op) {
    const OpSummary& s = totals[op];
    if (s.counters.timed == 0) continue;
    const double mean = static_cast<double>(s.counters.timed_ticks) / static_cast<double>(s.counters.timed);
    auto quantile = [&](double q) {
      if (histogram_total(s.latency) == 0) return std::string("-");
      return "≤ " + duration(p, latency_quantile_ticks(s.latency, q, s.counters.max_ticks));
    };
    table.add_row({op_label(op), group_digits(s.counters.timed), format_duration_ns(p.clock.to_ns_exact(mean)),
                   quantile(0.5), quantile(0.9), quantile(0.99), quantile(0.999),
                   duration(p, s.counters.max_ticks)});
  }
  return section("Latency by operation (quantiles are upper bounds of latency bins)",
                 table.empty() ? "" : table.render());
}

std::string buckets_section(const Profile& p) {
  TextTable table({{"size", Align::Left}, {"operation", Align::Left}, {"calls"}, {"bytes"}});
  for (const BucketSummary& b : p.totals_by_bucket()) {
    unsigned ops_present = 0;
    for (const Counters& c : b.by_op) ops_present += c.calls > 0;
    std::string label = format_size_bucket(b.bucket);
    if (ops_present > 1) {
      table.add_row({label, "all", group_digits(b.total.calls), format_bytes(b.total.bytes)});
      label.clear();
    }
    for (unsigned op = 0; op < kOpSlots; ++op) {
      if (b.by_op[op].calls == 0) continue;
      table.add_row({label, op_label(op), group_digits(b.by_op[op].calls), format_bytes(b.by_op[op].bytes)});
      label.clear();
    }
  }
  return section("Size buckets", table.empty() ? "" : table.render());
}

std::string events_section(const Profile& p) {
  FieldList fields;
  fields.add("events read", group_digits(p.events_read));
  fields.add("events dropped", group_digits(p.events_dropped()));
  for (const auto& [serial, count] : p.events_by_thread) {
    fields.add(fmt::format("  thread {}", serial), group_digits(count));
  }
  return section("Events", fields.render());
}

// Trace mode and call stacks: only when the profile has them.
std::string trace_section(const Profile& p) {
  if (p.trace_chunks.empty() && p.stacks.empty() && p.modules.empty() && p.lock_waits.empty() &&
      p.allocator_lock_waits.empty() && p.peer_waits.empty())
    return "";
  FieldList fields;
  uint64_t chunks = 0;
  for (const auto& [serial, refs] : p.trace_chunks) chunks += refs.size();
  fields.add("trace records", fmt::format("{} in {} chunks", group_digits(p.trace_records_read), group_digits(chunks)));
  for (const auto& [serial, refs] : p.trace_chunks) {
    uint64_t records = 0;
    for (const auto& ref : refs) records += ref.count;
    fields.add(fmt::format("  thread {}", serial), group_digits(records));
  }
  fields.add("stacks", fmt::format("{} distinct ({} ids)", group_digits(p.stacks.stacks().size()),
                                   group_digits(p.stacks.ids())));
  const auto add_lock_waits = [&](const char* name, const std::map<uint32_t, LockWaitsRecord>& records) {
    if (records.empty()) return;
    uint64_t rows = 0, waits = 0;
    for (const auto& [serial, rec] : records) {
      rows += rec.rows.size();
      for (const auto& row : rec.rows) waits += row.waits;
    }
    fields.add(name, fmt::format("{} in {} (lock, call site) rows of {} threads", group_digits(waits),
                                 group_digits(rows), records.size()));
  };
  add_lock_waits("lock waits", p.lock_waits);
  add_lock_waits("allocator lock waits", p.allocator_lock_waits);
  if (!p.peer_waits.empty()) {
    std::map<int32_t, uint64_t> by_state;
    for (const Profile::PeerLook& l : p.peer_waits)
      if (l.wait.syscall != format::kPeerNoLook && l.wait.syscall != format::kPeerHold) ++by_state[l.wait.syscall];
    const Profile::PeerLookCounts looks = p.peer_look_counts();
    std::string states;
    for (const auto& [state, n] : by_state) {
      const std::string name = state == format::kPeerNotSeen      ? "nobody seen"
                               : state == format::kPeerRunning      ? "running"
                               : state == format::kPeerInUserSpace ? "preempted"
                               : is_futex(state)                   ? "futex"
                                                                   : fmt::format("syscall {}", state);
      states += fmt::format("{}{} {}", states.empty() ? "" : ", ", name, group_digits(n));
    }
    fields.add("peer looks", fmt::format("{} ({}); {} outside the windows, {} followed by a timed call of the "
                                         "observer's own ({} asleep)",
                                         group_digits(looks.looks), states, group_digits(looks.outside),
                                         group_digits(looks.probed), group_digits(looks.probed_slept)));
    if (looks.alone > 0)
      fields.add("probes", fmt::format("{} timed calls without a look, between the looks ({} asleep)",
                                       group_digits(looks.alone), group_digits(looks.alone_slept)));
    if (looks.holds > 0)
      fields.add("holds", fmt::format("{} calls made while threads inside calls were held, {} of them let go by a "
                                      "held thread's release",
                                      group_digits(looks.holds), group_digits(looks.holds_released)));
  }
  fields.add("modules", group_digits(p.modules.modules().size()));
  for (const auto& m : p.modules.modules()) {
    fields.add("", fmt::format("{:#x}-{:#x}  {}", m.start, m.end, m.path.empty() ? "(unnamed)" : printable(m.path)));
  }
  return section("Trace and stacks", fields.render());
}

// The lock test `record` appended (format.h LockTest), as written: every count.
std::string lock_test_section(const Profile& p) {
  if (!p.lock_test) return section("Lock test", "  none (not recorded by `allocscope record`, or --no-lock-test)\n");
  const format::LockTest& t = p.lock_test->test;
  std::string body = fmt::format("  {}: {}\n", lock_test_status_name(t.status), printable(p.lock_test->detail));
  if (t.status != static_cast<uint8_t>(format::LockTestStatus::Ran)) return section("Lock test", body);
  body += fmt::format("  {:<6} {:<15} {:>8} {:>8} {:>13} {:>9} {:>6}\n", "phase", "held", "passed", "stopped",
                      "stopped_later", "preempted", "other");
  for (int phase = 0; phase < format::kLockTestPhases; ++phase) {
    for (int where = 0; where < format::kLockTestWheres; ++where) {
      const uint32_t* c = t.counts[phase][where];
      body += fmt::format("  {:<6} {:<15} {:>8} {:>8} {:>13} {:>9} {:>6}\n", lock_test_phase_name(phase),
                          lock_test_where_name(where),
                          c[format::kWatchedPassed], c[format::kWatchedStopped], c[format::kWatchedStoppedLater],
                          c[format::kWatchedPreempted], c[format::kWatchedOther]);
    }
  }
  body += fmt::format("  holds that never ended: {}\n", t.lost);
  return section("Lock test", body);
}

std::string notes_section(const Profile& p) {
  std::string body;
  for (const auto& note : p.notes) body += fmt::format("  {}\n", printable(note));
  return section("Notes", body);
}

}  // namespace

std::string dump_text(const Profile& p) {
  const OpTable totals = p.totals_by_op();
  return file_section(p) + process_section(p) + calibration_section(p) + threads_section(p) +
         totals_section(p, totals) + latency_section(p, totals) + buckets_section(p) + events_section(p) +
         trace_section(p) + lock_test_section(p) + notes_section(p);
}

}  // namespace allocscope
