// The cost model of `allocscope report` (see cost_model.h and docs/analysis.md): pass 2, the
// contention measures, and analyze_profile() that runs the model's parts (cost_parts.h) in turn.
#include "model/cost_model.h"

#include <algorithm>
#include <cmath>

#include "allocscope/buckets.h"
#include "model/cost_parts.h"
#include "profile/peek.h"
#include "profile/trace_decode.h"

namespace allocscope {

namespace cost {

namespace {

constexpr double kPreemptedSeconds = 100e-6;  // a call this long that did not block was descheduled
constexpr double kCoincidenceNearSeconds = 20e-9;  // least width of the near zone of the ends' measure

// Threads by serial: the index in profile.threads, or -1.
std::vector<int32_t> thread_of_serials(const Profile& profile) {
  std::vector<int32_t> thread_of_serial;
  for (size_t i = 0; i < profile.threads.size(); ++i) {
    const uint32_t serial = profile.threads[i].serial;
    if (serial >= thread_of_serial.size()) thread_of_serial.resize(serial + 1, -1);
    thread_of_serial[serial] = static_cast<int32_t>(i);
  }
  return thread_of_serial;
}

// The wait of one timed call by the model: known from its switches, else its latency bin's
// waiting share, else the thread's share of blocking calls in that bin (phi).
double model_wait(const format::Event& e, double d, double base, const Model& model, const std::vector<double>& phi) {
  if (const std::optional<double> known = known_wait(e, d, base, model.ticks_per_us, model.block_threshold)) {
    return *known;
  }
  const unsigned bin = latency_bin_of(e.duration_ticks);
  const double share = model.wait_share[bin];
  if (share >= 0) return share * d;
  const double p = phi[bin];
  return p > 0 ? p * std::max(0.0, d - base - model.block_threshold) : 0.0;
}

// One timed call (corrected duration d, its wait and uncontended cost) added up: in its thread's
// row of class `cls`, the error bound's window cluster, the latency of display class `dcls`, the
// rusage samples, the exclusion tally and the latency by threads inside.
void tally_call(Pass2& p2, ThreadAcc& acc, const SweepItem& it, size_t cls, size_t dcls, double d, double wait,
                double base) {
  const format::Event& e = it.event;
  RowAcc& row = acc.row(cls, e.op);
  ++row.n;
  row.d += d;
  row.wait += wait;
  row.base += base;
  p2.clusters.add(static_cast<uint32_t>(cls * kOpSlots + e.op), d, wait, std::min(base, d));
  if (dcls >= p2.by_class.size()) p2.by_class.resize(dcls + 1);
  p2.by_class[dcls].add(e.duration_ticks);  // latency as measured, probe included
  if (e.flags & format::kEvRusage) {
    ++p2.rusage_samples;
    p2.rusage_blocked += e.nvcsw > 0;
    p2.rusage_preempted += e.nivcsw > 0;
  }
  if (it.inside >= 0 && e.op != static_cast<uint8_t>(Op::MallocUsableSize)) {
    const CallGroup group = releases(e.op) ? CallGroup::Freeing : CallGroup::Allocating;
    p2.exclusion.add(group, cls, static_cast<uint32_t>(it.inside),
                     static_cast<uint32_t>(std::max(0, it.inside_allocating)),
                     static_cast<uint32_t>(std::max(0, it.inside_running)),
                     static_cast<uint32_t>(std::max(0, it.inside_near_size)), e.duration_ticks);
  }
  if (it.inside >= 0) {
    ++acc.classified;
    ++p2.classified;
    const unsigned k = std::min<unsigned>(static_cast<unsigned>(it.inside), kInsideRows - 1);
    p2.by_inside[k].add(e.duration_ticks);
    if (it.inside >= 1) {
      ++acc.contended;
      ++p2.contended;
    }
  }
}

// A contended window's part of the serialization index, unless a call in it was descheduled.
void add_serialization(Pass2& p2, std::span<const SweepItem> items, const WindowInfo& info, bool excluded,
                       double window_progress) {
  if (excluded) {
    ++p2.si_excluded_windows;
    return;
  }
  p2.si_progress += window_progress;
  p2.si_time += static_cast<double>(info.contended_ticks);
  for (const SweepItem& it : items) p2.si_calls += it.contended_ticks > 0;
}

// Reads the profile again, its timed calls into `sweep2`: no more chunks than pass 1 saw.
void sweep_again(const std::filesystem::path& path, uint64_t event_chunks, WindowSweep& sweep2) {
  uint64_t chunks_seen = 0;
  LoadOptions load2;
  load2.warn = [](std::string_view) {};
  read_timed_calls(load2, [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    if (++chunks_seen > event_chunks) return;  // the file grew since pass 1
    sweep2.add(header.thread_serial, events);
  });
  (void)load_profile(path, load2);
}

// ---- pass 2: every timed call again, corrected by the model ----

// Each timed call's wait and uncontended cost by the model (phi: each thread's share of blocking
// calls by latency bin), added up per thread and class in `p2`, into the timeline and into the
// completion coincidences; the serialization index's progress over the contended windows.
void pass2(const std::filesystem::path& path, const Profile& profile, const Pass1& p1, const Model& model,
           const std::vector<std::vector<double>>& phi, const ClassGrid& grid, const SweepConfig& sweep_config,
           Pass2& p2, TimelineBuilder& timeline, CoincidenceTally& coincidence) {
  const auto classes = grid.classes;
  const auto disp_classes = grid.disp_classes;
  const ClassLookup& class_of = grid.class_of;
  const ClassLookup& disp_class_of = grid.disp_class_of;
  const bool regrid = grid.regrid;
  const std::vector<int32_t> thread_of_serial = thread_of_serials(profile);
  p2.threads.resize(profile.threads.size());
  // A call this long that did not block was descheduled (preempted, or its CPU taken by the
  // hypervisor): the windows it spans say more about the machine's load than about the allocator,
  // and are left out of the serialization index.
  const double preempted_ticks = profile.clock.hz() * kPreemptedSeconds;
  const uint64_t switch_slow_ticks = static_cast<uint64_t>(std::llround(profile.clock.hz() * 1e-9 * format::kSwitchSlowNs));
  uint64_t excluded_until = 0;
  std::vector<double> waits;
  std::vector<CallEnd> ends;
  std::vector<ThreadSpan> span_of_serial(thread_of_serial.size());
  const BusyScale scale = busy_scale(profile.threads);
  for (const ThreadProfile& t : profile.threads)
    span_of_serial[t.serial] = ThreadSpan{t.first_tick, t.last_tick, busy_thread(t, scale)};
  SleepPairTally sleep_pairs(std::move(span_of_serial));
  std::vector<uint8_t> slept;
  WindowSweep sweep2(sweep_config, [&](std::span<const SweepItem> items, const WindowInfo& info) {
    timeline.add_window(info);
    ends.clear();
    if (!info.late) p2.clusters.begin_window();
    waits.assign(items.size(), 0.0);
    slept.assign(items.size(), 0);
    bool preempted = false;
    double window_progress = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const SweepItem& it = items[i];
      const format::Event& e = it.event;
      if (e.op >= kOpSlots || it.thread >= thread_of_serial.size()) continue;
      const int32_t ti = thread_of_serial[it.thread];
      if (ti < 0) continue;
      const double raw = static_cast<double>(e.duration_ticks);
      const double d = raw > model.overhead ? raw - model.overhead : 0.0;
      const double base = model.baseline[cell_index(e.op, e.bucket)];
      const double wait = model_wait(e, d, base, model, phi[static_cast<size_t>(ti)]);
      waits[i] = wait;
      timeline.add_call(static_cast<size_t>(ti), e, d, wait);
      if (raw >= preempted_ticks && wait < 0.5 * d) {
        preempted = true;
        excluded_until = std::max(excluded_until, e.start_tick + e.duration_ticks);
      }
      const uint64_t size = format::event_size(e);
      const size_t cls = e.bucket == kBucketUnknown ? classes.size() : class_of(size);
      const size_t dcls = !regrid ? cls : e.bucket == kBucketUnknown ? disp_classes.size() : disp_class_of(size);
      tally_call(p2, p2.threads[static_cast<size_t>(ti)], it, cls, dcls, d, wait, base);
      if (switches_known_slow(e, switch_slow_ticks)) {
        ++p2.slow_switched;
        p2.slow_slept += e.nvcsw > 0;
        p2.slow_preempted += e.nvcsw == 0 && e.nivcsw > 0;
        slept[i] = e.nvcsw > 0;
        if (it.inside == 0) ++p2.slow_alone_switched, p2.slow_alone_slept += e.nvcsw > 0;
        if (allocates(e.op)) ++p2.slow_allocating_switched, p2.slow_allocating_slept += e.nvcsw > 0;
      }
      if (!p2.peers.empty()) p2.peers.add_call(it.thread, e);
      if (it.inside >= 0) {
        ends.push_back(CallEnd{e.start_tick + e.duration_ticks, it.thread,
                               call_size_group(e)});
      }
      if (it.contended_ticks > 0) {
        // The call progresses at min(1, uncontended cost / duration), uniformly over its length.
        const double rate = raw > 0 ? std::min(1.0, (base + model.overhead) / raw) : 1.0;
        window_progress += rate * static_cast<double>(it.contended_ticks);
      }
    }
    if (!info.late) sleep_pairs.add_window(items, slept, info.start + sweep_config.trim);
    if (info.late || info.contended_ticks == 0) return;
    if (!info.late) coincidence.add_window(ends, info.start + sweep_config.trim, info.start + sweep_config.window_len);
    add_serialization(p2, items, info, preempted || info.start < excluded_until, window_progress);
  });
  sweep_again(path, p1.event_chunks, sweep2);
  sweep2.finish();
  p2.sweep = sweep2.totals();
  p2.sleep_pairs = sleep_pairs.measure();
}

// ---- contention, from the estimate and the passes ----

// The threads meeting inside the allocator: shares, the serialization index, latency by threads
// inside, and the contention verdict on that evidence (contention_verdict.h).
void measure_contention(CostReport& r, const Pass2& p2, const CoincidenceTally& coincidence, const Profile& profile) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  Contention& c = r.contention;
  c.wait_share = r.allocator_time_ns > 0 ? r.split.wait_ns / r.allocator_time_ns : 0;
  c.classified = p2.classified;
  c.contended = p2.contended;
  c.contended_share = c.classified ? static_cast<double>(c.contended) / static_cast<double>(c.classified) : 0;
  const uint64_t contended_ticks = p2.sweep.contended_ticks();
  c.contended_time_share = p2.sweep.busy_ticks() ? static_cast<double>(contended_ticks) / static_cast<double>(p2.sweep.busy_ticks()) : 0;
  c.si_calls = p2.si_calls;
  if (p2.si_calls >= kMinContended && p2.si_time > 0) c.serialization_index = p2.si_progress / p2.si_time;
  c.si_excluded_windows = p2.si_excluded_windows;
  if (p2.sweep.busy_ticks() > 0) {
    c.occupancy = p2.sweep.inside_ticks() / static_cast<double>(p2.sweep.busy_ticks());
  }
  c.max_inside = p2.sweep.max_inside;
  for (const auto& t : r.threads_rows) c.busy_threads += t.busy;
  const double alone_mean = p2.by_inside[0].empty() ? 0 : p2.by_inside[0].mean();
  for (unsigned k = 0; k < kInsideRows; ++k) {
    const FineHistogram& h = p2.by_inside[k];
    if (h.empty()) continue;
    InsideRow row;
    row.inside = k + 1;
    row.calls = h.total();
    row.mean_ns = to_ns(h.mean());
    row.p50_ns = to_ns(static_cast<double>(h.quantile(0.5)));
    row.p99_ns = to_ns(static_cast<double>(h.quantile(0.99)));
    if (alone_mean > 0) row.vs_alone = h.mean() / alone_mean;
    c.by_inside.push_back(row);
  }

