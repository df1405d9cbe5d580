// diff.cpp — see diff.h.
#include "model/diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "profile/peek.h"
#include "profile/profile.h"
#include "util/side_by_side.h"
#include "profile/thread_profile.h"
#include "model/faults_in_calls.h"
#include "model/trace_analysis.h"

namespace allocscope {

namespace {

constexpr double kWorkTolerance = 0.03;  // calls differing by more: the runs did different work

// Page faults: from the threads' rusage, less those taken inside allocator calls
// (faults_in_calls.h).
struct FaultEvidence {
  uint64_t minor_faults = 0;
  uint64_t system_us = 0;  // the threads' system time (rusage)
  double fault_ns = 0;
  std::map<uint32_t, uint64_t> thread_faults;  // serial -> minor faults (rusage)
  std::map<uint32_t, CellMap> thread_cells;    // serial -> its calls per (operation, size bucket)
  FaultSample sample;
};

FaultEvidence fault_evidence(const std::filesystem::path& path) {
  FaultEvidence f;
  f.sample = FaultSample(read_calibration(path));
  LoadOptions options;
  options.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    f.sample.add(header, events);
  };
  options.warn = nullptr;
  const Profile p = load_profile(path, options);
  for (const auto& t : p.threads) {
    if (t.rusage.minflt != kRusageUnavailable) {
      f.minor_faults += t.rusage.minflt;
      f.thread_faults[t.serial] = t.rusage.minflt;
      f.thread_cells[t.serial] = t.cells;
    }
    if (t.rusage.stime_us != kRusageUnavailable) f.system_us += t.rusage.stime_us;
  }
  if (p.calibration) f.fault_ns = static_cast<double>(p.ticks_to_ns(p.calibration->minor_fault_ticks));
  return f;
}

FaultEstimate thread_faults(const ThreadRow& t, const FaultEvidence& f) {
  const auto it = f.thread_faults.find(t.serial);
  if (it == f.thread_faults.end()) return {};
  const auto st = f.sample.threads.find(t.serial);
  return thread_faults_in_calls(st == f.sample.threads.end() ? ThreadFaultSample{} : st->second,
                                f.thread_cells.at(t.serial), it->second);
}

// Faults inside calls: each thread's estimate (faults_in_calls.h), summed; their bounds added in
// quadrature.  Faults inside calls are in the calls' time already: the rest are charged outside
// calls, ± the bound.
void estimate_faults(RunSide& s, const FaultEvidence& f, const CostReport& r) {
  const double total = static_cast<double>(f.minor_faults);
  double inside = 0, bound2 = 0, rows_faults = 0;
  for (const auto& t : r.threads_rows) {
    const FaultEstimate e = thread_faults(t, f);
    inside += e.faults;
    bound2 += e.bound * e.bound;
    if (const auto it = f.thread_faults.find(t.serial); it != f.thread_faults.end())
      rows_faults += static_cast<double>(it->second);
  }
  // Faults of threads without a row (none made a counted call) may have been inside calls too.
  const double rest = std::max(0.0, total - rows_faults);
  s.faults_in_calls = std::min(total, inside);
  s.faults_in_calls_bound = std::min(total, std::sqrt(bound2) + rest);
  s.faults_outside = total - s.faults_in_calls;
  s.outside_fault_ns = s.faults_outside * f.fault_ns;
  s.outside_fault_error_ns = std::min(s.faults_outside + s.faults_in_calls, s.faults_in_calls_bound) * f.fault_ns;
}

// One thread, for the record: its faults and CPU time, and the estimate of its faults inside calls.
ThreadSide thread_side(const ThreadRow& t, const FaultEvidence& f) {
  ThreadSide ts;
  ts.serial = t.serial;
  ts.calls = t.calls;
  ts.lifetime_ns = t.lifetime_ns;
  ts.allocator_time_ns = t.time_ns;
  if (t.rusage.minflt != kRusageUnavailable) ts.minor_faults = t.rusage.minflt;
  if (t.rusage.utime_us != kRusageUnavailable && t.rusage.stime_us != kRusageUnavailable) {
    ts.cpu_ns = static_cast<double>(t.rusage.utime_us + t.rusage.stime_us) * 1e3;
    ts.system_ns = static_cast<double>(t.rusage.stime_us) * 1e3;
  }
  ts.faults_in_calls = thread_faults(t, f).faults;
  ts.faults_outside = static_cast<double>(ts.minor_faults) - ts.faults_in_calls;
  ts.outside_cpu_ns = std::clamp(ts.cpu_ns - (t.time_ns - t.split.wait_ns), 0.0,
                                 std::max(0.0, t.lifetime_ns - t.time_ns));
  return ts;
}

// The program's own lock waits of the counted threads (all, or those that use the allocator).
void add_lock_times(RunSide& s, const CostReport& r) {
  const bool all_threads = s.thread_time_ns == r.thread_time_ns;
  std::set<uint32_t> counted;
  for (const auto& t : r.threads_rows) {
    if (all_threads || t.busy) counted.insert(t.serial);
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
}

RunSide side_of(const CostReport& r, const FaultEvidence& f) {
  RunSide s;
  s.file = r.file;
  s.program = r.program;
  s.args = r.args;
  s.libc = r.libc;
  s.allocator = r.allocator;
  s.wall_ns = r.wall_ns;
  // Thread time of the threads that use the allocator (busy_thread): a thread that only
  // waits in pthread_join would otherwise count its idle time as part of the gap.
  for (const auto& t : r.threads_rows) {
    if (t.busy) s.thread_time_ns += t.lifetime_ns;
  }
  if (s.thread_time_ns <= 0) s.thread_time_ns = r.thread_time_ns;
  // The same threads' CPU time (rusage): what of their time outside calls was on the CPU; and
  // their context switches: voluntary ones (they blocked) against involuntary ones (preempted).
  double cpu_us = 0;
  for (const auto& t : r.threads_rows) {
    if (!t.busy) continue;
    if (t.rusage.utime_us != kRusageUnavailable && t.rusage.stime_us != kRusageUnavailable)
      cpu_us += static_cast<double>(t.rusage.utime_us + t.rusage.stime_us);
    if (t.rusage.nvcsw != kRusageUnavailable) s.voluntary_switches += t.rusage.nvcsw;
    if (t.rusage.nivcsw != kRusageUnavailable) s.involuntary_switches += t.rusage.nivcsw;
  }
  s.cpu_ns = cpu_us * 1e3;
  s.allocator_time_ns = r.allocator_time_ns;
  s.allocator_error_ns = r.allocator_error_ns;
  s.split = r.split;
  s.calls = r.calls;
  s.minor_faults = f.minor_faults;
  s.system_ns = static_cast<double>(f.system_us) * 1e3;
  s.fault_ns = f.fault_ns;
  estimate_faults(s, f, r);
  // Outside calls: the threads' time less the allocator's; on the CPU there: their CPU time less
  // the allocator's running time (its time less waiting; preemption inside calls counts as
  // running, so this errs toward less CPU outside calls); off the CPU: the rest (preempted by
  // other work, or blocked outside the allocator).
  const double outside_calls = std::max(0.0, s.thread_time_ns - s.allocator_time_ns);
  s.outside_cpu_ns = std::clamp(s.cpu_ns - (s.allocator_time_ns - s.split.wait_ns), 0.0, outside_calls);
  s.outside_off_cpu_ns = outside_calls - s.outside_cpu_ns;
  for (const auto& t : r.threads_rows) s.threads.push_back(thread_side(t, f));
  s.contention = r.contention.verdict;
  s.wait_share = r.contention.wait_share;
  s.locks_recorded = r.locks.recorded;
  add_lock_times(s, r);
  s.cpu = r.cpu;
  return s;
}

// Same work or not: the calls of the two runs (docs/analysis.md, "Runs that did different work").
WorkComparison compare_work(uint64_t calls_base, uint64_t calls_other) {
  WorkComparison w;
  w.calls_base = calls_base;
  w.calls_other = calls_other;
  if (calls_base == 0 || calls_other == 0) return w;
  w.ratio = static_cast<double>(calls_other) / static_cast<double>(calls_base);
  w.per_call = std::fabs(w.ratio - 1) > kWorkTolerance;
  return w;
}

// The allocator's part of the wall time: its thread time over the threads alive on average.
std::optional<double> wall_equivalent(const RunSide& s, double thread_ns) {
  if (!s.wall_ns || s.thread_time_ns <= 0) return std::nullopt;
  return thread_ns * *s.wall_ns / s.thread_time_ns;
}

using RowKey = std::tuple<bool, uint64_t, uint64_t>;  // (!size_known, lo, hi): sizes first

}  // namespace

namespace {

// The allocator's parts of the change, largest first in the direction of the gap.
std::array<DiffPart, 4> parts_by_size(const DiffReport& d) {
  std::array<DiffPart, 4> parts = {DiffPart{DiffPartKind::Waiting, d.split_delta.wait_ns},
                                   DiffPart{DiffPartKind::Slow, d.split_delta.slow_ns},
                                   DiffPart{DiffPartKind::Fast, d.split_delta.fast_ns},
                                   DiffPart{DiffPartKind::Faults, d.faults_delta_ns}};
  const double sign = d.measured_delta_ns > 0 ? 1.0 : -1.0;
  std::stable_sort(parts.begin(), parts.end(), [&](const DiffPart& a, const DiffPart& b) { return sign * a.ns > sign * b.ns; });
  return parts;
}

}  // namespace

DiffPart largest_part(const DiffReport& d) { return parts_by_size(d)[0]; }

bool largest_part_clear(const DiffReport& d) {
  const std::array<DiffPart, 4> parts = parts_by_size(d);
  return std::fabs(parts[0].ns - parts[1].ns) > d.attributed_error_ns;
}

bool same_thread_time(const DiffReport& d) {
  const double base_time = (d.work.per_call ? d.work.ratio : 1.0) * d.base.thread_time_ns;
  return base_time > 0 && std::fabs(d.measured_delta_ns) < 0.02 * base_time;
}

namespace {

// Splits the difference over the shapes of two traces, or says why it cannot.
void attribute_to_shapes(DiffReport& d, const CostReport& base, const CostReport& other) {
  if (!base.trace || !other.trace) {
    d.missing_trace = !base.trace && !other.trace ? MissingTrace::Both
                      : !base.trace                 ? MissingTrace::Base
                                                    : MissingTrace::Other;
    return;
  }
  LoadOptions quiet;  // the cost model has warned about the files already
  quiet.warn = [](std::string_view) {};
  // Each run's shapes share its estimate (apportion.h): they add up to its allocator time.
  auto shapes_of = [&quiet](const CostReport& estimate) {
    Profile profile = load_profile(estimate.file, quiet);
    ShapeReport shapes = shape_report(profile, analyze_trace(profile));
    apply_estimate(shapes, estimate);
    return std::make_pair(std::move(profile), std::move(shapes));
  };
  auto [base_side, other_side] = side_by_side([&] { return shapes_of(base); }, [&] { return shapes_of(other); });
  d.shape_gap = attribute_gap(base_side.second, other_side.second, class_table_of(base_side.first));
}

// The rows of both runs by size, and their differences (BASE scaled by k), summed into `d`.
void diff_rows(DiffReport& d, const CostReport& rb, const CostReport& ro, double k) {
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
    r.split_delta.fast_ns -= k * c.split.fast_ns;
    r.split_delta.slow_ns -= k * c.split.slow_ns;
    r.split_delta.wait_ns -= k * c.split.wait_ns;
    for (unsigned op = 0; op < kOpSlots; ++op) r.delta_by_op[op] -= k * c.time_by_op[op];
  }
  for (const auto& c : ro.classes) {
    DiffRow& r = row_for(c);
    r.calls_other = c.calls;
    r.time_other_ns = c.time_ns;
    r.split_delta.add(c.split);
    for (unsigned op = 0; op < kOpSlots; ++op) r.delta_by_op[op] += c.time_by_op[op];
  }
  for (auto& [key, r] : rows) {
    r.delta_ns = r.time_other_ns - k * r.time_base_ns;
    const double base_mean = r.calls_base ? r.time_base_ns / static_cast<double>(r.calls_base) : 0;
    r.more_calls_ns = (static_cast<double>(r.calls_other) - k * static_cast<double>(r.calls_base)) * base_mean;
    r.slower_calls_ns = r.delta_ns - r.more_calls_ns;
    for (unsigned op = 0; op < kOpSlots; ++op) d.delta_by_op[op] += r.delta_by_op[op];
    d.split_delta.add(r.split_delta);
    d.rows.push_back(r);
  }
}

// One cost per fault for both runs (the machine's, not the allocator's: the mean of the two
// calibrations), so that the run with more faults outside calls is the one charged more.
void share_fault_cost(DiffReport& d) {
  const double c = d.base.fault_ns > 0 && d.other.fault_ns > 0 ? (d.base.fault_ns + d.other.fault_ns) / 2
                                                               : std::max(d.base.fault_ns, d.other.fault_ns);
  for (RunSide* s : {&d.base, &d.other}) {
    s->outside_fault_error_ns = s->fault_ns > 0 ? s->outside_fault_error_ns / s->fault_ns * c : 0;
    s->fault_ns = c;
    s->outside_fault_ns = s->faults_outside * c;
  }
}

// The program's own locks, scaled like the rest of BASE; their shares of the gap only where
// coverage is (a share of a gap that is noise means nothing).  The wall time's difference, and
// the allocator's part of it where there is a gap.
void diff_locks_and_wall(DiffReport& d, double k, bool comparable, bool gap) {
  d.locks = d.base.locks_recorded && d.other.locks_recorded;
  if (d.locks) {
    d.locks_delta_ns = d.other.lock_time_ns - k * d.base.lock_time_ns;
    d.cond_delta_ns = d.other.cond_wait_ns - k * d.base.cond_wait_ns;
    d.rest_delta_ns = d.measured_delta_ns - d.attributed_delta_ns - d.locks_delta_ns - d.cond_delta_ns;
    if (d.coverage) {
      d.locks_share = d.locks_delta_ns / d.measured_delta_ns;
      d.explained = (d.attributed_delta_ns + d.locks_delta_ns) / d.measured_delta_ns;
    }
  }
  // Where both runs sampled their CPU time: its parts, scaled like the rest of BASE.
  d.cpu_parts = d.base.cpu.recorded && d.other.cpu.recorded;
  if (d.cpu_parts) {
    const CpuParts& b = d.base.cpu;
    const CpuParts& o = d.other.cpu;
    d.cpu_sampled_delta_ns = o.cpu_ns - k * b.cpu_ns;
    d.cpu_allocator_delta_ns = o.allocator.ns - k * b.allocator.ns;
    d.cpu_allocator_error_ns = std::hypot(o.allocator.error_ns, k * b.allocator.error_ns);
    d.cpu_locks_delta_ns = o.locks.ns - k * b.locks.ns;
    d.cpu_locks_error_ns = std::hypot(o.locks.error_ns, k * b.locks.error_ns);
    const double error = std::hypot(d.cpu_allocator_error_ns, d.cpu_locks_error_ns);
    const double larger = std::max(o.cpu_ns, k * b.cpu_ns);
    const double gap = std::fabs(d.cpu_sampled_delta_ns);
    if (comparable && gap > std::max(0.02 * larger, error)) {
      d.cpu_explained = (d.cpu_allocator_delta_ns + d.cpu_locks_delta_ns) / d.cpu_sampled_delta_ns;
      d.cpu_explained_error = error / gap;
    }
    d.cpu_too_few_samples = comparable && gap > 0.02 * larger && gap <= error;
  }
  if (comparable && d.base.wall_ns && d.other.wall_ns) {
    d.wall_measured_delta_ns = *d.other.wall_ns - k * *d.base.wall_ns;
    const auto wb = wall_equivalent(d.base, d.base.allocator_time_ns + d.base.outside_fault_ns);
    const auto wo = wall_equivalent(d.other, d.other.allocator_time_ns + d.other.outside_fault_ns);
    if (wb && wo) {
      d.wall_attributed_delta_ns = *wo - k * *wb;
      if (gap && std::fabs(*d.wall_measured_delta_ns) > 0)
        d.wall_coverage = *d.wall_attributed_delta_ns / *d.wall_measured_delta_ns;
    }
  }
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

  // Runs that did different work (a fixed-duration benchmark makes as many calls as it can in its
  // time) compare per call: BASE's figures are scaled to OTHER's calls (cost per call × OTHER's calls).
  d.work = compare_work(rb.calls, ro.calls);
  const double k = d.work.per_call ? d.work.ratio : 1.0;
  diff_rows(d, rb, ro, k);
  d.calls_delta_ns = d.other.allocator_time_ns - k * d.base.allocator_time_ns;
  d.calls_error_ns = std::hypot(k * d.base.allocator_error_ns, d.other.allocator_error_ns);
  share_fault_cost(d);
  d.faults_delta_ns = d.other.outside_fault_ns - k * d.base.outside_fault_ns;
  d.faults_error_ns = std::hypot(k * d.base.outside_fault_error_ns, d.other.outside_fault_error_ns);
  // The run that faulted more is not charged less outside calls on estimates that cross within
  // their bounds: the term against the sign of the runs' own counts is taken as 0 unless it
  // exceeds its bound (an allocator that takes inside its calls the faults the other run's
  // program took outside them does save them there).
  const double more_faults = static_cast<double>(d.other.minor_faults) - k * static_cast<double>(d.base.minor_faults);
  if ((more_faults > 0 && d.faults_delta_ns < 0) || (more_faults < 0 && d.faults_delta_ns > 0)) {
    if (std::fabs(d.faults_delta_ns) <= d.faults_error_ns) {
      d.faults_delta_ns = 0;
      d.faults_delta_held = true;
    }
  }
  d.attributed_delta_ns = d.calls_delta_ns + d.faults_delta_ns;
  d.measured_delta_ns = d.other.thread_time_ns - k * d.base.thread_time_ns;
  d.attributed_error_ns = std::hypot(d.calls_error_ns, d.faults_error_ns);
  d.attributed_unsure = is_unsure(d.attributed_delta_ns, d.attributed_error_ns);
  d.unattributed_ns = d.measured_delta_ns - d.attributed_delta_ns;
  d.unattributed_off_cpu_ns = d.other.outside_off_cpu_ns - k * d.base.outside_off_cpu_ns;
  d.unattributed_on_cpu_ns = d.unattributed_ns - d.unattributed_off_cpu_ns;
  d.cpu_delta_ns = d.other.cpu_ns - k * d.base.cpu_ns;
  d.system_delta_ns = d.other.system_ns - k * d.base.system_ns;
  for (const RunSide* s : {&d.base, &d.other}) {
    if (!s->contention.oversubscribed) continue;  // more calling threads than CPUs (contention_verdict.h)
    const ContentionInputs& in = s->contention.inputs;
    if (!d.threads_queue || in.busy_threads * d.cpus > d.busy_threads * in.cpus) {
      d.cpus = in.cpus;
      d.busy_threads = in.busy_threads;
    }
    d.threads_queue = true;
  }
  // Coverage is a share of a gap: none when the runs take the same thread time within 2 % (a
  // share of noise would read as thousands of per cent).
  const bool comparable = d.work.calls_base > 0 && d.work.calls_other > 0;
  const bool gap = !same_thread_time(d);
  if (comparable && gap && std::fabs(d.measured_delta_ns) > 0) d.coverage = d.attributed_delta_ns / d.measured_delta_ns;
  diff_locks_and_wall(d, k, comparable, gap);
  // No part is named on an unsure difference (the verdict claims no share of the gap then).
  // Nor on a gap that is mostly time off the CPU outside calls (preemption by other work, or
  // sleeps the windows did not see): the machine's doing as much as the allocator's.
  const bool off_cpu = std::fabs(d.unattributed_off_cpu_ns) > 0.5 * std::fabs(d.measured_delta_ns);
  // Nor where the allocator's change exceeds the gap by more than its bound: a share over 100 %
  // says the runs differ outside the allocator as well, by how much is not known.
  const bool exceeds = d.measured_delta_ns > 0
                           ? d.attributed_delta_ns - d.measured_delta_ns > d.attributed_error_ns
                           : d.measured_delta_ns - d.attributed_delta_ns > d.attributed_error_ns;
  d.verdict = same_thread_time(d) || !d.coverage ? DiffVerdict::NoGap
              : off_cpu                        ? DiffVerdict::OffCpu
              : d.attributed_unsure            ? DiffVerdict::Unsure
              : exceeds                        ? DiffVerdict::Exceeds
                                               : DiffVerdict::Part;
  attribute_to_shapes(d, rb, ro);
  return d;
}

}  // namespace allocscope
