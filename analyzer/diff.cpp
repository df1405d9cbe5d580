// diff.cpp — see diff.h.
#include "diff.h"
#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "html_page.h"
#include "html_report.h"
#include "json_writer.h"
#include "profile.h"
#include "side_by_side.h"
#include "text_table.h"
#include "thread_profile.h"
#include "trace_analysis.h"
#include "units.h"

namespace allocscope {

namespace {

constexpr std::string_view kUsage =
    "usage: allocscope diff BASE OTHER [--json | --html OUT.html]\n"
    "\n"
    "Compares two profiles of the same workload (say glibc's malloc and musl's): how much of the\n"
    "difference in run time the allocator explains, split into more calls / slower calls and\n"
    "fast / slow / waiting, per size bucket and operation.  When both profiles were recorded\n"
    "with --trace, also which shapes (size × lifetime × same/cross-thread free) the difference\n"
    "comes from.\n"
    "\n"
    "  --json        one JSON document\n"
    "  --html OUT    write a self-contained HTML page with plots to OUT instead\n";

// Page faults: from the threads' rusage, less those taken inside allocator calls (estimated from
// the calls that sampled rusage around themselves).
struct FaultEvidence {
  uint64_t minor_faults = 0;
  uint64_t sampled_calls = 0, sampled_faults = 0;
  double fault_ns = 0;
};

FaultEvidence fault_evidence(const std::filesystem::path& path) {
  FaultEvidence f;
  LoadOptions options;
  options.on_events = [&](const format::EventsHeader&, std::span<const format::Event> events) {
    for (const auto& e : events) {
      if (!(e.flags & format::kEvRusage)) continue;
      f.sampled_calls++;
      f.sampled_faults += e.minflt;
    }
  };
  options.warn = nullptr;
  const Profile p = load_profile(path, options);
  for (const auto& t : p.threads) {
    if (t.rusage.minflt != kRusageUnavailable) f.minor_faults += t.rusage.minflt;
  }
  if (p.calibration) f.fault_ns = static_cast<double>(p.ticks_to_ns(p.calibration->minor_fault_ticks));
  return f;
}

RunSide side_of(const CostReport& r, const FaultEvidence& f) {
  RunSide s;
  s.file = r.file;
  s.program = r.program;
  s.libc = r.libc;
  s.allocator = r.allocator;
  s.wall_ns = r.wall_ns;
  // Thread time of the threads that use the allocator (≥ 1 % of the calls): a thread that only
  // waits in pthread_join would otherwise count its idle time as part of the gap.
  for (const auto& t : r.threads_rows) {
    if (static_cast<double>(t.calls) >= 0.01 * static_cast<double>(r.calls)) s.thread_time_ns += t.lifetime_ns;
  }
  if (s.thread_time_ns <= 0) s.thread_time_ns = r.thread_time_ns;
  s.allocator_time_ns = r.allocator_time_ns;
  s.allocator_error_ns = r.allocator_error_ns;
  s.split = r.split;
  s.calls = r.calls;
  s.minor_faults = f.minor_faults;
  s.fault_ns = f.fault_ns;
  if (f.sampled_calls > 0) {
    s.faults_in_calls = static_cast<double>(f.sampled_faults) / static_cast<double>(f.sampled_calls) *
                        static_cast<double>(r.calls);
  }
  const double outside = std::max(0.0, static_cast<double>(f.minor_faults) - s.faults_in_calls);
  s.outside_fault_ns = outside * f.fault_ns;
  s.contention = r.contention.verdict;
  s.wait_share = r.contention.wait_share;
  s.locks_recorded = r.locks.recorded;
  const bool all_threads = s.thread_time_ns == r.thread_time_ns;
  std::set<uint32_t> counted;
  for (const auto& t : r.threads_rows) {
    if (all_threads || static_cast<double>(t.calls) >= 0.01 * static_cast<double>(r.calls)) counted.insert(t.serial);
  }
  for (const auto& [serial, ns] : r.locks.wait_ns_by_thread)
    if (counted.count(serial)) s.lock_wait_ns += ns;
  for (const auto& [serial, ns] : r.locks.time_ns_by_thread)
    if (counted.count(serial)) s.lock_time_ns += ns;
  for (const auto& [serial, ns] : r.locks.cond_wait_ns_by_thread)
    if (counted.count(serial)) s.cond_wait_ns += ns;
  if (!r.locks.locks.empty()) {
    s.top_lock = r.locks.locks.front().name();
    s.top_lock_wait_ns = r.locks.locks.front().wait_ns;
  }
  return s;
}

// The allocator's part of the wall time: its thread time over the threads alive on average.
std::optional<double> wall_equivalent(const RunSide& s, double thread_ns) {
  if (!s.wall_ns || s.thread_time_ns <= 0) return std::nullopt;
  return thread_ns * *s.wall_ns / s.thread_time_ns;
}

using RowKey = std::tuple<bool, uint64_t, uint64_t>;  // (!size_known, lo, hi): sizes first

std::string signed_dur(double ns) {
  return (ns < 0 ? "-" : "+") + format_duration_ns(std::fabs(ns));
}

std::string pct(double share) { return fmt::format("{:.0f} %", 100 * share); }

std::string make_verdict(const DiffReport& d) {
  const double base_time = d.base.thread_time_ns;
  if (base_time > 0 && std::fabs(d.measured_delta_ns) < 0.02 * base_time) {
    return fmt::format("The two runs take the same thread time within 2 % ({}): there is no gap "
                       "to attribute; the allocator's own difference is {}.",
                       signed_dur(d.measured_delta_ns), signed_dur(d.attributed_delta_ns));
  }
  const bool slower = d.measured_delta_ns > 0;
  std::string text = fmt::format("OTHER is {} by {} of thread time", slower ? "slower" : "faster",
                                 format_duration_ns(std::fabs(d.measured_delta_ns)));
  if (d.wall_measured_delta_ns)
    text += fmt::format(" ({} wall)", signed_dur(*d.wall_measured_delta_ns));
  if (!d.coverage) return text + ".";
  const double c = *d.coverage;
  text += fmt::format("; the allocator accounts for {} of it ({}", pct(c), signed_dur(d.attributed_delta_ns));
  // The largest component of the allocator's change.
  const std::pair<double, const char*> parts[] = {{d.split_delta.wait_ns, "waiting (blocked)"},
                                                  {d.split_delta.slow_ns, "slow but running"},
                                                  {d.split_delta.fast_ns, "fast path"},
                                                  {d.faults_delta_ns, "page faults outside calls"}};
  const auto* top = std::max_element(std::begin(parts), std::end(parts), [&](auto& a, auto& b) {
    return (slower ? a.first : -a.first) < (slower ? b.first : -b.first);
  });
  text += fmt::format(", mostly {} {})", top->second, signed_dur(top->first));
  const DiffRow* row = nullptr;
  for (const auto& r : d.rows)
    if (!row || (slower ? r.delta_ns > row->delta_ns : r.delta_ns < row->delta_ns)) row = &r;
  if (row && d.attributed_delta_ns != 0 && (row->delta_ns > 0) == (d.attributed_delta_ns > 0)) {
    text += fmt::format("; {} requests carry {} of it", row->label,
                        pct(row->delta_ns / d.attributed_delta_ns));
  }
  text += ".";
  if (c < 0.5) {
    text += fmt::format(" Most of this gap is not the allocator: only {} of it is time inside "
                        "allocator calls or their page faults.", pct(std::max(0.0, c)));
  } else if (c > 1.2) {
    text += " The allocator's change exceeds the measured gap: something else got faster.";
  }
  if (d.locks && d.locks_share) {
    const RunSide& worse = d.locks_delta_ns >= 0 ? d.other : d.base;
    text += fmt::format(" The program's own locks (outside the allocator) account for {} ({})", pct(*d.locks_share),
                        signed_dur(d.locks_delta_ns));
    if (!worse.top_lock.empty())
      text += fmt::format(", most of all {} on {} ({} of waiting)", worse.top_lock, &worse == &d.other ? "OTHER" : "BASE",
                          format_duration_ns(worse.top_lock_wait_ns));
    text += fmt::format("; allocator and locks together explain {}.", d.explained ? pct(*d.explained) : "-");
  }
  return text;
}

// Splits the difference over the shapes of two traces, or says why it cannot.
void attribute_to_shapes(DiffReport& d, const CostReport& base, const CostReport& other) {
  if (!base.trace || !other.trace) {
    const char* which = !base.trace && !other.trace ? "neither profile is" : !base.trace ? "BASE is not" : "OTHER is not";
    d.shape_note = fmt::format("Shape attribution needs two profiles recorded with `allocscope record --trace`; "
                               "{} a trace.", which);
    return;
  }
  LoadOptions quiet;  // the cost model has warned about the files already
  quiet.warn = [](std::string_view) {};
  auto shapes_of = [&quiet](const std::filesystem::path& file) {
    Profile profile = load_profile(file, quiet);
    ShapeReport shapes = shape_report(profile, analyze_trace(profile));
    return std::make_pair(std::move(profile), std::move(shapes));
  };
  auto [base_side, other_side] = side_by_side([&] { return shapes_of(base.file); }, [&] { return shapes_of(other.file); });
  d.shape_gap = attribute_gap(base_side.second, other_side.second, class_table_of(base_side.first));
}

}  // namespace

DiffReport diff_profiles(const std::filesystem::path& base, const std::filesystem::path& other) {
  CostOptions options;
  options.by = ReportGrouping::Bucket;
  const auto [rb, ro] = side_by_side([&] { return analyze_profile(base, options); },
                                     [&] { return analyze_profile(other, options); });
  return diff_reports(rb, ro);
}

DiffReport diff_reports(const CostReport& rb, const CostReport& ro) {
  DiffReport d;
  d.base = side_of(rb, fault_evidence(rb.file));
  d.other = side_of(ro, fault_evidence(ro.file));

  std::map<RowKey, DiffRow> rows;
  auto row_for = [&](const ClassRow& c) -> DiffRow& {
    DiffRow& r = rows[RowKey{!c.size_known, c.lo, c.hi}];
    r.lo = c.lo;
    r.hi = c.hi;
    r.size_known = c.size_known;
    r.label = c.label;
    return r;
  };
  for (const auto& c : rb.classes) {
    DiffRow& r = row_for(c);
    r.calls_base = c.calls;
    r.time_base_ns = c.time_ns;
    r.split_delta.fast_ns -= c.split.fast_ns;
    r.split_delta.slow_ns -= c.split.slow_ns;
    r.split_delta.wait_ns -= c.split.wait_ns;
    for (unsigned op = 0; op < kOpSlots; ++op) r.delta_by_op[op] -= c.time_by_op[op];
  }
  for (const auto& c : ro.classes) {
    DiffRow& r = row_for(c);
    r.calls_other = c.calls;
    r.time_other_ns = c.time_ns;
    r.split_delta.add(c.split);
    for (unsigned op = 0; op < kOpSlots; ++op) r.delta_by_op[op] += c.time_by_op[op];
  }
  for (auto& [key, r] : rows) {
    r.delta_ns = r.time_other_ns - r.time_base_ns;
    const double base_mean = r.calls_base ? r.time_base_ns / static_cast<double>(r.calls_base) : 0;
    r.more_calls_ns = (static_cast<double>(r.calls_other) - static_cast<double>(r.calls_base)) * base_mean;
    r.slower_calls_ns = r.delta_ns - r.more_calls_ns;
    for (unsigned op = 0; op < kOpSlots; ++op) d.delta_by_op[op] += r.delta_by_op[op];
    d.split_delta.add(r.split_delta);
    d.rows.push_back(r);
  }
  d.calls_delta_ns = d.other.allocator_time_ns - d.base.allocator_time_ns;
  d.calls_error_ns = std::hypot(d.base.allocator_error_ns, d.other.allocator_error_ns);
  d.faults_delta_ns = d.other.outside_fault_ns - d.base.outside_fault_ns;
  d.attributed_delta_ns = d.calls_delta_ns + d.faults_delta_ns;
  d.measured_delta_ns = d.other.thread_time_ns - d.base.thread_time_ns;
  if (std::fabs(d.measured_delta_ns) > 0) d.coverage = d.attributed_delta_ns / d.measured_delta_ns;
  d.locks = d.base.locks_recorded && d.other.locks_recorded;
  if (d.locks) {
    d.locks_delta_ns = d.other.lock_time_ns - d.base.lock_time_ns;
    d.cond_delta_ns = d.other.cond_wait_ns - d.base.cond_wait_ns;
    d.rest_delta_ns = d.measured_delta_ns - d.attributed_delta_ns - d.locks_delta_ns - d.cond_delta_ns;
    if (std::fabs(d.measured_delta_ns) > 0) {
      d.locks_share = d.locks_delta_ns / d.measured_delta_ns;
      d.explained = (d.attributed_delta_ns + d.locks_delta_ns) / d.measured_delta_ns;
    }
  }
  if (d.base.wall_ns && d.other.wall_ns) {
    d.wall_measured_delta_ns = *d.other.wall_ns - *d.base.wall_ns;
    const auto wb = wall_equivalent(d.base, d.base.allocator_time_ns + d.base.outside_fault_ns);
    const auto wo = wall_equivalent(d.other, d.other.allocator_time_ns + d.other.outside_fault_ns);
    if (wb && wo) {
      d.wall_attributed_delta_ns = *wo - *wb;
      if (std::fabs(*d.wall_measured_delta_ns) > 0)
        d.wall_coverage = *d.wall_attributed_delta_ns / *d.wall_measured_delta_ns;
    }
  }
  d.verdict = make_verdict(d);
  attribute_to_shapes(d, rb, ro);
  return d;
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
  TextTable totals({{"", TextTable::Align::Left}, {"BASE"}, {"OTHER"}, {"OTHER - BASE"}});
  auto opt_dur = [](const std::optional<double>& v) { return v ? format_duration_ns(*v) : "-"; };
  totals.add_row({"wall time", opt_dur(d.base.wall_ns), opt_dur(d.other.wall_ns),
                  d.wall_measured_delta_ns ? signed_dur(*d.wall_measured_delta_ns) : "-"});
  totals.add_row({"thread time (allocating threads)", format_duration_ns(d.base.thread_time_ns),
                  format_duration_ns(d.other.thread_time_ns), signed_dur(d.measured_delta_ns)});
  totals.add_row({"inside allocator calls", format_duration_ns(d.base.allocator_time_ns),
                  format_duration_ns(d.other.allocator_time_ns),
                  fmt::format("{} ± {}", signed_dur(d.calls_delta_ns), format_duration_ns(d.calls_error_ns))});
  totals.add_row({"  fast path", format_duration_ns(d.base.split.fast_ns), format_duration_ns(d.other.split.fast_ns),
                  signed_dur(d.split_delta.fast_ns)});
  totals.add_row({"  slow but running", format_duration_ns(d.base.split.slow_ns),
                  format_duration_ns(d.other.split.slow_ns), signed_dur(d.split_delta.slow_ns)});
  totals.add_row({"  waiting (blocked)", format_duration_ns(d.base.split.wait_ns),
                  format_duration_ns(d.other.split.wait_ns), signed_dur(d.split_delta.wait_ns)});
  totals.add_row({"page faults outside calls (est.)", format_duration_ns(d.base.outside_fault_ns),
                  format_duration_ns(d.other.outside_fault_ns), signed_dur(d.faults_delta_ns)});
  totals.add_row({"attributed to the allocator", "", "", signed_dur(d.attributed_delta_ns)});
  totals.add_row({"coverage (thread time)", "", "", d.coverage ? pct(*d.coverage) : "-"});
  totals.add_row({"coverage (wall time)", "", "", d.wall_coverage ? pct(*d.wall_coverage) : "-"});
  if (d.locks) {
    totals.add_row({"other locks (waits + unlocks)", format_duration_ns(d.base.lock_time_ns),
                    format_duration_ns(d.other.lock_time_ns), signed_dur(d.locks_delta_ns)});
    totals.add_row({"  contended waits", format_duration_ns(d.base.lock_wait_ns), format_duration_ns(d.other.lock_wait_ns),
                    signed_dur(d.other.lock_wait_ns - d.base.lock_wait_ns)});
    totals.add_row({"  unlocks (sampled, est.)", format_duration_ns(d.base.lock_time_ns - d.base.lock_wait_ns),
                    format_duration_ns(d.other.lock_time_ns - d.other.lock_wait_ns),
                    signed_dur((d.other.lock_time_ns - d.other.lock_wait_ns) - (d.base.lock_time_ns - d.base.lock_wait_ns))});
    totals.add_row({"condition waits (idle)", format_duration_ns(d.base.cond_wait_ns),
                    format_duration_ns(d.other.cond_wait_ns), signed_dur(d.cond_delta_ns)});
    totals.add_row({"rest (none of the above)", "", "", signed_dur(d.rest_delta_ns)});
    totals.add_row({"allocator + other locks", "", "", d.explained ? pct(*d.explained) : "-"});
  }
  totals.add_row({"contention", contention_kind_name(d.base.contention.kind), contention_kind_name(d.other.contention.kind), ""});
  totals.add_row({"waiting share of allocator time", pct(d.base.wait_share), pct(d.other.wait_share), ""});
  out += totals.render();
  out += "\n";
  // Verdict, wrapped.
  std::string line = " ";
  for (size_t start = 0; start < d.verdict.size();) {
    size_t end = d.verdict.find(' ', start);
    if (end == std::string::npos) end = d.verdict.size();
    const std::string word = d.verdict.substr(start, end - start);
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
                   signed_dur(r->delta_ns), signed_dur(r->more_calls_ns), signed_dur(r->slower_calls_ns),
                   signed_dur(r->split_delta.fast_ns), signed_dur(r->split_delta.slow_ns),
                   signed_dur(r->split_delta.wait_ns)});
  }
  out += "By size (rows under 0.5 % of the change are left out when there are many)\n";
  out += table.render();
  out += "\n";
  TextTable ops({{"operation", TextTable::Align::Left}, {"Δ time"}, {"share"}});
  for (unsigned op = 0; op < kOps; ++op) {
    if (d.delta_by_op[op] == 0) continue;
    ops.add_row({op_name(op), signed_dur(d.delta_by_op[op]),
                 total > 0 ? pct(d.delta_by_op[op] / d.attributed_delta_ns) : "-"});
  }
  out += "By operation\n";
  out += ops.render();
  out += "\n";
  out += d.shape_gap ? shape_gap_text(*d.shape_gap) : d.shape_note + "\n";
  return out;
}