  ContentionInputs evidence;
  evidence.allocating = measure_exclusion(p2.exclusion.cells(CallGroup::Allocating));
  evidence.freeing = measure_exclusion(p2.exclusion.cells(CallGroup::Freeing));
  evidence.ends = coincidence.all();
  evidence.ends_across = coincidence.across_classes();
  evidence.ends_near_ns = to_ns(static_cast<double>(coincidence.near_ticks()));
  evidence.busy_threads = c.busy_threads;
  evidence.calling_threads = static_cast<uint32_t>(busy_scale(profile.threads).calling_threads);
  evidence.timed = r.timed;
  evidence.sample_every = r.sample_every;
  evidence.rusage_samples = p2.rusage_samples;
  evidence.peers = p2.peers.measure();
  evidence.rusage_blocked = p2.rusage_blocked;
  evidence.rusage_preempted = p2.rusage_preempted;
  evidence.slow_switched = p2.slow_switched;
  evidence.slow_slept = p2.slow_slept;
  evidence.slow_preempted = p2.slow_preempted;
  evidence.slow_alone_switched = p2.slow_alone_switched;
  evidence.slow_alone_slept = p2.slow_alone_slept;
  evidence.slow_allocating_switched = p2.slow_allocating_switched;
  evidence.slow_allocating_slept = p2.slow_allocating_slept;
  evidence.sleep_pairs = p2.sleep_pairs;
  evidence.switches_recorded =
      profile.calibration && (profile.calibration->mode_flags & format::kModeSwitches) != 0;
  evidence.holds_recorded = profile.calibration && (profile.calibration->mode_flags & format::kModeHolds) != 0;
  if (profile.process) {
    const auto& info = profile.process->info;
    evidence.cpus = info.cpus_allowed ? info.cpus_allowed : info.cpus_online;
  }
  evidence.max_live_threads = profile.end ? profile.end->max_live_threads : static_cast<uint32_t>(profile.threads.size());
  evidence.wall_seconds = r.wall_ns ? *r.wall_ns / 1e9 : 0;
  for (const auto& row : c.by_inside)
    if (row.inside == 1) evidence.alone_median_ns = row.p50_ns;
  evidence.calls = r.calls;
  evidence.sparse_calls = r.sparse_calls;
  evidence.lock_test = read_lock_test(profile.lock_test);
  evidence.allocator_locks = measure_allocator_locks(profile);
  evidence.allocator_time_ns = r.allocator_time_ns;
  if (r.allocator_time_ns > 0) evidence.allocator_lock_share = evidence.allocator_locks.wait_ns / r.allocator_time_ns;
  c.verdict = judge_contention(evidence);
}

}  // namespace

}  // namespace cost

