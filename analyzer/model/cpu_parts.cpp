// cpu_parts.cpp — see cpu_parts.h.
#include "model/cpu_parts.h"

#include <algorithm>
#include <cmath>

#include "model/cost_model.h"
#include "profile/profile.h"

namespace allocscope {

namespace {

// Adds one thread's part: `k` of its `n` samples, of its `cpu_ns`; the variance of the estimate
// goes into `var` (a share of 0 or 1 is not known exactly: never below one sample's).
void add_part(CpuPart& part, double& var, uint64_t k, uint64_t n, double cpu_ns) {
  const double p = static_cast<double>(k) / static_cast<double>(n);
  part.samples += k;
  part.ns += p * cpu_ns;
  var += cpu_ns * cpu_ns * std::max(p * (1 - p), 1.0 / static_cast<double>(n)) / static_cast<double>(n);
}

}  // namespace

CpuParts cpu_parts(const Profile& profile, const std::vector<ThreadRow>& threads) {
  CpuParts c;
  c.recorded = profile.calibration && (profile.calibration->mode_flags & format::kModeCpuSamples);
  if (!c.recorded) return c;
  double var[5] = {0, 0, 0, 0, 0};
  for (const ThreadRow& t : threads) {
    if (t.rusage.utime_us == kRusageUnavailable || t.rusage.stime_us == kRusageUnavailable) continue;
    const double cpu_ns = static_cast<double>(t.rusage.utime_us + t.rusage.stime_us) * 1e3;
    c.cpu_ns += cpu_ns;
    const auto it = profile.cpu_samples.find(t.serial);
    if (it == profile.cpu_samples.end() || it->second.samples == 0) {
      c.unsampled_ns += cpu_ns;
      continue;
    }
    const format::CpuSamples& s = it->second;
    ++c.threads;
    c.samples += s.samples;
    const uint64_t elsewhere = s.samples - s.in_allocator - s.in_shim - s.in_locks - s.in_cond;
    add_part(c.allocator, var[0], s.in_allocator, s.samples, cpu_ns);
    add_part(c.shim, var[1], s.in_shim, s.samples, cpu_ns);
    add_part(c.locks, var[2], s.in_locks, s.samples, cpu_ns);
    add_part(c.cond, var[3], s.in_cond, s.samples, cpu_ns);
    add_part(c.elsewhere, var[4], elsewhere, s.samples, cpu_ns);
  }
  CpuPart* parts[5] = {&c.allocator, &c.shim, &c.locks, &c.cond, &c.elsewhere};
  for (int i = 0; i < 5; ++i) {
    parts[i]->error_ns = 2 * std::sqrt(var[i]);
    parts[i]->share = c.cpu_ns > 0 ? parts[i]->ns / c.cpu_ns : 0;
  }
  return c;
}

}  // namespace allocscope