std::string diff_json(const DiffReport& d) {
  std::string out;
  JsonWriter w(out);
  auto side = [&](const char* name, const RunSide& s) {
    w.key(name).begin_object();
    w.field("file", s.file).field("program", s.program).field("libc", s.libc).field("allocator", s.allocator);
    w.field("wall_ns", s.wall_ns).field("thread_time_ns", s.thread_time_ns);
    w.field("allocator_time_ns", s.allocator_time_ns).field("allocator_error_ns", s.allocator_error_ns);
    w.field("fast_ns", s.split.fast_ns).field("slow_ns", s.split.slow_ns).field("wait_ns", s.split.wait_ns);
    w.field("calls", s.calls).field("minor_faults", s.minor_faults).field("faults_in_calls", s.faults_in_calls);
    w.field("minor_fault_ns", s.fault_ns).field("outside_fault_ns", s.outside_fault_ns);
    w.field("wait_share", s.wait_share);
    w.field("locks_recorded", s.locks_recorded).field("lock_wait_ns", s.lock_wait_ns).field("lock_time_ns", s.lock_time_ns);
    w.field("cond_wait_ns", s.cond_wait_ns).field("top_lock", s.top_lock).field("top_lock_wait_ns", s.top_lock_wait_ns);
    w.key("contention").begin_object();
    write_contention_verdict(w, s.contention);
    w.end_object();
    w.end_object();
  };
  w.begin_object();
  side("base", d.base);
  side("other", d.other);
  w.field("measured_delta_ns", d.measured_delta_ns);
  w.field("attributed_delta_ns", d.attributed_delta_ns);
  w.field("coverage", d.coverage);
  w.field("calls_delta_ns", d.calls_delta_ns).field("calls_error_ns", d.calls_error_ns);
  w.field("faults_delta_ns", d.faults_delta_ns);
  w.key("locks");
  if (d.locks) {
    w.begin_object();
    w.field("delta_ns", d.locks_delta_ns).field("share", d.locks_share).field("cond_delta_ns", d.cond_delta_ns);
    w.field("rest_delta_ns", d.rest_delta_ns).field("explained", d.explained);
    w.end_object();
  } else {
    w.null();
  }
  w.field("fast_delta_ns", d.split_delta.fast_ns).field("slow_delta_ns", d.split_delta.slow_ns);
  w.field("wait_delta_ns", d.split_delta.wait_ns);
  w.key("wall").begin_object();
  w.field("measured_delta_ns", d.wall_measured_delta_ns);
  w.field("attributed_delta_ns", d.wall_attributed_delta_ns);
  w.field("coverage", d.wall_coverage);
  w.end_object();
  w.key("ops").begin_object();
  for (unsigned op = 0; op < kOps; ++op) {
    if (d.delta_by_op[op] != 0) w.field(op_name(op), d.delta_by_op[op]);
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
    w.field("time_base_ns", r.time_base_ns).field("time_other_ns", r.time_other_ns);
    w.field("delta_ns", r.delta_ns).field("more_calls_ns", r.more_calls_ns);
    w.field("slower_calls_ns", r.slower_calls_ns);
    w.field("fast_delta_ns", r.split_delta.fast_ns).field("slow_delta_ns", r.split_delta.slow_ns);
    w.field("wait_delta_ns", r.split_delta.wait_ns);
    w.end_object();
  }
  w.end_array();
  w.field("verdict", d.verdict);
  w.key("shape_gap");
  if (d.shape_gap) {
    write_shape_gap(w, *d.shape_gap);
  } else {
    w.null();
    w.field("shape_note", d.shape_note);
  }
  w.end_object();
  out += "\n";
  return out;
}