double thread_call_ticks(const ThreadProfile& t) {
  const Counters all = t.total();
  const double mean = all.timed ? static_cast<double>(all.timed_ticks) / static_cast<double>(all.timed) : 0;
  double ticks = 0;
  for (const auto& [key, cell] : t.cells) {
    const Counters& c = cell.counters;
    ticks += static_cast<double>(c.calls) *
             (c.timed ? static_cast<double>(c.timed_ticks) / static_cast<double>(c.timed) : mean);
  }
  return ticks;
}

BusyScale busy_scale(const std::vector<ThreadProfile>& threads) {
  BusyScale s;
  for (const ThreadProfile& t : threads) {
    const uint64_t calls = t.total().calls;
    s.calls += calls;
    s.calling_threads += calls > 0;
    s.call_ticks += thread_call_ticks(t);
  }
  return s;
}

bool busy_thread(const ThreadProfile& t, const BusyScale& all) {
  constexpr double kShare = 0.01;      // of all calls (or of their time), …
  constexpr double kOfMean = 0.5;      // … or of the mean calling thread's, whichever is less
  const double share =
      all.calling_threads ? std::min(kShare, kOfMean / static_cast<double>(all.calling_threads)) : kShare;
  const uint64_t calls = t.total().calls;
  if (calls == 0) return false;
  if (static_cast<double>(calls) >= share * static_cast<double>(all.calls)) return true;
  // By time, a thread must also have spent a tenth of its own life in its calls: a main thread
  // that only sets up and joins its workers makes a few long calls (rings of blocks, each a page
  // fault or a system call) that can weigh 1 % of all calls' time when the workers' calls are few.
  constexpr double kOwnLife = 0.1;
  const double ticks = thread_call_ticks(t);
  return ticks > 0 && ticks >= share * all.call_ticks && ticks >= kOwnLife * static_cast<double>(t.active_ticks());
}

