// contention_wording.cpp — see contention_wording.h.
#include "render/contention_wording.h"

#include <fmt/format.h>

#include <string_view>

#include "util/units.h"

namespace allocscope {
namespace {

constexpr uint64_t kSpinEvidenceSamples = 200;  // sampled calls before "none slept" means something

std::string pct(double share) { return fmt::format("{:.0f} %", 100 * share); }

// "0.71 (bounds 0.69–0.73, 5,120 calls that met another thread)"
std::string slower_text(const SlowerMeasure& m) {
  return fmt::format("{:.2f} (bounds {:.2f}–{:.2f}, {} calls that met another thread)", *m.value, m.low(), m.high(), m.met);
}

std::string measure_text(const ExclusionMeasure& m) {
  return m.slower.value ? "met calls slower " + slower_text(m.slower) : std::string("met calls slower: too few to measure");
}

// "ends of different threads within 20 ns of each other 0.12 times as often as chance (bounds
// 0.11–0.13, over 31 windows)"
std::string ends_text(const CoincidenceMeasure& q, double near_ns) {
  if (q.few_windows)
    return fmt::format("ends of different threads: too few timing windows where threads ran side by side ({:.1f}) "
                       "to measure",
                       q.windows);
  if (!q.value) return "ends of different threads: too few to measure";
  return fmt::format("calls of different threads ended within {:.0f} ns of each other {:.2f} times as often as chance "
                     "(bounds {:.2f}–{:.2f}, over {:.0f} windows)",
                     near_ns, *q.value, std::max(0.0, q.low()), q.high(), q.windows);
}

// "12 of 80 timed calls of 2 µs or more slept inside the allocator"
std::string slept_text(const ContentionInputs& in) {
  if (in.slow_switched) {
    return fmt::format("{} of {} timed calls of 2 µs or more slept inside the allocator", in.slow_slept,
                       in.slow_switched);
  }
  return fmt::format("{} of {} sampled calls slept in the kernel", in.rusage_blocked, in.rusage_samples);
}

// "35.0 % of the threads' time inside it", or, where the waits outlast the time the timed calls
// give for the threads inside the allocator (the windows missed most of them), that.
std::string allocator_lock_share_text(const ContentionInputs& in) {
  if (in.allocator_lock_share <= 1)
    return format_percent(in.allocator_lock_share, 1) + " of the threads' time inside the allocator";
  return fmt::format("more than the {} that the timed calls give for the threads' time inside the allocator: most "
                     "of the waits fell outside the timing windows",
                     format_duration_ns(in.allocator_time_ns));
}

// "its calls waited on locks of its own 10,571 times, 254.3 ms in all (34.6 % of the threads' time
// inside the allocator)"
std::string allocator_locks_text(const ContentionInputs& in) {
  const AllocatorLockWaits& l = in.allocator_locks;
  if (l.waits == 0) return "its calls never waited on a lock of its own taken through the C library";
  return fmt::format("its calls waited on locks of its own {} times, {} in all ({})", group_digits(l.waits),
                     format_duration_ns(l.wait_ns), allocator_lock_share_text(in));
}

// ", though 12 of 80 … slept inside the allocator (…)" when slow calls slept; "" else.
std::string slept_clause(const ContentionInputs& in, const char* joiner) {
  if (in.slow_slept == 0) return "";
  return fmt::format(", {} {} (threads wait for something inside it: one lock or several cannot be told)", joiner,
                     slept_text(in));
}

}  // namespace

// What the lock test (model/lock_test.h) found, in a sentence.
std::string lock_test_text(const LockTestFinding& t) {
  switch (t.kind) {
    case LockTestKind::NotRun:
      return t.detail.empty() ? "no lock test: the profile was not recorded by `allocscope record` (or with "
                                "--no-lock-test)"
                              : "no lock test: " + t.detail;
    case LockTestKind::Failed: return "the lock test failed: " + t.detail;
    default: break;
  }
  const char* found = "";
  switch (t.kind) {
    case LockTestKind::OneLockForAll: found = "one lock that every allocation takes, whatever its size"; break;
    case LockTestKind::LockPerClass: found = "a lock per size class: allocations of one size stop each other, of sizes apart never"; break;
    case LockTestKind::NoSharedLock: found = "no lock that allocations of two threads share"; break;
    case LockTestKind::NoLockAcrossSizes: found = "no lock that allocations of sizes apart share"; break;
    default: found = "nothing conclusive"; break;
  }
  return fmt::format("the lock test ({}) held one of two threads inside malloc now and then while the other kept "
                     "allocating a size three powers of two apart (48 B and 400 B): {} of {} holds stopped the other "
                     "thread at its next allocation ({} later; held between calls instead, {} of {}; {} holds told "
                     "nothing, the other thread waiting for a CPU) — found: {}",
                     t.detail, t.apart.stopped, t.apart.told, t.apart.stopped_later, t.between.stopped,
                     t.between.told, t.apart.preempted, found);
}

std::vector<EvidenceItem> contention_evidence(const ContentionVerdict& v) {
  const ContentionInputs& in = v.inputs;
  std::vector<EvidenceItem> items;
  const ExclusionMeasure& a = in.allocating;
  const ExclusionMeasure& f = in.freeing;
  items.push_back({"met_calls", static_cast<double>(a.met + f.met),
                   "timed calls that started while another thread was inside the allocator"});
  if (in.ends.value) {
    items.push_back({"ends_coincide", *in.ends.value,
                     fmt::format("calls of different threads that ended within {:.0f} ns of each other, against the "
                                 "number chance predicts from how often their ends fall 0.6–2 µs apart (1: calls run "
                                 "side by side; near 0: one ends, then another — calls take turns, as under one "
                                 "lock); bounds {:.2f}–{:.2f}, from how much {:.0f} timing windows differ",
                                 in.ends_near_ns, std::max(0.0, in.ends.low()), in.ends.high(), in.ends.windows)});
  }
  if (in.peers.futex_waits > 0) {
    items.push_back({"sleepers_on_one_word", in.peers.top_share(),
                     fmt::format("of the {} calls another thread saw asleep inside the allocator in a futex wait ({} "
                                 "looks at threads inside calls: {} at calls timed for 2 µs or more, {} outside the "
                                 "timing windows), the share that waited on the word most waited on ({} words in all; "
                                 "{} of the looks outside the windows found a thread asleep on it); "
                                 "they came from {} threads ({:.1f} ± {:.1f} if drawn from every thread's calls, as "
                                 "one lock for all would leave them; {} of them asleep in allocating calls), its "
                                 "allocating calls of sizes {}–{} B; the "
                                 "looking threads' own next allocations were held up (slept, or took 2 µs or more) {} "
                                 "of {} times after seeing a sleeper there and {} of {} times after other looks (1, "
                                 "from every thread and size, holding up the next allocation: one lock for all)",
                                 in.peers.futex_waits, in.peers.looks, in.peers.looks - in.peers.outside_looks,
                                 in.peers.outside_looks, in.peers.words, in.peers.top_waits_outside, in.peers.top_threads,
                                 in.peers.top_threads_expected, in.peers.top_threads_sd,
                                 in.peers.top_allocating_threads, in.peers.top_min_size,
                                 in.peers.top_max_size, in.peers.probes_after_sleeper_held,
                                 in.peers.probes_after_sleeper, in.peers.probes_other_held, in.peers.probes_other)});
  }
  if (in.allocator_locks.waits > 0) {
    const AllocatorLockWaits& l = in.allocator_locks;
    items.push_back({"allocator_lock_waits", static_cast<double>(l.waits),
                     fmt::format("the allocator's waits on locks of its own, counted in every call (not a sample): "
                                 "calls it made to pthread lock functions from inside its calls that found the lock "
                                 "held, and futex waits it made through the C library's syscall() that slept ({} of "
                                 "them): {} in {}, the longest {}, of {} threads on {} lock{}; the lock waited on "
                                 "longest, {} times in {} by {} threads ({}; locks of the allocator's own atomics "
                                 "that never sleep through syscall(), musl's and glibc's, never show here)",
                                 l.futex_waits, l.waits, format_duration_ns(l.wait_ns), format_duration_ns(l.max_ns),
                                 l.threads, l.locks, l.locks == 1 ? "" : "s", l.top_waits,
                                 format_duration_ns(l.top_wait_ns), l.top_threads, allocator_lock_share_text(in))});
  }
  if (in.peers.probes_apart > 0) {
    items.push_back({"probes_asleep_beside_sizes_apart", in.peers.apart_slept_share(),
                     fmt::format("of the {} allocations timed as probes (right after a look at other threads, or "
                                 "between the looks) while every other thread inside a call was in an allocation of a size at least twice apart, "
                                 "the share that slept inside the allocator ({} asleep, in {} threads, {} of them beside "
                                 "sizes on either side of the median request; {} probes in all, {} of them between the "
                                 "looks, {} asleep; {} of the {} made while no other thread was inside a call asleep; "
                                 "a lock per size class leaves none asleep, one lock for every call does)",
                                 in.peers.probes_apart, in.peers.probes_apart_slept, in.peers.probes_apart_slept_threads,
                                 in.peers.probes_apart_slept_across_median, in.peers.probes, in.peers.probes_alone,
                                 in.peers.probes_slept, in.peers.probes_unmet_slept, in.peers.probes_unmet)});
  }
  if (in.peers.holds > 0) {
    const PeerWaitMeasure& p = in.peers;
    items.push_back({"holds_released_beside_sizes_apart",
                     static_cast<double>(p.holds_apart_low_released) / static_cast<double>(p.holds),
                     fmt::format("of the {} allocations timed while the other threads inside allocator calls were held "
                                 "where they were for 30 µs (the observer keeping its CPU), the share that waited until "
                                 "a thread held inside an allocation of a size at least twice apart, one of the two "
                                 "below the median request, was let go ({}, in {} threads; {} waited for a held thread "
                                 "of any call; one lock for every call makes them wait, a lock per size class or none "
                                 "does not)",
                                 p.holds, p.holds_apart_low_released, p.holds_apart_low_released_threads,
                                 p.holds_released)});
  }
  if (const LockTestFinding& t = in.lock_test; t.kind != LockTestKind::NotRun || !t.detail.empty()) {
    items.push_back({"lock_test", t.apart.share(), lock_test_text(t)});
    if (t.same.told > 0) {
      items.push_back({"lock_test_same_size", t.same.share(),
                       fmt::format("in the lock test, with both threads asking for one size (48 B): {} of {} holds "
                                   "inside malloc stopped the other thread at its next allocation (a lock per size "
                                   "class stops it here, and only here)",
                                   t.same.stopped, t.same.told)});
    }
  }
  if (in.holds_recorded) {
    const PeerWaitMeasure& p = in.peers;
    items.push_back({"holds_passed", static_cast<double>(p.holds_passed),
                     fmt::format("calls timed while the other threads inside allocations were held where they were for "
                                 "{} µs (the observer keeping its CPU) that ended while every held thread was still "
                                 "held: went on past them ({} allocations and {} releases timed so; one lock for every "
                                 "call lets no call past a thread that holds it; `none` and `partial` need {} at least)",
                                 format::kHoldNs / 1000, p.holds, p.release_holds, kMinHoldsPassed)});
  }
  if (in.peers.probes_apart_low > 0 && in.peers.probes_unmet > 0) {
    const PeerWaitMeasure& p = in.peers;
    const double held = static_cast<double>(p.probes_apart_low_held) / static_cast<double>(p.probes_apart_low);
    const double unmet = static_cast<double>(p.probes_unmet_held) / static_cast<double>(p.probes_unmet);
    items.push_back({"probes_held_beside_sizes_apart", held,
                     fmt::format("of the {} of those probes whose smaller side (its own size or the others') lay below "
                                 "the median request, the share held up inside the allocator (slept, or took 2 µs or "
                                 "more; {} held up), against {:.3f} of the {} probes made while no other thread was "
                                 "inside a call ({} held up); clearly more in {} of the {} threads with {} such probes "
                                 "or more (a lock per size class or none adds nothing beside other sizes; one lock for "
                                 "every call holds them up in every thread)",
                                 p.probes_apart_low, p.probes_apart_low_held, unmet, p.probes_unmet, p.probes_unmet_held,
                                 p.probes_apart_low_held_threads, p.probes_apart_low_threads, kMinThreadProbes)});
  }
  if (in.ends_across.value) {
    items.push_back({"ends_coincide_across_classes", *in.ends_across.value,
                     fmt::format("the same for calls of sizes at least twice apart, always of different size "
                                 "classes (a lock per class leaves them coinciding); bounds {:.2f}–{:.2f}, over {:.0f} "
                                 "windows",
                                 std::max(0.0, in.ends_across.low()), in.ends_across.high(), in.ends_across.windows)});
  }
  if (a.slower.value) {
    items.push_back({"met_slower", *a.slower.value,
                     fmt::format("the probability that an allocating call which met another thread inside took longer "
                                 "than one made alone in the same size class, ties counted half (0.5: meeting another "
                                 "thread changes nothing; towards 1: calls wait for each other); bounds {:.2f}–{:.2f}",
                                 a.slower.low(), a.slower.high())});
    // The same measure over some of the met calls: "the same for the calls <which> (N calls); bounds …"
    auto same_for = [&](const char* kind, const SlowerMeasure& m, std::string_view which) {
      if (!m.value) return;
      items.push_back({kind, *m.value,
                       fmt::format("the same for the calls {} ({} calls); bounds {:.2f}–{:.2f}", which, m.met, m.low(),
                                   m.high())});
    };
    same_for("met_slower_allocating", a.by_allocating, "that met another thread inside an allocating call");
    same_for("met_slower_running", a.by_running,
             "that met another thread running through its call (one shorter than 10 µs: not preempted or asleep "
             "inside it, as a lock's holder runs)");
    same_for("met_slower_sizes_apart", a.apart,
             "whose other threads inside all asked for sizes at least twice larger or smaller (a lock per size "
             "class leaves them as fast as calls made alone)");
    items.push_back({"classes_excluded", a.contended_share,
                     "share of those calls in size classes where calls clearly wait for each other"});
    items.push_back({"classes_parallel", a.uncontended_share,
                     "share of those calls in size classes where calls clearly do not wait for each other"});
  }
  if (f.slower.value) {
    items.push_back({"met_slower_free", *f.slower.value,
                     fmt::format("the same for frees; bounds {:.2f}–{:.2f}", f.slower.low(), f.slower.high())});
  }
  if (in.rusage_samples) {
    const double samples = static_cast<double>(in.rusage_samples);
    items.push_back({"blocked_calls", static_cast<double>(in.rusage_blocked) / samples,
                     fmt::format("of {} calls sampled for context switches, the share that slept in the kernel "
                                 "(a voluntary switch: a lock that sleeps, or a system call that waits)",
                                 in.rusage_samples)});
    items.push_back({"preempted_calls", static_cast<double>(in.rusage_preempted) / samples,
                     "the share preempted inside the call (an involuntary switch: the CPU was taken, not a lock)"});
  }
  if (in.slow_switched) {
    const double slow = static_cast<double>(in.slow_switched);
    items.push_back({"slow_calls_slept", static_cast<double>(in.slow_slept) / slow,
                     fmt::format("of {} timed calls of 2 µs or more whose context switches were read, the share that "
                                 "slept in the kernel inside the call (a voluntary switch: waiting for a lock that "
                                 "sleeps, or a system call that waits)",
                                 in.slow_switched)});
    items.push_back({"slow_calls_preempted", static_cast<double>(in.slow_preempted) / slow,
                     "the share of them only preempted (an involuntary switch: the CPU was taken, not a lock)"});
  }
  const SleepPairsMeasure& p = in.sleep_pairs;
  if (p.pairs) {
    items.push_back({"sleep_pairs", static_cast<double>(p.pairs),
                     fmt::format("timed calls that slept inside the allocator while exactly one other thread was "
                                 "seen inside (of {} that slept): the call each waited behind",
                                 p.slept)});
    items.push_back({"sleep_pairs_apart", static_cast<double>(p.apart) / static_cast<double>(p.pairs),
                     fmt::format("the share of them ({}) whose two calls asked for sizes at least twice apart: one "
                                 "lock serves both sizes (a lock per size class never pairs them); of all timed calls "
                                 "that met exactly one other thread, {} did",
                                 p.apart, pct(p.met_apart_share))});
    items.push_back({"sizes_joined_by_sleeps", p.joined_share,
                     "the share of the timed calls in the largest set of sizes (powers of two) those pairs join"});
    items.push_back({"fewest_allocations_asleep", static_cast<double>(p.min_thread_slept_allocating),
                     fmt::format("the fewest allocating calls that slept in any busy thread (one lock for all makes "
                                 "every thread's allocations wait); the pairs {} every busy thread",
                                 p.threads_joined ? "join" : "do not join")});
    items.push_back({"threads_allocations_awake", static_cast<double>(p.awake_threads),
                     "busy threads none of whose timed allocating calls slept while their own releases slept often "
                     "enough that, under one lock for every call, that would have been a 1 % chance (a lock their "
                     "frees share, not their allocations)"});
  }
  if (in.cpus) {
    items.push_back({"threads_per_cpu", static_cast<double>(in.max_live_threads) / in.cpus,
                     fmt::format("{} threads alive at most on {} CPUs{}", in.max_live_threads, in.cpus,
                                 v.oversubscribed ? ": threads are preempted inside calls; the measure compares calls "
                                                    "of the same run and is not moved by it"
                                                  : "")});
  }
  return items;
}

std::string contention_reason(const ContentionVerdict& v) {
  const ContentionInputs& in = v.inputs;
  const ExclusionMeasure& a = in.allocating;
  switch (v.reason) {
    case ContentionReason::OneThread:
      if (in.calling_threads > 1)
        return fmt::format("only one thread was busy in the allocator: the {} other{} made too few calls, and spent "
                           "too little time in them, to contend with it",
                           in.calling_threads - 1, in.calling_threads > 2 ? "s" : "");
      if (in.calling_threads == 0)
        return "no thread called the allocator in what the profile holds: there is nothing to contend for";
      return "only one thread called the allocator: there is nobody to contend with";
    case ContentionReason::NotTimed:
      if (in.sample_every == 0) return "no call was timed (--sample 0): contention cannot be measured";
      if (in.sparse_calls)
        return fmt::format("no call was timed: none of the {} calls fell in a timing window (1/{} of the time is "
                           "timed): too few calls for the sampling, not too short a run: contention cannot be "
                           "measured",
                           group_digits(in.calls), in.sample_every);
      return fmt::format("no call was timed: none fell in a timing window (1/{} of the time is timed), the run "
                         "is too short: contention cannot be measured",
                         in.sample_every);
    case ContentionReason::TooFewMet:
      return fmt::format("too few timed calls met another thread inside the allocator ({} allocating calls did, "
                         "of classes with enough calls made alone): threads rarely ran allocator calls at the same "
                         "time{}",
                         a.met, slept_clause(in, "though"));
    case ContentionReason::TooFewEnds:
      return fmt::format("calls that met another thread inside were not clearly slower than calls made alone ({}), "
                         "but {}: whether calls of different threads take turns cannot be told{}",
                         measure_text(a), ends_text(in.ends, in.ends_near_ns), slept_clause(in, "and"));
    case ContentionReason::SleepersOnOneWord:
      return fmt::format("calls asleep inside the allocator wait on one lock: {} of the {} calls seen asleep in a "
                         "futex wait waited on one word, calls of {} threads ({:.1f} if every thread's calls were as "
                         "likely to) among them allocating calls of sizes from {} to {} bytes; {} of the {} looks "
                         "outside the timing windows found a thread asleep on it, and the looking thread's next "
                         "allocation was held up {} times of {} after one{} ({}); one lock serves every thread and "
                         "size class",
                         in.peers.top_waits, in.peers.futex_waits, in.peers.top_threads, in.peers.top_threads_expected,
                         in.peers.top_min_size, in.peers.top_max_size, in.peers.top_waits_outside,
                         in.peers.outside_looks, in.peers.probes_after_sleeper_held, in.peers.probes_after_sleeper,
                         in.slow_slept ? fmt::format(", {}", slept_text(in)) : std::string(),
                         measure_text(a));
    case ContentionReason::ProbesSleepApart:
      return fmt::format("allocations sleep inside the allocator behind calls of other sizes: {} of the {} "
                         "allocations timed while every other thread inside a call was in an allocation of a size at "
                         "least twice larger or smaller slept, in {} threads; a lock per size class cannot do that, "
                         "one lock for every call does",
                         in.peers.probes_apart_slept, in.peers.probes_apart, in.peers.probes_apart_slept_threads);
    case ContentionReason::HoldsReleasedApart:
      return fmt::format("allocations wait for calls of other sizes: with the threads inside allocator calls held "
                         "where they were for 30 µs, {} of {} allocations timed meanwhile waited until a thread held "
                         "inside an allocation of a size at least twice larger or smaller was let go (in {} threads); "
                         "a lock per size class cannot do that, one lock for every call does",
                         in.peers.holds_apart_low_released, in.peers.holds, in.peers.holds_apart_low_released_threads);
    case ContentionReason::TakeTurns:
      return fmt::format("calls take turns: {}{}; one call ends, then another, as one lock serving every size class "
                         "makes them do",
                         ends_text(in.ends, in.ends_near_ns),
                         in.ends_across.value ? fmt::format(", calls of different size classes {:.2f}", *in.ends_across.value)
                                              : std::string());
    case ContentionReason::TurnsWithoutHolding:
      return fmt::format("calls take turns ({}), yet {} of {} allocations timed while the threads inside "
                         "allocator calls were held where they were for 30 µs waited for a held thread, and {} "
                         "thread{} seen asleep inside a call: one lock for every call, held by a held thread, keeps "
                         "one in five waiting or more; a word that every call updates (a shared counter, "
                         "the head of a shared list changed atomically) makes calls take turns without a lock, and "
                         "this run cannot tell them apart further",
                         ends_text(in.ends, in.ends_near_ns), in.peers.holds_released, in.peers.holds,
                         in.peers.futex_waits == 0 ? std::string("no") : std::to_string(in.peers.futex_waits),
                         in.peers.futex_waits == 1 ? " was" : "s were");
    case ContentionReason::TurnsUnheld:
      return fmt::format("calls take turns ({}), yet no allocation slept for another thread and no thread was seen "
                         "asleep inside one, and this run held no thread inside a call to see whether the others "
                         "waited (timing every call leaves no time for it): calls that take turns at a word every "
                         "call updates, or threads that took turns on busy CPUs, look the same",
                         ends_text(in.ends, in.ends_near_ns));
    case ContentionReason::TurnsWithinClasses:
      return fmt::format("calls of the same size class take turns ({}), while calls of different size classes end "
                         "together as often as chance ({:.2f}, bounds {:.2f}–{:.2f}): a lock per size class, not one "
                         "for all",
                         ends_text(in.ends, in.ends_near_ns), *in.ends_across.value, in.ends_across.low(),
                         in.ends_across.high());
    case ContentionReason::SlowerWithoutTurns:
      return fmt::format("calls that met another thread inside were slower than calls made alone ({}), yet {}: a "
                         "lock handed over before its holder's call ends (a sleeping lock whose holder wakes the next "
                         "thread after releasing it) and interference that is no lock (shared caches, page faults, "
                         "the kernel) both look like this",
                         measure_text(a), ends_text(in.ends, in.ends_near_ns));
    case ContentionReason::ExcludedSome:
      return fmt::format("calls wait for each other in some size classes ({} of the calls that met another thread) "
                         "and run side by side in others ({}); {}",
                         pct(a.contended_share), pct(a.uncontended_share), measure_text(a));
    case ContentionReason::FreesExcluded:
      return fmt::format("allocating calls run side by side ({}), frees wait for each other (frees that met "
                         "another thread slower {:.2f}, bounds {:.2f}–{:.2f})",
                         measure_text(a), *in.freeing.slower.value, in.freeing.slower.low(), in.freeing.slower.high());
    case ContentionReason::Parallel:
      return fmt::format("calls of different threads run side by side: {}, and meeting another thread inside does "
                         "not make calls slower ({})",
                         ends_text(in.ends, in.ends_near_ns), measure_text(a));
    case ContentionReason::AllocatorLocksWaited:
      return fmt::format("calls of different threads run side by side: {}, and meeting another thread inside does "
                         "not make calls slower ({}); yet {}: locks that some calls take are contended — contention "
                         "in places, not one lock for every call",
                         ends_text(in.ends, in.ends_near_ns), measure_text(a), allocator_locks_text(in));
    case ContentionReason::SleepersInPlaces:
      return fmt::format("calls of different threads run side by side: {}, and meeting another thread inside does "
                         "not make calls slower ({}); yet {} of {} looks at threads inside allocator calls found one "
                         "asleep in a futex wait, on {} word{}: locks that some calls take are contended — contention "
                         "in places, not one lock for every call",
                         ends_text(in.ends, in.ends_near_ns), measure_text(a), in.peers.futex_waits, in.peers.looks,
                         in.peers.words, in.peers.words == 1 ? "" : "s");
    case ContentionReason::LockTestOneLock:
      return fmt::format("{}; and the program's threads were inside the allocator together ({} timed calls met "
                         "another thread inside, {} looks found one inside a call): they take turns at that lock",
                         lock_test_text(in.lock_test), in.allocating.met + in.freeing.met, in.peers.looks);
    case ContentionReason::LockTestNoLock:
      return fmt::format("{}; and no thread was seen waiting inside the allocator ({} of {} slow calls slept, {} of {} "
                         "looks found a thread asleep in a futex wait{})",
                         lock_test_text(in.lock_test), in.slow_slept, in.slow_switched, in.peers.futex_waits,
                         in.peers.looks, in.allocator_locks.recorded ? "; " + allocator_locks_text(in) : "");
    case ContentionReason::LockTestOverrules: {
      ContentionVerdict alone = v;
      alone.reason = v.run_reason;
      return fmt::format("the run alone reads like one lock ({}); but {}: a lock that some calls take, or that some "
                         "threads share — contention in places",
                         contention_reason(alone), lock_test_text(in.lock_test));
    }
    case ContentionReason::LockTestWaitsInPlaces:
      return fmt::format("{}; yet threads waited inside the allocator ({} of {} slow calls slept, {} made alone; {} of "
                         "{} looks found a thread asleep in a futex wait; {}{}): locks that some calls take are "
                         "contended",
                         lock_test_text(in.lock_test), in.slow_slept, in.slow_switched, in.slow_alone_slept,
                         in.peers.futex_waits, in.peers.looks, measure_text(a),
                         in.allocator_locks.recorded ? "; " + allocator_locks_text(in) : "");
    case ContentionReason::Ambiguous:
      return fmt::format("neither measure settles it: {}; {}", ends_text(in.ends, in.ends_near_ns), measure_text(a));
    case ContentionReason::MixedClasses:
      return fmt::format("calls take turns ({}), but whether calls of different size classes do too cannot be told "
                         "({}): one global lock or a lock per class",
                         ends_text(in.ends, in.ends_near_ns), ends_text(in.ends_across, in.ends_near_ns));
    case ContentionReason::Disturbed:
      return fmt::format("calls that met another thread were faster than calls made alone ({}): the calls made "
                         "alone were slowed by calls the timing windows did not see, such as a thread asleep inside "
                         "the allocator since before the window",
                         measure_text(a));
    case ContentionReason::Sleeping:
      return fmt::format("calls that met another thread were not slower ({}), but {}: a lock may be at work that "
                         "the measure does not see",
                         measure_text(a), slept_text(in));
    case ContentionReason::FewHoldsPassed:
      return fmt::format("calls that met another thread were not slower ({}) and {}, but only {} of the {} "
                         "calls timed while the threads inside allocations were held where they were for {} µs went "
                         "on past them, and {} are needed to tell: a lock with short critical sections, seldom "
                         "contended, leaves the timed calls as they are, and only calls that go on while another "
                         "thread is stopped inside one show that no such lock stops them",
                         measure_text(a), ends_text(in.ends, in.ends_near_ns), in.peers.holds_passed,
                         in.peers.holds + in.peers.release_holds, format::kHoldNs / 1000, kMinHoldsPassed);
    case ContentionReason::HeldBesideOthers:
      return fmt::format("calls that met another thread were not slower ({}), but allocations timed while the others "
                         "inside were in allocations of sizes twice apart were held up (slept, or took 2 µs or more) "
                         "{} times of {}, against {} of {} timed while nobody else was inside: a lock may be at work "
                         "that the timed calls do not show, in some threads at least",
                         measure_text(a), in.peers.probes_apart_low_held, in.peers.probes_apart_low,
                         in.peers.probes_unmet_held, in.peers.probes_unmet);
    case ContentionReason::SleepsAcrossSizes:
      return fmt::format("{} of {} calls that slept inside the allocator while one other thread was inside waited "
                         "behind a call of a size at least twice larger or smaller; those waits join sizes that carry "
                         "{} of the calls, and allocations slept as well ({}), in no thread clearly less than its "
                         "frees: the lock they wait for serves every size",
                         in.sleep_pairs.apart, in.sleep_pairs.pairs, pct(in.sleep_pairs.joined_share),
                         in.sleep_pairs.slept_allocating);
    case ContentionReason::SleepWhenMet:
      return fmt::format("calls that met another thread inside were slower than calls made alone ({}), also when "
                         "every other thread inside asked for a size at least twice larger or smaller ({}), and "
                         "{}: threads sleep inside the allocator waiting for a lock — one lock for every size "
                         "class, or a lock per class that every thread reaches at the same time (threads "
                         "allocating the same sizes in step), which this run cannot tell apart",
                         measure_text(a), slower_text(a.apart), slept_text(in));
  }
  return "";
}

namespace {

// How to time more of a run recorded with --sample `n` (0: nothing timed): every call where the
// reason needs that (`every_call`) or the run timed 1/8 or more already, else 1/8 of the time or
// every call; nothing more where it timed every call.
std::string time_more(uint32_t n, bool every_call) {
  if (n == 1) return "";
  if (every_call || (n != 0 && n <= 8)) return "time every call (--sample 1)";
  return "time more of it (--sample 8, or --sample 1 to time every call)";
}

// "record a longer run, or <time_more>" — or only the longer run where every call was timed.
std::string longer_or_more(uint32_t n, bool every_call = false) {
  const std::string more = time_more(n, every_call);
  return more.empty() ? "record a longer run" : "record a longer run, or " + more;
}

}  // namespace

std::string contention_advice(const ContentionVerdict& v) {
  if (v.kind != ContentionKind::Unsure) return "";
  const uint32_t n = v.inputs.sample_every;
  switch (v.reason) {
    case ContentionReason::NotTimed:
      if (n == 0) return "record again without --sample 0";
      // Few calls over a long run: a longer run of the same program adds few; timing every call
      // costs little at that rate.
      return v.inputs.sparse_calls ? "time every call (--sample 1): at so few calls it costs little"
                                   : longer_or_more(n, true);
    case ContentionReason::TooFewMet:
    case ContentionReason::TooFewEnds:
      return longer_or_more(n) + ", with the threads allocating at the same time";
    case ContentionReason::Disturbed:
    case ContentionReason::Sleeping: {
      const std::string more = time_more(n, true);
      return more.empty() ? "record a longer run, so that the bounds narrow" : more + ", so that no call goes unseen";
    }
    case ContentionReason::HeldBesideOthers:
      return "record a longer run, so that every thread's probes are enough to compare, or compare it with a run "
             "under another allocator (allocscope compare)";
    case ContentionReason::FewHoldsPassed:
      return fmt::format("record a longer run (the shim holds the threads inside allocator calls once per {} ms at "
                         "most, and only while another thread is inside an allocation), on a machine with CPUs to "
                         "spare, or compare it with a run under another allocator (allocscope compare)",
                         format::kHoldGapNs / 1000000);
    case ContentionReason::SlowerWithoutTurns:
      // A run that already had more threads than CPUs gains nothing from more: more of its calls
      // timed (sleeps paired with the call that kept them waiting) is what can still tell.
      if (v.oversubscribed)
        return longer_or_more(n) + ", so that the calls that sleep inside the allocator are seen with the call "
               "they waited for, or compare it with a run under another allocator (allocscope compare)";
      return "record the program with more threads than CPUs, where a lock's waiters queue and its calls take "
             "turns, or compare it with a run under another allocator (allocscope compare)";
    case ContentionReason::TurnsWithoutHolding:
      return "compare it with a run under another allocator (allocscope compare): calls that take turns at a word "
             "cost what the gap between the two runs shows, lock or not; a longer run holds more calls (one hold "
             "each 5 ms)";
    case ContentionReason::TurnsUnheld:
      return "record it again with the default sampling: its holds, made between the timing windows, tell a "
             "lock from calls that take turns";
    case ContentionReason::SleepWhenMet:
      return "compare the run with one under an allocator without a global lock (allocscope compare): the time "
             "its threads spend asleep inside this one is the lock's cost, whichever kind it is";
    default:
      return longer_or_more(n) + ", so that the bounds narrow";
  }
}

std::string contention_sentence(const ContentionVerdict& v) {
  switch (v.kind) {
    case ContentionKind::SingleThread:
      if (v.inputs.calling_threads == 0) return "No thread called the allocator: no contention.";
      return "One thread called the allocator: no contention.";
    case ContentionKind::GlobalLock: {
      std::string sleeping;
      if (v.blocking) {
        sleeping = ", on which threads sleep";
      } else if (v.inputs.rusage_samples >= kSpinEvidenceSamples) {
        sleeping = fmt::format(", and none of {} sampled calls slept on it (a spin lock, or one handed over without sleeping)",
                               v.inputs.rusage_samples);
      }
      return fmt::format("Threads exclude each other inside the allocator in every size class: one global lock{}. "
                         "Evidence: {}.",
                         sleeping, contention_reason(v));
    }
    case ContentionKind::Partial:
      return fmt::format("Contention in places, not one global lock: {}.", contention_reason(v));
    case ContentionKind::None:
      return fmt::format("Threads do not wait for each other inside the allocator: {}.", contention_reason(v));
    case ContentionKind::Unsure:
      if (v.reason == ContentionReason::SleepWhenMet) {
        return fmt::format("Threads wait for each other inside the allocator, asleep on a lock; whether one lock "
                           "serves every size class cannot be told from this run: {}; {}.",
                           contention_reason(v), contention_advice(v));
      }
      break;
  }
  return fmt::format("Whether threads wait for each other inside the allocator cannot be told from this run: {}; {}.",
                     contention_reason(v), contention_advice(v));
}

}  // namespace allocscope
