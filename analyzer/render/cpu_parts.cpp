#include "render/cpu_parts.h"

#include <fmt/format.h>

#include "util/json_writer.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

std::string part_text(const CpuPart& p) {
  return fmt::format("{:>6}  {} ± {}  ({} samples)", format_percent(p.share, 1), format_duration_ns(p.ns),
                     format_duration_ns(p.error_ns), group_digits(p.samples));
}

}  // namespace

std::vector<NamedCpuPart> named_cpu_parts(const CpuParts& c) {
  return {{"inside allocator calls", "allocator", &c.allocator},
          {"inside lock calls", "locks", &c.locks},
          {"inside condition waits", "cond", &c.cond},
          {"the shim's own work", "shim", &c.shim},
          {"elsewhere", "elsewhere", &c.elsewhere}};
}

std::string cpu_section_text(const CpuParts& c) {
  if (!c.recorded) return "";
  TextTable t({{"", TextTable::Align::Left}, {"", TextTable::Align::Left}});
  t.add_row({"CPU time (user + system)", fmt::format("{} of {} thread(s), {} samples of their CPU time",
                                                     format_duration_ns(c.cpu_ns), c.threads, group_digits(c.samples))});
  for (const NamedCpuPart& p : named_cpu_parts(c))
    t.add_row({p.label, part_text(*p.part) + (p.part == &c.locks ? "  (the program's pthread locks and unlocks)" : "")});
  if (c.unsampled_ns > 0)
    t.add_row({"not sampled", fmt::format("{} (threads without a sample: they ran less than a tick, or blocked the shim's signal)", format_duration_ns(c.unsampled_ns))});
  return t.render();
}

// As the rest of report --json: durations in integer nanoseconds, shares rounded to 4 decimals.
void write_cpu_parts_json(JsonWriter& w, const CpuParts& c) {
  w.begin_object();
  w.field("recorded", c.recorded);
  if (c.recorded) {
    w.field("cpu_ns", json_ns(c.cpu_ns)).field("threads", c.threads).field("samples", c.samples);
    w.field("unsampled_ns", json_ns(c.unsampled_ns));
    for (const NamedCpuPart& n : named_cpu_parts(c)) {
      const CpuPart& p = *n.part;
      w.key(n.key).begin_object();
      w.field("samples", p.samples).field("ns", json_ns(p.ns)).field("error_ns", json_ns(p.error_ns));
      w.field("share", json_fraction(p.share));
      w.end_object();
    }
  }
  w.end_object();
}

}  // namespace allocscope
