// concurrency.h — how many threads are inside the allocator, moment by moment, over a whole trace.
//
// ConcurrencyTracker is a TraceVisitor (trace_decode.h): every call is inside the allocator from
// its enter to its exit, so the number of threads inside is exact at every tick.  It measures:
//   * the time spent with exactly k threads inside (k = 0 between the first enter and the last
//     exit is idle time), the busy time (k >= 1), the contended time (k >= 2) and the mean number
//     inside while busy;
//   * a timeline of `slots` equal slots: the most threads inside and the mean in each;
//   * the serialization index of docs/analysis.md, exact instead of sampled:
//       SI = sum over calls of rate_i * contended_i / contended_time,
//       rate_i = min(1, baseline_i / duration_i)
//     contended_i is the part of call i during which another thread was inside too.  The baseline
//     of a call is the uncontended cost of its (operation, size bucket), as the report learns it:
//     the mean of its calls made *alone* (no other thread inside at their start), the slowest 1 %
//     left out; with fewer than 20 such calls, those of the operation as a whole; without those,
//     the 10th percentile of all its calls.  Durations and baselines both include the probe (the
//     clock reads around each call), as the report's rate does.  Null with fewer than 20
//     contended calls.  Durations are binned (FineHistogram, 3 %) until the baselines are known.
//     The report leaves out windows of descheduled calls (judged from rusage samples); a trace
//     has no rusage, so nothing is left out here.
// Frees carry no size in a trace: their cells are (free, kBucketUnknown).
// A trace recorded with --sample N > 1 has durations only for the calls in the sampling windows:
// the others are left out, and everything above describes those windows (as the report's sampled
// figures do), not the whole run.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "allocscope/format.h"
#include "util/fine_histogram.h"
#include "profile/trace_decode.h"

namespace allocscope {

struct InsideSample {          // one slot of the concurrency timeline
  uint32_t max_inside = 0;
  uint64_t inside_ticks = 0;   // sum over the slot's ticks of the threads inside
};

struct ConcurrencyResults {
  uint64_t calls = 0;             // timed calls: those the figures below are made of
  uint64_t untimed_calls = 0;     // left out (a trace recorded with --sample N > 1)
  uint64_t alone_calls = 0;       // started with no other thread inside
  uint64_t contended_calls = 0;   // started with at least one other thread inside
  uint64_t si_calls = 0;          // calls that met another thread inside at some point
  uint32_t max_inside = 0;        // for a positive time
  uint64_t busy_ticks = 0;        // >= 1 thread inside
  uint64_t contended_ticks = 0;   // >= 2 threads inside
  uint64_t inside_ticks = 0;      // sum of the calls' durations (= integral of threads inside)
  uint64_t span_ticks = 0;        // first enter to last exit
  std::vector<uint64_t> ticks_at; // [k]: time with exactly k threads inside, k = 0..max_inside
  double overhead_ticks = 0;      // probe cost per call (included in every duration)
  std::optional<double> serialization_index;
  std::vector<InsideSample> timeline;
};

class ConcurrencyTracker : public TraceVisitor {
 public:
  ConcurrencyTracker(const format::Calibration* calibration, uint64_t t0, uint64_t t1, unsigned slots);

  void enter(const TraceCall& call) override;
  void exit(const TraceCall& call) override;
  void finish() override;

  const ConcurrencyResults& results() const { return r_; }

 private:
  static constexpr unsigned kBucketSlots = 256;
  void advance_to(uint64_t tick);
  size_t cell(const TraceCall& call) const;

  uint64_t t0_, t1_;
  double calibration_overhead_;
  bool started_ = false;
  uint64_t now_ = 0;
  uint64_t first_ = 0;
  uint32_t inside_ = 0;
  struct Active {
    uint32_t others = 0;         // threads inside when the call began
    uint64_t contended_at = 0;   // contended_ticks when it began
  };
  std::vector<Active> active_;                   // per thread serial: its current call
  std::vector<FineHistogram> all_, alone_hist_;  // per (op, bucket) cell: durations
  std::vector<std::vector<double>> contended_;   // per cell, per duration bin: sum of contended_i
  FineHistogram raw_;
  ConcurrencyResults r_;
};

}  // namespace allocscope
