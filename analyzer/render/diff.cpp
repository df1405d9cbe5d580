// diff.cpp — see diff.h.
#include "render/diff.h"

#include <fmt/format.h>

#include <cmath>

#include "render/cpu_parts.h"
#include "render/report.h"
#include "render/shapes.h"
#include "util/json_writer.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

// A part of the allocator's change as the verdict names it.
const char* part_words(DiffPartKind kind) {
  switch (kind) {
    case DiffPartKind::Waiting: return "waiting (blocked)";
    case DiffPartKind::Slow: return "slow but running";
    case DiffPartKind::Fast: return "fast path";
    case DiffPartKind::Faults: return "page faults outside calls";
  }
  return "";
}

// With both runs recorded with --locks and a gap to share: what the program's own locks take of it.
// The name of a part of the allocator's change: "waiting", "slow", "fast", "faults".
const char* diff_part_name(DiffPartKind kind) {
  switch (kind) {
    case DiffPartKind::Waiting: return "waiting";
    case DiffPartKind::Slow: return "slow";
    case DiffPartKind::Fast: return "fast";
    case DiffPartKind::Faults: return "faults";
  }
  return "";
}

// The verdict's name in the JSON diff: the largest part's, "unsure" or "none".
const char* diff_verdict_name(const DiffReport& d) {
  switch (d.verdict) {
    case DiffVerdict::NoGap: return "none";
    case DiffVerdict::OffCpu:
    case DiffVerdict::Unsure:
    case DiffVerdict::Exceeds: return "unsure";
    case DiffVerdict::Part: return largest_part_clear(d) ? diff_part_name(largest_part(d).kind) : "unsure";
  }
  return "none";
}

// Why the diff compares per call, or why it has no coverage; "" when the runs did the same work.
std::string work_reason(const WorkComparison& w) {
  if (w.calls_base == 0 || w.calls_other == 0) {
    return fmt::format("{} made no allocator calls: there is nothing to compare per call, and no coverage",
                       w.calls_base == 0 ? "BASE" : "OTHER");
  }
  if (!w.per_call) return "";
  return fmt::format("The two runs did different work: BASE made {} allocator calls, OTHER {} (x{:.3f}), so "
                     "their times do not compare as they are (a benchmark that runs for a fixed time makes as "
                     "many calls as it can). Compared per call: BASE's times are scaled to OTHER's calls "
                     "(BASE's cost per call x OTHER's calls); this assumes the program's work outside the "
                     "allocator grows with its calls.",
                     group_digits(w.calls_base), group_digits(w.calls_other), w.ratio);
}

// Why there is no attribution to shapes; "" when there is one.
std::string shape_note(const DiffReport& d) {
  const char* which = nullptr;
  switch (d.missing_trace) {
    case MissingTrace::None: return "";
    case MissingTrace::Both: which = "neither profile is"; break;
    case MissingTrace::Base: which = "BASE is not"; break;
    case MissingTrace::Other: which = "OTHER is not"; break;
  }
  return fmt::format("Shape attribution needs two profiles recorded with `allocscope record --trace`; "
                     "{} a trace.", which);
}

// With both runs' CPU time sampled and a CPU-time gap: what lock and allocator calls take of it.
std::string cpu_sentence(const DiffReport& d) {
  if (d.cpu_too_few_samples)
    return fmt::format(" The CPU time changed by {}, but the samples are too few to split it (the parts' bound is ± {}): "
                       "record longer runs, or on a machine less busy.",
                       format_signed_duration_ns(d.cpu_sampled_delta_ns),
                       format_duration_ns(std::hypot(d.cpu_allocator_error_ns, d.cpu_locks_error_ns)));
  if (!d.cpu_explained) return "";
  return fmt::format(" Of the CPU time, which changed by {}, the program's lock calls took {} ± {} and allocator "
                     "calls {} ± {}: together {} (± {} points) of the CPU-time gap.",
                     format_signed_duration_ns(d.cpu_sampled_delta_ns), format_signed_duration_ns(d.cpu_locks_delta_ns),
                     format_duration_ns(d.cpu_locks_error_ns), format_signed_duration_ns(d.cpu_allocator_delta_ns),
                     format_duration_ns(d.cpu_allocator_error_ns), format_percent(*d.cpu_explained),
                     fmt::format("{:.0f}", 100 * d.cpu_explained_error));
}

