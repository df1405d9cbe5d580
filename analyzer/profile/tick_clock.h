// tick_clock.h — converts ticks of a profile's clock (format.h Calibration::clock) to nanoseconds.
//
// The rate comes from the Calibration chunk (measured over a short window at start-up).  When the
// file also holds a later (tick, CLOCK_MONOTONIC ns) pair — a snapshot's or ProcessEnd's — the
// rate is refined over the wider span from the calibration's first pair to that one, which
// averages out the jitter of the short start-up window.  A refinement that disagrees wildly with
// the calibration means a bad pair, and is not used.  Without calibration, the rate is estimated
// from the process start pair, or, failing that, ticks are assumed to be nanoseconds.
#pragma once
#include <cstdint>
#include <optional>

#include "allocscope/format.h"

namespace allocscope {

struct TickPair {
  uint64_t tick = 0;
  uint64_t mono_ns = 0;
};

enum class TickRateSource { Calibration, Refined, Estimated, Assumed };

class TickClock {
 public:
  TickClock() = default;  // 1 tick = 1 ns, Assumed

  // `start` is the process start pair, `latest` the latest pair found in the file.
  static TickClock from_profile(const std::optional<format::Calibration>& calibration,
                                std::optional<TickPair> start, std::optional<TickPair> latest);

  double hz() const { return hz_; }
  TickRateSource source() const { return source_; }
  uint64_t to_ns(uint64_t ticks) const;       // rounded, saturated
  double to_ns_exact(double ticks) const;

 private:
  TickClock(double hz, TickRateSource source) : hz_(hz), source_(source) {}

  double hz_ = 1e9;
  TickRateSource source_ = TickRateSource::Assumed;
};

// "calibration", "refined", "estimated", "assumed".
const char* tick_rate_source_name(TickRateSource source);

}  // namespace allocscope
