#include "profile/tick_clock.h"

#include <cmath>
#include <limits>

namespace allocscope {

namespace {

// A refined rate further than this from the calibrated one is distrusted.
constexpr double kMaxRefinementDeviation = 0.10;
// Estimating a rate without calibration needs at least this span.
constexpr uint64_t kMinEstimateSpanNs = 1'000'000;

std::optional<double> rate_between(TickPair from, TickPair to) {
  if (to.tick <= from.tick || to.mono_ns <= from.mono_ns) return std::nullopt;
  return static_cast<double>(to.tick - from.tick) * 1e9 / static_cast<double>(to.mono_ns - from.mono_ns);
}

std::optional<double> refine(const format::Calibration& cal, std::optional<TickPair> latest) {
  if (!latest || cal.clock != static_cast<uint8_t>(format::Clock::Tsc)) return std::nullopt;
  const TickPair start{cal.calib_tick0, cal.calib_mono0};
  const uint64_t calibration_span = cal.calib_mono1 > cal.calib_mono0 ? cal.calib_mono1 - cal.calib_mono0 : 0;
  if (latest->mono_ns <= start.mono_ns || latest->mono_ns - start.mono_ns <= calibration_span) {
    return std::nullopt;
  }
  const auto rate = rate_between(start, *latest);
  const double calibrated = static_cast<double>(cal.tick_hz);
  if (!rate || std::fabs(*rate / calibrated - 1.0) > kMaxRefinementDeviation) return std::nullopt;
  return rate;
}

}  // namespace

TickClock TickClock::from_profile(const std::optional<format::Calibration>& calibration,
                                  std::optional<TickPair> start, std::optional<TickPair> latest) {
  if (calibration) {
    if (const auto refined = refine(*calibration, latest)) return {*refined, TickRateSource::Refined};
    return {static_cast<double>(calibration->tick_hz), TickRateSource::Calibration};
  }
  if (start && latest && latest->mono_ns >= start->mono_ns + kMinEstimateSpanNs) {
    if (const auto rate = rate_between(*start, *latest)) return {*rate, TickRateSource::Estimated};
  }
  return {};
}

uint64_t TickClock::to_ns(uint64_t ticks) const {
  const long double ns = static_cast<long double>(ticks) * 1e9L / static_cast<long double>(hz_);
  constexpr auto kMax = static_cast<long double>(std::numeric_limits<uint64_t>::max());
  if (ns >= kMax) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(std::roundl(ns));
}

double TickClock::to_ns_exact(double ticks) const { return ticks * 1e9 / hz_; }

const char* tick_rate_source_name(TickRateSource source) {
  switch (source) {
    case TickRateSource::Calibration: return "calibration";
    case TickRateSource::Refined: return "refined";
    case TickRateSource::Estimated: return "estimated";
    case TickRateSource::Assumed: return "assumed";
  }
  return "unknown";
}

}  // namespace allocscope