// The program's own locks' part of the thread-time gap, where there is one, then the CPU time's
// parts, where both runs sampled it (whether or not the thread-time gap has a share).
std::string lock_sentence(const DiffReport& d) {
  if (!d.locks || !d.locks_share) return cpu_sentence(d);
  const RunSide& worse = d.locks_delta_ns >= 0 ? d.other : d.base;
  std::string text = fmt::format(" The program's own locks (outside the allocator) account for {} ({})",
                                 format_percent(*d.locks_share), format_signed_duration_ns(d.locks_delta_ns));
  if (!worse.top_lock.empty())
    text += fmt::format(", most of all {} on {} ({} of waiting)", worse.top_lock, &worse == &d.other ? "OTHER" : "BASE",
                        format_duration_ns(worse.top_lock_wait_ns));
  return text + fmt::format("; allocator and locks together explain {}.", d.explained ? format_percent(*d.explained) : "-") +
         cpu_sentence(d);
}

// The program's own threads outnumber the CPUs (diff.h threads_queue): preemption is their queue
// for the CPUs, not another program, and what lengthens it is CPU time, whoever's.
std::string cpu_queue_clause(const DiffReport& d) {
  return fmt::format("{} calling threads on {} CPUs queue for the CPUs, and a second of CPU time more keeps the "
                     "waiting threads off the CPU too: the threads' CPU time changed by {} ({} of it system time)",
                     d.busy_threads, d.cpus, format_signed_duration_ns(d.cpu_delta_ns),
                     format_signed_duration_ns(d.system_delta_ns));
}

}  // namespace

