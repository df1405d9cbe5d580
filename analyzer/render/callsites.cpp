#include "render/callsites.h"

#include <fmt/format.h>

#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

using Align = TextTable::Align;

}  // namespace

void write_callsite_fields(JsonWriter& w, const CallSiteReport& r) {
  w.field("stack_calls", r.calls_with_stack).field("stackless_calls", r.calls_without_stack);
  w.field("stack_time_ns", r.time_with_stack_ns).field("stackless_time_ns", r.time_without_stack_ns);
  w.field("time_estimated", r.estimated).field("allocator_time_ns", static_cast<int64_t>(std::llround(r.allocator_time_ns)));
  w.field("stacks", r.stacks).field("sites", r.sites);
  w.key("callsites").begin_array();
  for (const CallSiteRow& c : r.rows) {
    w.begin_object();
    w.field("site", c.site).field("location", c.location).field("module", c.module);
    w.key("chain").begin_array();
    for (const auto& name : c.chain) w.value(name);
    w.end_array();
    w.field("inlined", c.inlined);
    w.field("size_known", c.size_known).key("lo");
    c.size_known ? w.value(c.lo) : w.null();
    w.key("hi");
    c.size_known && c.hi != ~uint64_t{0} ? w.value(c.hi) : w.null();
    w.field("label", c.label).field("calls", c.calls).field("time_ns", c.time_ns).field("bytes", c.bytes);
    w.field("leaked_blocks", c.leaked_blocks).field("leaked_bytes", c.leaked_bytes);
    w.key("ops").begin_object();
    for (unsigned op = 0; op < kOpSlots; ++op) {
      if (c.calls_by_op[op]) w.field(op_label(op), c.calls_by_op[op]);
    }
    w.end_object();
    w.end_object();
  }
  w.end_array();
}

std::string callsites_json(const CallSiteReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-callsites/1");
  w.field("file", r.file).field("program", r.program).field("trace", r.trace);
  w.field("class_table", r.class_table).field("calls", r.calls);
  write_callsite_fields(w, r);
  w.end_object();
  out += '\n';
  return out;
}

std::string callsites_text(const CallSiteReport& r) {
  return fmt::format("Call sites of {}\n", r.program.empty() ? r.file : r.program) + callsites_body_text(r);
}

std::string callsites_body_text(const CallSiteReport& r, size_t width) {
  std::string out;
  if (r.stacks == 0) {
    out += "  This profile holds no call stacks: record with `allocscope record --stacks` (or --trace with\n"
           "  stacks) to attribute calls to call sites.\n";
    return out;
  }
  out += fmt::format("  {} of {} {} carry a stack ({} distinct stacks, {} call sites)\n\n",
                     group_digits(r.calls_with_stack), group_digits(r.calls), r.trace ? "calls" : "timed calls",
                     group_digits(r.stacks), group_digits(r.sites));
  if (r.estimated) {
    out += fmt::format("  time: the report's estimate of allocator time, {} in all: {} at these stacks,\n"
                       "  {} without a stack; apportioned over the stacks by their own {}\n\n",
                       format_duration_ns(r.allocator_time_ns), format_duration_ns(static_cast<double>(r.time_with_stack_ns)),
                       format_duration_ns(static_cast<double>(r.time_without_stack_ns)),
                       r.trace ? "calls' times" : "timed calls (a sample)");
  }
  TextTable table({{"size class", Align::Left}, {"call site", Align::Left}, {"where", Align::Left},
                   {"calls"}, {"time"}, {"bytes"}, {"leaked"}});
  std::string last_class;
  for (const CallSiteRow& c : r.rows) {
    const std::string cls = c.size_known ? size_range_text(c.lo, c.hi) : "size unknown";
    std::string chain;
    for (size_t i = 0; i < c.chain.size(); ++i) {
      chain += (i ? " ← " : "") + c.chain[i];
      if (i < c.inlined) chain += " (inlined)";
    }
    table.add_row({cls == last_class ? "" : cls, chain, c.location.empty() ? c.module : c.location,
                   group_digits(c.calls), format_duration_ns(static_cast<double>(c.time_ns)), format_bytes(c.bytes),
                   c.leaked_blocks ? fmt::format("{} ({})", group_digits(c.leaked_blocks), format_bytes(c.leaked_bytes))
                                   : ""});
    last_class = cls;
  }
  if (width) {  // the chain gives way first, then where, then (as in the class tables) the class
    table.shrink_to_fit(1, width, 20);
    table.shrink_to_fit(2, width, 10);
    table.shrink_to_fit(0, width, 12);
  }
  out += table.render();
  return out;
}

}  // namespace allocscope
