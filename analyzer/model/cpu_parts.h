// cpu_parts.h — where the threads' CPU time went, from the shim's CPU samples (format.h CpuSamples).
//
// Each sampled thread's CPU time (its rusage, user + system, at its last snapshot) is shared out by
// the share of its samples taken in each part: inside allocator calls, inside the shim's own work,
// inside the program's traced pthread lock and unlock calls, inside condition waits, and elsewhere
// (docs/analysis.md, "Where the CPU time goes").  A thread whose CPU time is known but that took no
// sample (it ran less than a tick, or blocked the shim's signal all along) counts as `unsampled`;
// a thread whose CPU time is not known (it never wrote a snapshot of its own) counts nowhere.  Each part's bound is 2 standard
// errors of the binomial share of each thread's samples, added over the threads in quadrature.
#pragma once
#include <cstdint>
#include <vector>

#include "allocscope/format.h"

namespace allocscope {

struct Profile;
struct ThreadRow;

struct CpuPart {
  uint64_t samples = 0;
  double ns = 0;         // estimated CPU time
  double error_ns = 0;   // ± 2 standard errors
  double share = 0;      // of CpuParts::cpu_ns
};

struct CpuParts {
  bool recorded = false;   // the profile holds CPU samples (kModeCpuSamples)
  uint32_t threads = 0;    // threads with samples and a known CPU time
  uint64_t samples = 0;
  double cpu_ns = 0;       // CPU time of those threads, and of the unsampled ones
  CpuPart allocator, shim, locks, cond, elsewhere;
  double unsampled_ns = 0; // CPU time of threads without a sample
};

CpuParts cpu_parts(const Profile& profile, const std::vector<ThreadRow>& threads);

}  // namespace allocscope