std::string diff_verdict_text(const DiffReport& d) {
  if (d.work.calls_base == 0 || d.work.calls_other == 0) return work_reason(d.work);
  const std::string work = d.work.per_call ? work_reason(d.work) + " " : "";
  const double k = d.work.per_call ? d.work.ratio : 1.0;
  if (same_thread_time(d)) {
    return work + fmt::format("The two runs take the same thread time{} within 2 % ({}): there is no gap "
                              "to attribute; the allocator's own difference is {}.",
                              d.work.per_call ? " per call" : "", format_signed_duration_ns(d.measured_delta_ns),
                              format_signed_duration_ns(d.attributed_delta_ns)) +
           lock_sentence(d);
  }
  const bool slower = d.measured_delta_ns > 0;
  std::string text = work + fmt::format("{}OTHER is {} by {} of thread time", d.work.per_call ? "Per call, " : "",
                                        slower ? "slower" : "faster", format_duration_ns(std::fabs(d.measured_delta_ns)));
  if (d.work.per_call) text += " at OTHER's calls";
  if (d.wall_measured_delta_ns)
    text += fmt::format(" ({} wall)", format_signed_duration_ns(*d.wall_measured_delta_ns));
  // Time off the CPU outside calls that changed by more than half the gap: the machine's doing
  // (preemption by other work) as much as the allocator's; no coverage is claimed on it.
  if (d.verdict == DiffVerdict::OffCpu) {
    // Blocked (voluntary switches) or preempted (involuntary ones): whichever changed more.
    const double dv = static_cast<double>(d.other.voluntary_switches) - k * static_cast<double>(d.base.voluntary_switches);
    const double di = static_cast<double>(d.other.involuntary_switches) - k * static_cast<double>(d.base.involuntary_switches);
    const bool blocked = std::fabs(dv) > std::fabs(di);
    text += fmt::format(". Most of this difference ({}) is time the threads spent off the CPU outside the timed "
                        "allocator calls, ", format_signed_duration_ns(d.unattributed_off_cpu_ns));
    if (blocked) {
      text += fmt::format("blocked (their voluntary context switches went from {} to {}): asleep inside allocator calls "
                          "that the timing windows did not see, or outside the allocator; time every call "
                          "(--sample 1) to tell them apart",
                          group_digits(d.base.voluntary_switches), group_digits(d.other.voluntary_switches));
    } else if (d.threads_queue) {
      text += fmt::format("preempted (their involuntary context switches went from {} to {}): the program's {}; "
                          "compare that and the wall time rather than thread time",
                          group_digits(d.base.involuntary_switches), group_digits(d.other.involuntary_switches),
                          cpu_queue_clause(d));
    } else {
      text += fmt::format("preempted (their involuntary context switches went from {} to {}) while the program had "
                          "no more threads than CPUs: the machine was busy, and the gap says little about the "
                          "allocator; rerun when it is quieter",
                          group_digits(d.base.involuntary_switches), group_digits(d.other.involuntary_switches));
    }
    return text + fmt::format(". Inside allocator calls: {} ± {}.", format_signed_duration_ns(d.calls_delta_ns),
                              format_duration_ns(d.calls_error_ns)) + lock_sentence(d);
  }
  if (!d.coverage) return text + "." + lock_sentence(d);
  if (d.attributed_unsure) {
    return text + fmt::format(". The allocator's part is unsure ({} ± {}: a bound over half of it); no share of the "
                              "gap is claimed. Record longer, or time more calls with a smaller --sample.",
                              format_signed_duration_ns(d.attributed_delta_ns), format_duration_ns(d.calls_error_ns)) +
           lock_sentence(d);
  }
  if (d.verdict == DiffVerdict::Exceeds) {
    return text + fmt::format(". The allocator's change ({} ± {}) exceeds the whole gap by more than its bound: the "
                              "runs differ outside the allocator too — the program's own code got {}, or other work "
                              "slowed one run (off the CPU outside calls: BASE {}, OTHER {}). No share of the gap is "
                              "claimed; rerun both on a quieter machine.",
                              format_signed_duration_ns(d.attributed_delta_ns), format_duration_ns(d.attributed_error_ns),
                              slower ? "faster" : "slower", format_duration_ns(d.base.outside_off_cpu_ns),
                              format_duration_ns(d.other.outside_off_cpu_ns)) +
           lock_sentence(d);
  }
  const double c = *d.coverage;
  text += fmt::format("; the allocator accounts for {} of it ({}", format_percent(c), format_signed_duration_ns(d.attributed_delta_ns));
  const DiffPart top = largest_part(d);
  if (largest_part_clear(d)) {
    text += fmt::format(", mostly {} {})", part_words(top.kind), format_signed_duration_ns(top.ns));
  } else {
    text += fmt::format(", the largest part {} {}, but not by more than the bound of ± {}: which part leads "
                        "cannot be told from these runs)",
                        part_words(top.kind), format_signed_duration_ns(top.ns),
                        format_duration_ns(d.attributed_error_ns));
  }
  const DiffRow* row = nullptr;
  for (const auto& r : d.rows)
    if (!row || (slower ? r.delta_ns > row->delta_ns : r.delta_ns < row->delta_ns)) row = &r;
  if (row && d.attributed_delta_ns != 0 && (row->delta_ns > 0) == (d.attributed_delta_ns > 0)) {
    text += fmt::format("; {} requests carry {} of it", row->label,
                        format_percent(row->delta_ns / d.attributed_delta_ns));
  }
  text += ".";
  if (c < 0.85) {
    text += fmt::format(" The remaining {} of the gap lies outside allocator calls and is not attributed: allocscope "
                        "cannot see what a different heap layout costs the program's own code (cache and TLB misses), "
                        "so part of it may still be the allocator's doing.", format_percent(std::max(0.0, 1 - c)));
    if (d.unattributed_ns != 0 && std::fabs(d.unattributed_off_cpu_ns) > 0.5 * std::fabs(d.unattributed_ns) &&
        (d.unattributed_off_cpu_ns > 0) == (d.unattributed_ns > 0)) {
      if (d.threads_queue)
        text += fmt::format(" Most of it ({}) is time the threads spent off the CPU outside calls, blocked or queued "
                            "for the CPUs: the program's {}.",
                            format_signed_duration_ns(d.unattributed_off_cpu_ns), cpu_queue_clause(d));
      else
        text += fmt::format(" Most of it ({}) is time the threads spent off the CPU outside calls, preempted by other "
                            "work or blocked: on a busy machine, rerun when it is quieter.",
                            format_signed_duration_ns(d.unattributed_off_cpu_ns));
    }
  } else if (c > 1.2) {
    text += " The allocator's change exceeds the measured gap: something else got faster.";
  }
  return text + lock_sentence(d);
}