int diff_command(CommandArgs args) {
  std::vector<std::string> files;
  bool json = false;
  std::string html;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_help_flag(a)) {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (a == "--json") {
      json = true;
    } else if (a == "--html") {
      if (i + 1 >= args.size()) throw UsageError("diff: --html needs an output file");
      html = args[++i];
    } else if (a.rfind("--html=", 0) == 0) {
      html = a.substr(7);
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError(fmt::format("diff: unknown option '{}'", a));
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) throw UsageError("diff: needs two profiles, BASE and OTHER");
  if (json && !html.empty()) throw UsageError("diff: --json and --html do not go together");
  if (!html.empty()) {
    CostOptions options;
    options.by = ReportGrouping::Bucket;
    const auto [base, other] = side_by_side([&] { return analyze_profile(files[0], options); },
                                            [&] { return analyze_profile(files[1], options); });
    const std::string page = diff_html(diff_reports(base, other), base, other);
    write_html_file(html, page);
    fmt::print(stderr, "allocscope: wrote {} ({} KiB)\n", html, (page.size() + 1023) / 1024);
    return 0;
  }
  const DiffReport d = diff_profiles(files[0], files[1]);
  fmt::print("{}", json ? diff_json(d) : diff_text(d));
  return 0;
}

}  // namespace allocscope
