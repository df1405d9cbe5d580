// faults_in_calls.h — how many of a run's minor faults were taken inside allocator calls.
//
// The timed calls are a sample of each thread's calls, as they are for the allocator's time
// (cost_model.h: per operation and size bucket, the timed calls' mean × all calls).  A timed call
// says how many faults it took where the shim read the thread's counts around it: the rusage
// probe's calls (format.h kEvRusage), and, with kModeFaults, slow calls read against a reading the
// thread could not have faulted since (kEvFaults); a timed call shorter than
// format.h fault_free_ticks took none.  The slow calls left unread (their reading was not good)
// are taken to fault as the read slow calls of their cell did (of their thread, where none of the
// cell's was read).  Per thread and cell (operation, size bucket):
//
//   faults in calls = mean faults per timed call × the cell's calls
//
// summed over the thread's cells; a cell without a call read takes the thread's mean.  The bound:
// 3 standard errors of that sum, the timing windows the sampling units as for the allocator's time
// (docs/analysis.md, "Error bounds": faults come in bursts over neighbouring calls, which a
// variance over single calls does not see; three, as bursts also span neighbouring windows), never
// less than that over single calls; with fewer than 5 windows holding a read call, never less than
// the estimate itself; never less than the
// rule of three (3 / calls read × calls: the 95 % bound of a count of zero events), plus the calls
// of cells without a call read at the rule of three, plus, scaled like them, the most faults the
// unread slow calls can have taken (as many as fit in them, a fault costing at least
// 2 × fault_free_ticks, and no more than the faults since a reading before the call where the
// shim has them: kEvFaultsAtMost), plus kWindowPaceShare of the estimate (the windows' own
// pace: the reads a timed call takes slow the program inside the windows); at most the
// thread's faults.  A thread with no call read has a bound of all its faults.  The run's estimate is the threads' sum, its bound
// their bounds added in quadrature.  Without kModeFaults (older profiles, traces, count-only),
// only the rusage probe's calls are read, a far smaller sample.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>

#include "allocscope/format.h"
#include "model/window_clusters.h"
#include "profile/stats.h"

namespace allocscope {

// The share of the estimate the bound adds for the windows' own pace (faults_in_calls.h above;
// measured on musl's faulter, docs/analysis.md "Outside the calls").
constexpr double kWindowPaceShare = 0.06;

// One cell's timed calls of one thread, as evidence of its faults inside calls.
struct CellFaultSample {
  uint64_t timed = 0;        // the calls that count in the sample
  uint64_t read = 0;         // of them, those whose faults are known (read, or too short to fault)
  uint64_t faults_read = 0;  // their faults
  double faults_read2 = 0;   // Σ faults² of those, for the bound
  uint64_t slow_read = 0;    // of the calls long enough to fault, those read ...
  uint64_t slow_unread = 0;  // ... and those not
  uint64_t slow_faults = 0;  // the read slow calls' faults
  uint64_t unread_most = 0;  // the most faults the unread slow calls can have taken
  uint32_t id = 0;           // the cell's index in its thread's window sums
};

// The read calls of one cell in one timing window (or cluster of windows): the sampling unit.
struct FaultSum {
  uint64_t read = 0;
  double faults = 0;
  FaultSum& operator+=(const FaultSum& o) {
    read += o.read;
    faults += o.faults;
    return *this;
  }
};

struct ThreadFaultSample {
  std::map<CellKey, CellFaultSample> cells;
  cost::WindowClustersOf<FaultSum> windows;  // by CellFaultSample::id
  uint64_t last_window = ~uint64_t{0};
};

// Fed a profile's events (profile.h LoadOptions::on_events), in any order.
struct FaultSample {
  explicit FaultSample(const std::optional<format::Calibration>& calibration = std::nullopt);
  void add(const format::EventsHeader& header, std::span<const format::Event> events);

  bool fault_reads = false;                       // kModeFaults: slow calls carry their faults
  uint64_t short_ticks = 0;                       // a timed call shorter than this took none
  unsigned window_shift = 0;                      // a call's window: start_tick >> window_shift
  std::map<uint32_t, ThreadFaultSample> threads;  // by thread serial
};

struct FaultEstimate {
  double faults = 0;  // point estimate, at most the thread's (or run's) faults
  double bound = 0;   // ± (see above)
};

// One thread's faults inside calls: its sample, its calls per cell, its faults (rusage).
FaultEstimate thread_faults_in_calls(const ThreadFaultSample& sample, const CellMap& cells, uint64_t faults);

}  // namespace allocscope