std::vector<std::string> workload_warnings(const DiffReport& d) {
  std::vector<std::string> warnings;
  // The arguments after argv[0] (which names the program, compared apart).
  auto operands = [](const std::vector<std::string>& args) {
    return args.empty() ? args : std::vector<std::string>(args.begin() + 1, args.end());
  };
  auto quoted = [](const std::vector<std::string>& args) {
    std::string text;
    for (const auto& a : args) text += (text.empty() ? "" : " ") + a;
    return "'" + text + "'";
  };
  if (d.base.program != d.other.program && d.base.libc == d.other.libc) {
    warnings.push_back(fmt::format("BASE and OTHER are different programs ({} and {}) on the same libc: the "
                                   "difference may be the workload's, not the allocator's",
                                   d.base.program, d.other.program));
  }
  if (operands(d.base.args) != operands(d.other.args)) {
    warnings.push_back(fmt::format("BASE and OTHER ran with different arguments ({} and {}): the difference "
                                   "may be the workload's, not the allocator's",
                                   quoted(operands(d.base.args)), quoted(operands(d.other.args))));
  }
  return warnings;
}

// The totals of a diff, one row per figure (the first row the heading): the text and the HTML
// page print the same rows.
std::vector<std::vector<std::string>> diff_totals(const DiffReport& d) {
  const std::string delta_head =
      d.work.per_call ? fmt::format("OTHER - BASE x {:.3f}", d.work.ratio) : std::string("OTHER - BASE");
  std::vector<std::vector<std::string>> totals{{"", "BASE", "OTHER", delta_head}};
  auto opt_dur = [](const std::optional<double>& v) { return v ? format_duration_ns(*v) : "-"; };
  totals.push_back({"allocator calls", group_digits(d.work.calls_base), group_digits(d.work.calls_other),
                     d.work.per_call ? "different work: per call" : ""});
  totals.push_back({"wall time", opt_dur(d.base.wall_ns), opt_dur(d.other.wall_ns),
                     d.wall_measured_delta_ns ? format_signed_duration_ns(*d.wall_measured_delta_ns) : "-"});
  totals.push_back({"thread time (allocating threads)", format_duration_ns(d.base.thread_time_ns),
                     format_duration_ns(d.other.thread_time_ns), format_signed_duration_ns(d.measured_delta_ns)});
  totals.push_back({"inside allocator calls", format_duration_ns(d.base.allocator_time_ns),
                     format_duration_ns(d.other.allocator_time_ns),
                     fmt::format("{} ± {}", format_signed_duration_ns(d.calls_delta_ns), format_duration_ns(d.calls_error_ns))});
  totals.push_back({"  fast path", format_duration_ns(d.base.split.fast_ns), format_duration_ns(d.other.split.fast_ns),
                     format_signed_duration_ns(d.split_delta.fast_ns)});
  totals.push_back({"  slow but running", format_duration_ns(d.base.split.slow_ns),
                     format_duration_ns(d.other.split.slow_ns), format_signed_duration_ns(d.split_delta.slow_ns)});
  totals.push_back({"  waiting (blocked)", format_duration_ns(d.base.split.wait_ns),
                     format_duration_ns(d.other.split.wait_ns), format_signed_duration_ns(d.split_delta.wait_ns)});
  totals.push_back({"minor faults (all threads)", group_digits(d.base.minor_faults), group_digits(d.other.minor_faults), ""});
  totals.push_back({"  outside calls (charged)", group_digits(static_cast<uint64_t>(std::llround(d.base.faults_outside))),
                     group_digits(static_cast<uint64_t>(std::llround(d.other.faults_outside))), ""});
  totals.push_back({"page faults outside calls", format_duration_ns(d.base.outside_fault_ns),
                     format_duration_ns(d.other.outside_fault_ns),
                     fmt::format("{} ± {}{}", format_signed_duration_ns(d.faults_delta_ns), format_duration_ns(d.faults_error_ns),
                                 d.faults_delta_held ? " (held at 0)" : "")});
  totals.push_back({"attributed to the allocator", "", "", format_signed_duration_ns(d.attributed_delta_ns)});
  totals.push_back({"outside allocator calls: not attributed", "", "", format_signed_duration_ns(d.unattributed_ns)});
  totals.push_back({"  on the CPU (the program's own code)", "", "", format_signed_duration_ns(d.unattributed_on_cpu_ns)});
  totals.push_back({"  off the CPU (preempted or blocked)", format_duration_ns(d.base.outside_off_cpu_ns),
                     format_duration_ns(d.other.outside_off_cpu_ns), format_signed_duration_ns(d.unattributed_off_cpu_ns)});
  // The figures, marked where the verdict claims no share of the gap.
  const std::string claimed = d.claims_share() ? "" : " (no share claimed)";
  totals.push_back({"coverage (thread time)", "", "", d.coverage ? format_percent(*d.coverage) + claimed : "-"});
  totals.push_back({"coverage (wall time)", "", "", d.wall_coverage ? format_percent(*d.wall_coverage) + claimed : "-"});
  if (d.locks) {  // both runs recorded with --locks: the program's own locks, then the rest
    const double k = d.work.per_call ? d.work.ratio : 1.0;
    const double base_unlock_ns = d.base.lock_time_ns - d.base.lock_wait_ns;
    const double other_unlock_ns = d.other.lock_time_ns - d.other.lock_wait_ns;
    totals.push_back({"other locks (waits + unlocks)", format_duration_ns(d.base.lock_time_ns),
                      format_duration_ns(d.other.lock_time_ns), format_signed_duration_ns(d.locks_delta_ns)});
    totals.push_back({"  contended waits", format_duration_ns(d.base.lock_wait_ns), format_duration_ns(d.other.lock_wait_ns),
                      format_signed_duration_ns(d.other.lock_wait_ns - k * d.base.lock_wait_ns)});
    totals.push_back({"  unlocks (sampled, est.)", format_duration_ns(base_unlock_ns), format_duration_ns(other_unlock_ns),
                      format_signed_duration_ns(other_unlock_ns - k * base_unlock_ns)});
    totals.push_back({"condition waits (idle)", format_duration_ns(d.base.cond_wait_ns),
                      format_duration_ns(d.other.cond_wait_ns), format_signed_duration_ns(d.cond_delta_ns)});
    totals.push_back({"rest (none of the above)", "", "", format_signed_duration_ns(d.rest_delta_ns)});
    totals.push_back({"allocator + other locks", "", "", d.explained ? format_percent(*d.explained) : "-"});
  }
  if (d.cpu_parts) {  // both runs sampled their CPU time: the CPU-time gap and its parts
    const double k = d.work.per_call ? d.work.ratio : 1.0;
    totals.push_back({"CPU time (sampled threads)", format_duration_ns(d.base.cpu.cpu_ns), format_duration_ns(d.other.cpu.cpu_ns),
                      format_signed_duration_ns(d.cpu_sampled_delta_ns)});
    totals.push_back({"  inside allocator calls", format_duration_ns(d.base.cpu.allocator.ns),
                      format_duration_ns(d.other.cpu.allocator.ns),
                      fmt::format("{} ± {}", format_signed_duration_ns(d.cpu_allocator_delta_ns), format_duration_ns(d.cpu_allocator_error_ns))});
    totals.push_back({"  inside lock calls", format_duration_ns(d.base.cpu.locks.ns), format_duration_ns(d.other.cpu.locks.ns),
                      fmt::format("{} ± {}", format_signed_duration_ns(d.cpu_locks_delta_ns), format_duration_ns(d.cpu_locks_error_ns))});
    totals.push_back({"  elsewhere", format_duration_ns(d.base.cpu.elsewhere.ns), format_duration_ns(d.other.cpu.elsewhere.ns),
                      format_signed_duration_ns(d.other.cpu.elsewhere.ns - k * d.base.cpu.elsewhere.ns)});
    totals.push_back({"allocator + other locks (CPU time)", "", "",
                      d.cpu_explained ? fmt::format("{} ± {}", format_percent(*d.cpu_explained), format_percent(d.cpu_explained_error)) : "-"});
  }
  totals.push_back({"contention", contention_kind_name(d.base.contention.kind), contention_kind_name(d.other.contention.kind), ""});
  totals.push_back({"waiting share of allocator time", format_percent(d.base.wait_share), format_percent(d.other.wait_share), ""});
  return totals;
}

