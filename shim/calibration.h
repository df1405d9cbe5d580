// shim/calibration.h — start-up measurement of the tick clock and of the probes' own costs.
//
// Runs once per program image (≈0.5 ms): picks TSC or CLOCK_MONOTONIC, measures ticks per second
// over a short spin against CLOCK_MONOTONIC, and times the probes the analyzer needs to interpret
// latencies (a clock read, a trivial syscall, an uncontended FUTEX_WAKE, a FUTEX_WAIT that returns
// at once, getrusage and CLOCK_THREAD_CPUTIME_ID).  Medians, in ticks.  Also picks the seed of
// the timing windows' offsets (Calibration::window_seed).
#pragma once
#include "allocscope/format.h"

namespace allocscope {

void calibrate(format::Calibration& out);

}  // namespace allocscope
