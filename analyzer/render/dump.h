// dump.h — `allocscope dump FILE [--json]`: everything one profile holds.
//
// dump_text() renders aligned tables (process, calibration, threads, per-operation totals, latency
// per operation, non-empty size buckets with per-operation calls/bytes, events, notes).
// dump_json() renders the same content as one JSON document (shape in dump_json.cpp), whose
// numbers add up: bucket calls/bytes and per-thread totals sum to the per-operation totals.
#pragma once
#include <string>

#include "profile/profile.h"

namespace allocscope {

std::string dump_text(const Profile& profile);
std::string dump_json(const Profile& profile);

}  // namespace allocscope
