// The JSON rendering of `allocscope report --json`.  The schema is documented in docs/analysis.md
// ("report --json"); keep the two in step.  Durations are integer nanoseconds, shares are
// fractions rounded to 4 decimals, absent values are null.
#include <cmath>

#include "util/json_writer.h"
#include "render/report.h"
#include "render/report_notes.h"
#include "render/report_verdict.h"
#include "render/callsites.h"
#include "render/cpu_parts.h"
#include "render/lock_report.h"
#include "render/rusage_json.h"
#include "render/shapes.h"
#include "render/contention_wording.h"
#include "profile/format_names.h"
#include "profile/thread_profile.h"

namespace allocscope {

namespace {

double ratio(double v) { return std::round(v * 1e3) / 1e3; }

void write_split(JsonWriter& w, const TimeSplit& s) {
  w.field("fast_ns", json_ns(s.fast_ns)).field("slow_ns", json_ns(s.slow_ns)).field("wait_ns", json_ns(s.wait_ns));
}

void write_optional_ns(JsonWriter& w, const char* key, std::optional<double> v) {
  w.key(key);
  v ? w.value(json_ns(*v)) : w.null();
}

void write_class(JsonWriter& w, const ClassRow& c) {
  w.begin_object();
  w.key("lo");
  c.size_known ? w.value(c.lo) : w.null();
  w.key("hi");
  c.size_known ? w.value(c.hi) : w.null();
  w.field("label", c.label).field("size_known", c.size_known);
  w.field("calls", c.calls).field("call_share", json_fraction(c.call_share)).field("bytes", c.bytes);
  w.field("timed", c.timed);
  const LatencySummary* l = c.latency ? &*c.latency : nullptr;
  write_optional_ns(w, "p50_ns", l ? std::optional(l->p50_ns) : std::nullopt);
  write_optional_ns(w, "p90_ns", l ? std::optional(l->p90_ns) : std::nullopt);
  write_optional_ns(w, "p99_ns", l ? std::optional(l->p99_ns) : std::nullopt);
  write_optional_ns(w, "p999_ns", l ? std::optional(l->p999_ns) : std::nullopt);
  write_optional_ns(w, "max_ns", l ? std::optional(l->max_ns) : std::nullopt);
  w.field("time_ns", json_ns(c.time_ns)).field("time_error_ns", json_ns(c.error_ns)).field("unsure", c.unsure);
  w.field("share", json_fraction(c.time_share));
  write_split(w, c.split);
  w.key("ops").begin_object();
  for (unsigned op = 0; op < kOpSlots; ++op) {
    if (c.calls_by_op[op] == 0) continue;
    w.key(op_label(op)).begin_object();
    w.field("calls", c.calls_by_op[op]).field("time_ns", json_ns(c.time_by_op[op])).end_object();
  }
  w.end_object();
  w.end_object();
}

void write_thread(JsonWriter& w, const ThreadRow& t) {
  w.begin_object();
  w.field("serial", t.serial).field("tid", t.tid).field("state", thread_state_name(t.state));
  w.field("lifetime_ns", json_ns(t.lifetime_ns)).field("calls", t.calls).field("timed", t.timed);
  w.field("time_ns", json_ns(t.time_ns)).field("time_error_ns", json_ns(t.error_ns)).field("unsure", t.unsure);
  w.field("share", json_fraction(t.share));
  write_split(w, t.split);
  w.field("capped", t.capped);
  w.field("classified_calls", t.classified).field("contended_calls", t.contended);
  write_rusage(w, t.rusage);
  w.end_object();
}

}  // namespace

void write_contention_verdict(JsonWriter& w, const ContentionVerdict& v) {
  w.field("verdict", contention_kind_name(v.kind));
  w.field("confidence", ratio(v.confidence));
  w.key("evidence").begin_array();
  for (const EvidenceItem& e : contention_evidence(v)) {
    w.begin_object().field("kind", e.kind).field("value", ratio(e.value)).field("meaning", e.meaning).end_object();
  }
  w.end_array();
  w.field("reason", contention_reason(v));
  w.field("advice", contention_advice(v));
  w.field("blocking", v.blocking).field("oversubscribed", v.oversubscribed);
  w.field("cpus", v.inputs.cpus);
  const LockTestFinding& t = v.inputs.lock_test;
  w.key("lock_test").begin_object();
  w.field("result", lock_test_kind_name(t.kind)).field("detail", t.detail);
  const auto holds = [&](const char* key, const LockTestHolds& h) {
    w.key(key).begin_object().field("told", h.told).field("stopped", h.stopped);
    w.field("stopped_later", h.stopped_later).field("preempted", h.preempted).end_object();
  };
  holds("apart", t.apart);
  holds("same_size", t.same);
  holds("between_calls", t.between);
  w.end_object();
}

namespace {

void write_contention(JsonWriter& w, const CostReport& r) {
  const Contention& c = r.contention;
  w.key("contention").begin_object();
  w.field("wait_share", json_fraction(c.wait_share));
  w.key("serialization_index");
  c.serialization_index ? w.value(ratio(*c.serialization_index)) : w.null();
  w.field("si_calls", c.si_calls).field("si_excluded_windows", c.si_excluded_windows);
  w.field("contended_time_share", json_fraction(c.contended_time_share));
  w.field("classified_calls", c.classified).field("contended_calls", c.contended);
  w.field("contended_share", json_fraction(c.contended_share));
  w.key("occupancy");
  c.occupancy ? w.value(ratio(*c.occupancy)) : w.null();
  w.field("max_inside", c.max_inside).field("busy_threads", c.busy_threads);
  w.key("by_inside").begin_array();
  for (const InsideRow& row : c.by_inside) {
    w.begin_object().field("inside", row.inside).field("calls", row.calls);
    w.field("mean_ns", json_ns(row.mean_ns)).field("p50_ns", json_ns(row.p50_ns)).field("p99_ns", json_ns(row.p99_ns));
    w.key("vs_alone");
    row.vs_alone ? w.value(ratio(*row.vs_alone)) : w.null();
    w.end_object();
  }
  w.end_array();
  write_contention_verdict(w, c.verdict);
  w.end_object();
}

void write_model(JsonWriter& w, const CostReport& r) {
  const ModelNotes& m = r.model;
  w.key("model").begin_object();
  // Picoseconds: the overhead is often below a nanosecond, which integer ns would round to 0.
  w.field("probe_overhead_ps", json_ns(m.probe_overhead_ns * 1000)).field("window_trim_ns", json_ns(m.window_trim_ns));
  w.field("block_threshold_ns", json_ns(m.block_threshold_ns));
  w.field("events", m.events).field("events_dropped", m.events_dropped).field("late_events", m.late_events);
  w.field("windows", m.windows).field("rusage_samples", m.rusage_samples).field("rusage_blocked", m.rusage_blocked);
  w.field("evidence_bins", m.evidence_bins);
  w.field("fallback_blocked_calls", static_cast<uint64_t>(std::llround(m.fallback_blocked_calls)));
  w.field("capped_threads", m.capped_threads);
  w.field("blocks_made", m.blocks_made).field("blocks_released", m.blocks_released);
  w.field("unreleased_blocks", m.unreleased_blocks);
  w.key("caveats").begin_array();
  for (const auto& caveat : report_caveats(r)) w.value(caveat);
  w.end_array();
  w.end_object();
}

}  // namespace

std::string report_json(const CostReport& r, const ReportDetails& details) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-report/1");
  w.field("file", r.file).field("program", r.program);
  w.key("args").begin_array();
  for (const auto& arg : r.args) w.value(arg);
  w.end_array();
  w.field("pid", r.pid).field("libc", r.libc).field("libc_version", r.libc_version).field("allocator", r.allocator);
  w.field("class_table", r.class_table).field("class_table_source", r.class_table_source);
  w.field("by", grouping_name(r.by)).field("complete", r.complete);
  write_optional_ns(w, "wall_ns", r.wall_ns);
  w.field("threads", r.threads).field("busy_threads", r.contention.busy_threads);
  w.field("calls", r.calls).field("timed_calls", r.timed).field("sample_every", r.sample_every);
  w.field("thread_time_ns", json_ns(r.thread_time_ns));
  w.field("allocator_time_ns", json_ns(r.allocator_time_ns)).field("allocator_time_error_ns", json_ns(r.allocator_error_ns));
  w.field("allocator_time_unsure", r.allocator_unsure);
  w.key("error_bounds").begin_object();
  w.field("method", error_method(r.error)).field("windows", r.error.windows).field("clusters", r.error.clusters);
  w.field("sampled_fraction", json_fraction(r.error.sampled_fraction));
  w.key("wait_share_bound");
  r.error.wait_share_bound ? w.value(json_fraction(*r.error.wait_share_bound)) : w.null();
  w.key("fast_share_bound");
  r.error.fast_share_bound ? w.value(json_fraction(*r.error.fast_share_bound)) : w.null();
  w.end_object();
  w.field("allocator_share", json_fraction(r.allocator_share));
  write_split(w, r.split);
  w.field("wait_share", json_fraction(r.contention.wait_share));
  w.key("serialization_index");
  r.contention.serialization_index ? w.value(ratio(*r.contention.serialization_index)) : w.null();
  w.key("verdict").begin_object().field("dominant", verdict_name(r.verdict.kind)).field("text", verdict_text(r)).end_object();
  write_contention(w, r);
  w.key("locks");
  write_lock_report_json(w, r.locks);
  w.key("cpu");
  write_cpu_parts_json(w, r.cpu);
  w.key("classes").begin_array();
  for (const ClassRow& c : r.classes) write_class(w, c);
  w.end_array();
  w.key("per_thread").begin_array();
  for (const ThreadRow& t : r.threads_rows) write_thread(w, t);
  w.end_array();
  // The estimate every view apportions (docs/analysis.md, "One estimate, many views").
  w.field("estimate_table", r.estimate_table);
  w.key("cells").begin_array();
  for (const EstimateCell& c : r.cells) {
    w.begin_object().key("class");
    c.cls == kEstimateNoClass ? w.null() : w.value(c.cls);
    w.field("op", op_name(c.op)).field("calls", c.calls).field("timed", c.timed).field("time_ns", json_ns(c.time_ns));
    write_split(w, c.split);
    w.end_object();
  }
  w.end_array();
  write_model(w, r);
  if (details.shapes) {
    w.field("has_trace", true);
    write_shape_fields(w, *details.shapes);
    write_shape_groups(w, *details.shapes);
  } else if (r.by == ReportGrouping::Shape) {
    w.field("has_trace", false).key("shapes").null().key("shape_groups").null();
  }
  if (details.callsites) write_callsite_fields(w, *details.callsites);
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace allocscope