std::string diff_text(const DiffReport& d) {
  std::string out;
  auto side_line = [](const char* name, const RunSide& s) {
    return fmt::format("  {:<6} {}  ({} {}, allocator {})\n", name, s.file, s.libc,
                       s.program.substr(s.program.rfind('/') + 1), s.allocator);
  };
  out += "allocscope diff\n";
  out += side_line("BASE", d.base);
  out += side_line("OTHER", d.other);
  out += "\n";
  const std::vector<std::vector<std::string>> rows = diff_totals(d);
  TextTable totals({{rows[0][0], TextTable::Align::Left}, {rows[0][1]}, {rows[0][2]}, {rows[0][3]}});
  for (size_t i = 1; i < rows.size(); ++i) totals.add_row({rows[i][0], rows[i][1], rows[i][2], rows[i][3]});
  out += totals.render();
  out += "\n";
  // Verdict, wrapped.
  const std::string verdict = diff_verdict_text(d);
  std::string line = " ";
  for (size_t start = 0; start < verdict.size();) {
    size_t end = verdict.find(' ', start);
    if (end == std::string::npos) end = verdict.size();
    const std::string word = verdict.substr(start, end - start);
    if (display_width(line) + 1 + display_width(word) > 98) {
      out += line + "\n";
      line = " ";
    }
    line += " " + word;
    start = end + 1;
  }
  out += line + "\n\n";

  TextTable table({{"size", TextTable::Align::Left}, {"calls BASE"}, {"calls OTHER"}, {"Δ time"},
                   {"more calls"}, {"slower calls"}, {"Δ fast"}, {"Δ slow"}, {"Δ waiting"}});
  std::vector<const DiffRow*> shown;
  for (const auto& r : d.rows) shown.push_back(&r);
  const double total = std::fabs(d.attributed_delta_ns);
  for (const DiffRow* r : shown) {
    if (total > 0 && std::fabs(r->delta_ns) < 0.005 * total && shown.size() > 12) continue;
    table.add_row({r->label, group_digits(r->calls_base), group_digits(r->calls_other),
                   format_signed_duration_ns(r->delta_ns), format_signed_duration_ns(r->more_calls_ns), format_signed_duration_ns(r->slower_calls_ns),
                   format_signed_duration_ns(r->split_delta.fast_ns), format_signed_duration_ns(r->split_delta.slow_ns),
                   format_signed_duration_ns(r->split_delta.wait_ns)});
  }
  out += "By size (rows under 0.5 % of the change are left out when there are many)\n";
  out += table.render();
  out += "\n";
  TextTable ops({{"operation", TextTable::Align::Left}, {"Δ time"}, {"share"}});
  for (unsigned op = 0; op < kOps; ++op) {
    if (d.delta_by_op[op] == 0) continue;
    ops.add_row({op_name(op), format_signed_duration_ns(d.delta_by_op[op]),
                 total > 0 ? format_percent(d.delta_by_op[op] / d.attributed_delta_ns) : "-"});
  }
  out += "By operation\n";
  out += ops.render();
  out += "\n";
  out += d.shape_gap ? shape_gap_text(*d.shape_gap) : shape_note(d) + "\n";
  return out;
}

