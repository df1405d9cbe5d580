#include "render/rusage_json.h"

namespace allocscope {

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
