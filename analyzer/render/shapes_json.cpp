// shapes_json.cpp — the shapes of a trace and the gap between two traces as JSON (shapes.h).
#include "render/shapes.h"

#include <cmath>

namespace allocscope {

namespace {

void write_shape_row(JsonWriter& w, const ShapeRow& s) {
  w.begin_object();
  w.field("lo", s.lo).key("hi");
  s.hi == ~uint64_t{0} ? w.null() : w.value(s.hi);
  w.field("label", s.label).field("lifetime", lifetime_band_name(s.band));
  w.field("cross_thread", s.cross_thread).field("blocks", s.blocks).field("calls", s.calls);
  w.field("time_ns", s.time_ns).field("bytes", s.bytes);
  w.field("min_size", s.min_size).field("max_size", s.max_size);
  w.end_object();
}

}  // namespace

void write_shape_fields(JsonWriter& w, const ShapeReport& r) {
  w.field("cross_thread_frees", r.cross_thread_frees).field("same_thread_frees", r.same_thread_frees);
  w.field("leaked_blocks", r.leaked_blocks).field("leaked_bytes", r.leaked_bytes);
  w.field("peak_live_bytes", r.peak_live_bytes);
  w.key("shapes").begin_array();
  for (const ShapeRow& s : r.shapes) write_shape_row(w, s);
  w.end_array();

  w.field("shapes_time_estimated", r.estimated);
  w.field("shapes_allocator_time_ns", static_cast<int64_t>(std::llround(r.allocator_time_ns)));
  w.field("outside_shapes_ns", static_cast<int64_t>(std::llround(r.outside_shapes_ns)));
  w.key("trace").begin_object();
  w.field("calls", r.calls).field("timed_calls", r.timed_calls).field("threads", r.threads).field("complete", r.complete);
  w.field("class_table", r.class_table);
  w.field("missing_records", r.missing_records).field("repeated_records", r.repeated_records);
  w.field("reordered_steps", r.reordered_steps);
  w.field("blocks", r.blocks).field("frees", r.frees).field("resized", r.resized);
  w.field("unmatched_frees", r.unmatched_frees).field("unmatched_reallocs", r.unmatched_reallocs);
  w.field("null_frees", r.null_frees).field("failed", r.failed).field("reused_live", r.reused_live);
  w.field("peak_live_at_ns", r.peak_live_at_ns).field("end_live_bytes", r.end_live_bytes);

  w.key("lifetimes").begin_array();
  for (const ClassLifetimeRow& c : r.classes) {
    w.begin_object();
    w.field("lo", c.lo).key("hi");
    c.hi == ~uint64_t{0} ? w.null() : w.value(c.hi);
    w.field("label", c.label).field("blocks", c.blocks).field("bytes", c.bytes);
    w.field("freed", c.freed).field("same_thread", c.same_thread).field("cross_thread", c.cross_thread);
    w.field("leaked", c.leaked).field("leaked_bytes", c.leaked_bytes);
    w.key("bands").begin_object();
    for (unsigned b = 0; b < kLifetimeBands; ++b) {
      w.field(lifetime_band_name(static_cast<LifetimeBand>(b)), c.bands[b]);
    }
    w.end_object();
    w.field("p50_ns", c.p50_ns).field("p90_ns", c.p90_ns).field("p99_ns", c.p99_ns).field("max_ns", c.max_ns);
    w.field("allocs_between_p50", c.between_p50).field("allocs_between_p90", c.between_p90);
    w.field("allocs_between_p99", c.between_p99).field("allocs_between_mean", c.between_mean);
    w.end_object();
  }
  w.end_array();

  const ChainSummary& ch = r.realloc;
  w.key("realloc_chains").begin_object();
  w.field("chains", ch.chains).field("reallocs", ch.steps).field("in_place", ch.in_place);
  w.field("moved", ch.moved).field("grew", ch.grew).field("shrank", ch.shrank).field("same_size", ch.same);
  w.field("max_length", ch.max_length);
  w.field("mean_growth", ch.mean_growth).field("mean_step_growth", ch.mean_step_growth);
  w.key("by_length").begin_array();
  for (const auto& [length, chains] : ch.by_length) {
    w.begin_object().field("length", length).field("chains", chains).end_object();
  }
  w.end_array();
  w.end_object();

  const ConcurrencySummary& cs = r.concurrency;
  w.key("concurrency").begin_object();
  w.field("max_inside", cs.max_inside).field("span_ns", cs.span_ns).field("busy_ns", cs.busy_ns);
  w.field("contended_ns", cs.contended_ns).field("mean_inside", cs.mean_inside);
  w.field("serialization_index", cs.serialization_index).field("si_calls", cs.si_calls);
  w.field("alone_calls", cs.alone_calls).field("contended_calls", cs.contended_calls);
  // Picoseconds: the probe overhead summed over calls can be below a nanosecond.
  w.field("overhead_ps", static_cast<uint64_t>(std::llround(std::max(0.0, cs.overhead_ns) * 1000)));
  w.field("untimed_calls", cs.untimed_calls);
  w.key("time_at_ns").begin_array();
  for (uint64_t ns : cs.time_at_ns) w.value(ns);
  w.end_array();
  w.end_object();

  w.key("timeline").begin_object();
  w.field("slot_ns", r.slot_ns);
  w.key("points").begin_array();
  for (const TimelinePoint& p : r.timeline) {
    w.begin_object().field("t_ns", p.t_ns).field("max_live_bytes", p.max_live_bytes);
    w.field("live_bytes", p.live_bytes).field("max_inside", p.max_inside);
    w.field("mean_inside", std::round(p.mean_inside * 1000) / 1000).end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();
}

void write_shape_groups(JsonWriter& w, const ShapeReport& r) {
  const GroupTotals totals = group_totals(r.groups);
  const uint64_t calls = totals.calls, time = totals.time_ns;
  auto share = [](uint64_t part, uint64_t total) {
    return total ? json_fraction(static_cast<double>(part) / static_cast<double>(total)) : 0.0;
  };
  w.key("shape_groups").begin_array();
  for (const ShapeGroupRow& g : r.groups) {
    w.begin_object();
    w.field("lo", g.lo).field("hi", g.hi).field("lifetime", lifetime_group_name(g.key.group));
    w.field("cross_thread", g.key.cross_thread).field("classes", g.classes);
    w.field("description", describe_shape_group(g.lo, g.hi, g.key));
    w.field("blocks", g.blocks).field("calls", g.calls).field("time_ns", g.time_ns).field("bytes", g.bytes);
    w.field("call_share", share(g.calls, calls)).field("time_share", share(g.time_ns, time));
    w.end_object();
  }
  w.end_array();
}

std::string shapes_json(const ShapeReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-shapes/1");
  w.field("file", r.file).field("program", r.program).field("has_trace", r.trace);
  if (r.trace) {
    write_shape_fields(w, r);
    write_shape_groups(w, r);
  }
  w.end_object();
  out += '\n';
  return out;
}

void write_shape_gap(JsonWriter& w, const ShapeGap& gap) {
  w.begin_object();
  w.field("base_ns", gap.base_ns).field("other_ns", gap.other_ns).field("gap_ns", gap.gap_ns);
  w.field("base_outside_shapes_ns", static_cast<int64_t>(std::llround(gap.base_outside_ns)));
  w.field("other_outside_shapes_ns", static_cast<int64_t>(std::llround(gap.other_outside_ns)));
  w.key("groups").begin_array();
  for (const ShapeGapGroup& g : gap.groups) {
    w.begin_object();
    w.field("lo", g.lo).field("hi", g.hi).field("lifetime", lifetime_group_name(g.key.group));
    w.field("cross_thread", g.key.cross_thread).field("classes", g.classes);
    w.field("description", describe_shape_group(g.lo, g.hi, g.key));
    w.field("base_calls", g.base_calls).field("other_calls", g.other_calls);
    w.field("base_ns", g.base_ns).field("other_ns", g.other_ns).field("delta_ns", g.delta_ns);
    w.field("share", g.share);
    w.end_object();
  }
  w.end_array();
  w.key("shapes").begin_array();
  for (const ShapeGapRow& s : gap.rows) {
    w.begin_object();
    w.field("lo", s.lo).key("hi");
    s.hi == ~uint64_t{0} ? w.null() : w.value(s.hi);
    w.field("lifetime", lifetime_band_name(s.band)).field("cross_thread", s.cross_thread);
    w.field("description", describe_shape(s.lo, s.hi, s.band, s.cross_thread));
    w.field("base_calls", s.base_calls).field("other_calls", s.other_calls);
    w.field("base_ns", s.base_ns).field("other_ns", s.other_ns).field("delta_ns", s.delta_ns);
    w.field("share", s.share);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace allocscope