std::string diff_json(const DiffReport& d) {
  std::string out;
  JsonWriter w(out);
  auto side = [&](const char* name, const RunSide& s) {
    w.key(name).begin_object();
    w.field("file", s.file).field("program", s.program);
    w.key("args").begin_array();
    for (const auto& arg : s.args) w.value(arg);
    w.end_array();
    w.field("libc", s.libc).field("allocator", s.allocator);
    w.field("wall_ns", json_signed_ns(s.wall_ns)).field("thread_time_ns", json_signed_ns(s.thread_time_ns));
    w.field("allocator_time_ns", json_signed_ns(s.allocator_time_ns)).field("allocator_error_ns", json_signed_ns(s.allocator_error_ns));
    w.field("fast_ns", json_signed_ns(s.split.fast_ns)).field("slow_ns", json_signed_ns(s.split.slow_ns));
    w.field("wait_ns", json_signed_ns(s.split.wait_ns));
    w.field("calls", s.calls).field("minor_faults", s.minor_faults);
    w.field("faults_in_calls", json_signed_ns(std::max(0.0, s.faults_in_calls)));
    w.field("faults_in_calls_bound", json_signed_ns(s.faults_in_calls_bound)).field("faults_outside", json_signed_ns(s.faults_outside));
    w.field("system_ns", json_signed_ns(s.system_ns));
    w.field("minor_fault_ns", json_signed_ns(s.fault_ns)).field("outside_fault_ns", json_signed_ns(s.outside_fault_ns));
    w.field("outside_fault_error_ns", json_signed_ns(s.outside_fault_error_ns));
    w.field("cpu_ns", json_signed_ns(s.cpu_ns)).field("outside_cpu_ns", json_signed_ns(s.outside_cpu_ns));
    w.field("outside_off_cpu_ns", json_signed_ns(s.outside_off_cpu_ns));
    w.field("voluntary_switches", s.voluntary_switches).field("involuntary_switches", s.involuntary_switches);
    w.key("threads").begin_array();
    for (const ThreadSide& t : s.threads) {
      w.begin_object().field("serial", t.serial).field("calls", t.calls).field("lifetime_ns", json_signed_ns(t.lifetime_ns));
      w.field("allocator_time_ns", json_signed_ns(t.allocator_time_ns)).field("cpu_ns", json_signed_ns(t.cpu_ns));
      w.field("system_ns", json_signed_ns(t.system_ns));
      w.field("outside_cpu_ns", json_signed_ns(t.outside_cpu_ns)).field("minor_faults", t.minor_faults);
      w.field("faults_in_calls", json_signed_ns(t.faults_in_calls)).field("faults_outside", json_signed_ns(t.faults_outside));
      w.end_object();
    }
    w.end_array();
    w.field("wait_share", json_fraction(s.wait_share));
    w.field("locks_recorded", s.locks_recorded).field("lock_wait_ns", json_signed_ns(s.lock_wait_ns));
    w.field("lock_time_ns", json_signed_ns(s.lock_time_ns)).field("cond_wait_ns", json_signed_ns(s.cond_wait_ns));
    w.field("top_lock", s.top_lock).field("top_lock_wait_ns", json_signed_ns(s.top_lock_wait_ns));
    w.key("cpu");
    write_cpu_parts_json(w, s.cpu);
    w.key("contention").begin_object();
    write_contention_verdict(w, s.contention);
    w.end_object();
    w.end_object();
  };
  w.begin_object();
  w.field("schema", "allocscope-diff/1");
  side("base", d.base);
  side("other", d.other);
  w.field("measured_delta_ns", json_signed_ns(d.measured_delta_ns));
  w.field("attributed_delta_ns", json_signed_ns(d.attributed_delta_ns));
  w.field("coverage", json_fraction(d.coverage));
  w.field("attributed_unsure", d.attributed_unsure);
  w.field("gap_off_cpu", d.verdict == DiffVerdict::OffCpu);
  w.field("attributed_exceeds_gap", d.verdict == DiffVerdict::Exceeds);
  w.key("work").begin_object();
  w.field("calls_base", d.work.calls_base).field("calls_other", d.work.calls_other).field("ratio", d.work.ratio);
  w.field("per_call", d.work.per_call).field("reason", work_reason(d.work));
  w.end_object();
  w.field("calls_delta_ns", json_signed_ns(d.calls_delta_ns)).field("calls_error_ns", json_signed_ns(d.calls_error_ns));
  w.field("faults_delta_ns", json_signed_ns(d.faults_delta_ns)).field("faults_error_ns", json_signed_ns(d.faults_error_ns));
  w.field("faults_delta_held", d.faults_delta_held);
  w.field("unattributed_ns", json_signed_ns(d.unattributed_ns));
  w.field("unattributed_on_cpu_ns", json_signed_ns(d.unattributed_on_cpu_ns));
  w.field("unattributed_off_cpu_ns", json_signed_ns(d.unattributed_off_cpu_ns));
  w.field("cpu_delta_ns", json_signed_ns(d.cpu_delta_ns));
  w.field("system_delta_ns", json_signed_ns(d.system_delta_ns));
  w.field("threads_queue", d.threads_queue);
  w.key("locks");
  if (d.locks) {
    w.begin_object();
    w.field("delta_ns", json_signed_ns(d.locks_delta_ns)).field("share", json_fraction(d.locks_share));
    w.field("cond_delta_ns", json_signed_ns(d.cond_delta_ns));
    w.field("rest_delta_ns", json_signed_ns(d.rest_delta_ns)).field("explained", json_fraction(d.explained));
    w.end_object();
  } else {
    w.null();
  }
  w.key("cpu");
  if (d.cpu_parts) {
    w.begin_object();
    w.field("delta_ns", json_signed_ns(d.cpu_sampled_delta_ns));
    w.field("allocator_delta_ns", json_signed_ns(d.cpu_allocator_delta_ns)).field("allocator_error_ns", json_signed_ns(d.cpu_allocator_error_ns));
    w.field("locks_delta_ns", json_signed_ns(d.cpu_locks_delta_ns)).field("locks_error_ns", json_signed_ns(d.cpu_locks_error_ns));
    w.field("explained", json_fraction(d.cpu_explained));
    w.field("explained_error", json_fraction(d.cpu_explained ? std::optional<double>(d.cpu_explained_error) : std::nullopt));
    w.field("too_few_samples", d.cpu_too_few_samples);
    w.end_object();
  } else {
    w.null();
  }
  w.field("fast_delta_ns", json_signed_ns(d.split_delta.fast_ns)).field("slow_delta_ns", json_signed_ns(d.split_delta.slow_ns));
  w.field("wait_delta_ns", json_signed_ns(d.split_delta.wait_ns));
  w.key("wall").begin_object();
  w.field("measured_delta_ns", json_signed_ns(d.wall_measured_delta_ns));
  w.field("attributed_delta_ns", json_signed_ns(d.wall_attributed_delta_ns));
  w.field("coverage", json_fraction(d.wall_coverage));
  w.end_object();
  w.key("ops").begin_object();
  for (unsigned op = 0; op < kOps; ++op) {
    if (d.delta_by_op[op] != 0) w.field(op_name(op), json_signed_ns(d.delta_by_op[op]));
  }
  w.end_object();
  w.key("classes").begin_array();
  for (const auto& r : d.rows) {
    w.begin_object();
    if (r.size_known) {
      w.field("lo", r.lo).field("hi", r.hi);
    } else {
      w.key("lo").null().key("hi").null();
    }
    w.field("size_known", r.size_known).field("label", r.label);
    w.field("calls_base", r.calls_base).field("calls_other", r.calls_other);
    w.field("time_base_ns", json_signed_ns(r.time_base_ns)).field("time_other_ns", json_signed_ns(r.time_other_ns));
    w.field("delta_ns", json_signed_ns(r.delta_ns)).field("more_calls_ns", json_signed_ns(r.more_calls_ns));
    w.field("slower_calls_ns", json_signed_ns(r.slower_calls_ns));
    w.field("fast_delta_ns", json_signed_ns(r.split_delta.fast_ns)).field("slow_delta_ns", json_signed_ns(r.split_delta.slow_ns));
    w.field("wait_delta_ns", json_signed_ns(r.split_delta.wait_ns));
    w.end_object();
  }
  w.end_array();
  w.key("verdict").begin_object().field("dominant", diff_verdict_name(d)).field("text", diff_verdict_text(d)).end_object();
  w.key("warnings").begin_array();
  for (const auto& warning : workload_warnings(d)) w.value(warning);
  w.end_array();
  w.key("shape_gap");
  if (d.shape_gap) {
    write_shape_gap(w, *d.shape_gap);
  } else {
    w.null();
    w.field("shape_note", shape_note(d));
  }
  w.end_object();
  out += "\n";
  return out;
}

}  // namespace allocscope