const char* grouping_name(ReportGrouping by) {
  switch (by) {
    case ReportGrouping::Class: return "class";
    case ReportGrouping::Bucket: return "bucket";
    case ReportGrouping::Thread: return "thread";
    case ReportGrouping::Shape: return "shape";
    case ReportGrouping::Callsite: return "callsite";
  }
  return "class";
}

CostReport analyze_profile(const std::filesystem::path& path, const CostOptions& options) {
  using namespace cost;
  const std::optional<format::Calibration> cal0 = read_calibration(path);
  const double hz0 = cal0 && cal0->tick_hz ? static_cast<double>(cal0->tick_hz) : 1e9;
  const SweepConfig sweep_config = cal0 ? sweep_config_for(*cal0, hz0) : SweepConfig{};
  const double ticks_per_us0 = hz0 / 1e6;

  Pass1 p1;
  const Profile profile = pass1(path, sweep_config, ticks_per_us0, block_threshold_ticks(cal0, ticks_per_us0), p1);

  const std::optional<format::Calibration>& cal = profile.calibration;
  const Model model = learn(p1, profile, cal);

  // The size classes: the model estimates on the allocator's own classes whatever the grouping
  // (so that every view of a profile rests on one estimate); `--by bucket` shows the estimate
  // apportioned to allocscope's buckets.
  const ClassGrid grid = class_grid(profile, options.by);

  ModelNotes notes;
  std::vector<std::vector<double>> phi;
  for (const auto& t : profile.threads) phi.push_back(fallback_blocked(t, model, notes.fallback_blocked_calls));

  Pass2 p2;
  p2.peers.expect(profile.peer_waits, (profile.mode_flags() & format::kModePeerWaits) != 0,
                  static_cast<uint64_t>(std::llround(profile.clock.hz() * 1e-9 * format::kSwitchSlowNs)),
                  static_cast<uint64_t>(std::llround(profile.clock.hz() * 1e-9 * kHoldReleaseNs)));
  TimelineBuilder timeline(profile, sweep_config);
  // Whether calls of different threads end at the same moments (completion_coincidence.h).
  CoincidenceTally coincidence(clock_step_of(p1.raw.counts(), p1.raw.total()),
                               static_cast<uint64_t>(std::ceil(profile.clock.hz() * kCoincidenceNearSeconds)));
  pass2(path, profile, p1, model, phi, grid, sweep_config, p2, timeline, coincidence);

  CostReport r = describe_profile(profile, grid, options.by);
  ReleaseTotals release_totals;
  estimate_calls(r, notes, release_totals, profile, grid, p1, p2, model);

  measure_contention(r, p2, coincidence, profile);

  note_model(notes, profile, p1, p2, model, release_totals, sweep_config);
  r.timeline = timeline.finish();
  r.model = std::move(notes);
  std::map<uint32_t, double> lifetimes;
  for (const auto& t : r.threads_rows) lifetimes[t.serial] = t.lifetime_ns;
  r.locks = analyze_locks(profile, r.thread_time_ns, lifetimes);
  r.cpu = cpu_parts(profile, r.threads_rows);
  r.verdict = make_verdict(r);
  return r;
}

}  // namespace allocscope
