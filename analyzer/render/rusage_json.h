// rusage_json.h — a thread's resource usage (format::Rusage) as JSON, for dump and report.
#pragma once
#include "allocscope/format.h"
#include "profile/thread_profile.h"  // kRusageUnavailable
#include "util/json_writer.h"

namespace allocscope {

// Writes "rusage": {utime_us, stime_us, minflt, majflt, nvcsw, nivcsw}, null where unavailable.
void write_rusage(JsonWriter& w, const format::Rusage& r);

}  // namespace allocscope
