#include "profile/thread_profile.h"

#include "util/json_writer.h"

namespace allocscope {

OpTable ThreadProfile::totals_by_op() const {
  OpTable table{};
  add_cells_to(table, cells);
  return table;
}

Counters ThreadProfile::total() const {
  Counters sum;
  for (const auto& [key, cell] : cells) sum.add(cell.counters);
  return sum;
}

void write_rusage(JsonWriter& w, const format::Rusage& r) {
  auto field = [&](const char* key, uint64_t v) {
    w.key(key);
    v == kRusageUnavailable ? w.null() : w.value(v);
  };
  w.key("rusage").begin_object();
  field("utime_us", r.utime_us);
  field("stime_us", r.stime_us);
  field("minflt", r.minflt);
  field("majflt", r.majflt);
  field("nvcsw", r.nvcsw);
  field("nivcsw", r.nivcsw);
  w.end_object();
}

}  // namespace allocscope
