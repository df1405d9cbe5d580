#include "model/trace_analysis.h"

#include "model/apportion.h"
#include "model/cost_model.h"
#include "profile/peek.h"
#include "util/side_by_side.h"

#include <algorithm>
#include <tuple>
#include <variant>
#include <vector>

#include "allocscope/buckets.h"

namespace allocscope {

const ClassTable& class_table_of(const Profile& profile) {
  const ClassTable* table = nullptr;
  if (profile.process) {
    table = class_table_for(profile.process->allocator, static_cast<format::Libc>(profile.process->info.libc));
  }
  return table ? *table : bucket_class_table();
}

TraceAnalysis analyze_trace(const Profile& profile, const TraceOptions& options,
                            std::span<TraceVisitor* const> extra) {
  TraceAnalysis a;
  a.table = &class_table_of(profile);
  bool any = false;
  for (const auto& [serial, refs] : profile.trace_chunks) {
    for (const TraceChunkRef& ref : refs) {
      if (ref.count == 0) continue;
      a.t0 = any ? std::min(a.t0, ref.first_tick) : ref.first_tick;
      a.t1 = any ? std::max(a.t1, ref.last_tick) : ref.last_tick;
      any = true;
    }
  }
  const format::Calibration* cal = profile.calibration ? &*profile.calibration : nullptr;
  LifetimeTracker lifetimes(*a.table, profile.clock, profile.stacks, a.t0, a.t1, options.timeline_slots);
  ConcurrencyTracker concurrency(cal, a.t0, a.t1, options.timeline_slots);
  std::vector<TraceVisitor*> visitors = {&lifetimes, &concurrency};
  visitors.insert(visitors.end(), extra.begin(), extra.end());
  a.merge = merge_trace(profile, visitors);
  a.lifetimes = std::move(lifetimes.results());
  a.concurrency = concurrency.results();
  return a;
}

namespace {

// The class table named by the Process chunk, which the shim writes first.
const ClassTable& read_class_table(const std::filesystem::path& path) {
  if (const std::optional<ProcessRecord> p = read_process(path)) {
    const ClassTable* t = class_table_for(p->allocator, static_cast<format::Libc>(p->info.libc));
    return t ? *t : bucket_class_table();
  }
  return bucket_class_table();
}

}  // namespace

StackCostSource trace_stack_costs(Profile profile, TraceAnalysis& analysis) {
  StackCostSource out;
  out.profile = std::move(profile);
  out.table = analysis.table ? analysis.table : &class_table_of(out.profile);
  out.trace = true;
  out.costs = std::move(analysis.lifetimes.stack_costs);
  analysis.lifetimes.stack_costs.clear();
  out.calls = analysis.merge.calls;
  return out;
}

StackCostSource load_stack_costs(const std::filesystem::path& path, std::span<TraceVisitor* const> extra,
                                 const EventSink& on_events) {
  StackCostSource out;
  // Sampled events name stacks by (thread, id); the Stacks chunk may come later in the file.
  const ClassTable& table = read_class_table(path);
  std::map<std::tuple<uint32_t, uint32_t, uint8_t, uint32_t>, StackCost> pending;  // thread, id, op, class
  LoadOptions load;
  load.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
    for (const format::Event& e : events) {
      if (e.op >= kOpSlots) continue;
      const bool known = e.bucket < kSizeBuckets;
      const uint64_t size = format::event_size(e);
      const uint32_t cls = known ? static_cast<uint32_t>(table.class_of(size)) : kNoClass;
      StackCost& c = pending[{header.thread_serial, e.stack_id, e.op, cls}];
      ++c.calls;
      c.ticks += e.duration_ticks;
      const bool allocating = allocates(e.op);
      if (allocating && !(e.flags & format::kEvFailed)) c.bytes += size;
    }
    if (on_events) on_events(header, events);
  };
  out.profile = load_profile(path, load);
  if (out.profile.trace_mode() && !out.profile.trace_chunks.empty()) {
    TraceAnalysis a = analyze_trace(out.profile, TraceOptions{0}, extra);
    return trace_stack_costs(std::move(out.profile), a);
  }
  out.table = &table;  // what the events were classed with
  for (const auto& [key, cost] : pending) {
    const auto& [thread, id, op, cls] = key;
    StackCostKey k{out.profile.stacks.find(thread, id), op, cls};
    StackCost& c = out.costs[k];
    c.calls += cost.calls;
    c.ticks += cost.ticks;
    c.bytes += cost.bytes;
    out.calls += cost.calls;
  }
  return out;
}

void apply_estimate(StackCostSource& src, const CostReport& estimate) {
  // A profile whose threads left no counts (no snapshot: cut short) has no estimate to share.
  if (estimate.cells.empty()) return;
  std::vector<ViewCell> cells;
  std::vector<StackCost*> rows;
  for (auto& [key, cost] : src.costs) {
    if (cost.calls == 0 || key.op >= kOpSlots) continue;
    ViewCell c;
    c.row = rows.size();
    c.cls = key.cls == kNoClass ? kEstimateNoClass : key.cls;
    c.op = key.op;
    c.calls = cost.calls;
    c.weight = static_cast<double>(cost.ticks);
    cells.push_back(c);
    rows.push_back(&cost);
  }
  const Apportioned a = apportion_estimate(estimate, cells, rows.size());
  for (auto& [key, cost] : src.costs) cost.time_ns = 0;
  for (size_t i = 0; i < rows.size(); ++i) rows[i]->time_ns = a.row_ns[i];
  for (unsigned op = 0; op < kOpSlots; ++op) {
    if (a.unplaced_ns[op] > 0) {
      StackCost& c = src.costs[StackCostKey{kNoStack, static_cast<uint8_t>(op), kNoClass}];
      c.time_ns = std::max(0.0, c.time_ns) + a.unplaced_ns[op];
    }
  }
  src.estimated = true;
  src.allocator_time_ns = estimate.allocator_time_ns;
}

double cost_ns(const StackCostSource& src, const StackCost& cost) {
  return cost.time_ns >= 0 ? cost.time_ns : static_cast<double>(src.profile.ticks_to_ns(cost.ticks));
}

StackCostSource load_estimated_stack_costs(const std::filesystem::path& path) {
  auto [src, estimate] = side_by_side([&] { return load_stack_costs(path); }, [&] { return analyze_profile(path); });
  apply_estimate(src, estimate);
  return src;
}

}  // namespace allocscope
