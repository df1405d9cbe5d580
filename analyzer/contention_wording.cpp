// contention_wording.cpp — see contention_wording.h.
#include "contention_wording.h"

#include <fmt/format.h>

namespace allocscope {
namespace {

constexpr uint64_t kSpinEvidenceSamples = 200;  // sampled calls before "none slept" means something

std::string pct(double share) { return fmt::format("{:.0f} %", 100 * share); }

std::string ratio_text(const ExclusionMeasure& m) {
  return fmt::format("{:.2f} (bounds {:.2f}–{:.2f}, {} calls that met another thread)", *m.ratio, m.low, m.high, m.met);
}

}  // namespace

std::vector<EvidenceItem> contention_evidence(const ContentionVerdict& v) {
  const ContentionInputs& in = v.inputs;
  std::vector<EvidenceItem> items;
  const ExclusionMeasure& a = in.allocating;
  const ExclusionMeasure& f = in.freeing;
  items.push_back({"met_calls", static_cast<double>(a.met + f.met),
                   "timed calls that started while another thread was inside the allocator"});
  if (a.ratio) {
    items.push_back({"exclusion_ratio", *a.ratio,
                     fmt::format("allocating calls that met another thread were fast {:.2f} times as often as calls made "
                                 "alone in the same size classes (1: threads do not wait for each other; near 0: they "
                                 "wait for each other's calls); bounds {:.2f}–{:.2f}",
                                 *a.ratio, a.low, a.high)});
    items.push_back({"met_fast_share", static_cast<double>(a.observed_fast) / static_cast<double>(a.met),
                     "of the allocating calls that met another thread, the share that was fast (at most 1.3 times "
                     "the 5th percentile of its operation and size)"});
    items.push_back({"alone_fast_share", static_cast<double>(a.alone_fast) / static_cast<double>(a.alone),
                     "of the allocating calls made alone, the share that was fast"});
    items.push_back({"classes_excluded", a.contended_share,
                     "share of those calls in size classes where calls clearly wait for each other"});
    items.push_back({"classes_parallel", a.uncontended_share,
                     "share of those calls in size classes where calls clearly do not wait for each other"});
  }
  if (f.ratio) {
    items.push_back({"exclusion_ratio_free", *f.ratio,
                     fmt::format("the same for frees; bounds {:.2f}–{:.2f}", f.low, f.high)});
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
  if (in.cpus) {
    items.push_back({"threads_per_cpu", static_cast<double>(in.max_live_threads) / in.cpus,
                     fmt::format("{} threads alive at most on {} CPUs{}", in.max_live_threads, in.cpus,
                                 v.oversubscribed ? ": threads are preempted inside calls; the exclusion ratio compares "
                                                    "calls of the same run and is not moved by it"
                                                  : "")});
  }
  return items;
}

std::string contention_reason(const ContentionVerdict& v) {
  const ContentionInputs& in = v.inputs;
  const ExclusionMeasure& a = in.allocating;
  switch (v.reason) {
    case ContentionReason::OneThread:
      return "only one thread called the allocator: there is nobody to contend with";
    case ContentionReason::NotTimed:
      return "no call was timed (--sample 0): contention cannot be measured";
    case ContentionReason::TooFewMet:
      return fmt::format("too few timed calls met another thread inside the allocator ({} allocating calls did, "
                         "of classes with enough calls made alone): threads rarely ran allocator calls at the same time",
                         a.met);
    case ContentionReason::Excluded:
      return fmt::format("a call that meets another thread inside is rarely fast, in every size class measured: "
                         "exclusion ratio {}",
                         ratio_text(a));
    case ContentionReason::ExcludedSome:
      return fmt::format("calls wait for each other in some size classes ({} of the calls that met another thread) "
                         "and run side by side in others ({}); exclusion ratio {}",
                         pct(a.contended_share), pct(a.uncontended_share), ratio_text(a));
    case ContentionReason::FreesExcluded:
      return fmt::format("allocating calls run side by side (exclusion ratio {}), frees wait for each other "
                         "(ratio {:.2f}, bounds {:.2f}–{:.2f})",
                         ratio_text(a), *in.freeing.ratio, in.freeing.low, in.freeing.high);
    case ContentionReason::Parallel:
      return fmt::format("meeting another thread inside does not make calls slower: exclusion ratio {}", ratio_text(a));
    case ContentionReason::Ambiguous:
      return a.ratio ? fmt::format("the exclusion ratio {} lies between no exclusion (above 0.8) and a lock (below 0.7)",
                                   ratio_text(a))
                     : "the evidence is too thin";
    case ContentionReason::MixedClasses:
      return fmt::format("calls wait for each other overall (exclusion ratio {}), but {} of them are in classes that "
                         "clearly run side by side: neither one global lock nor clearly confined",
                         ratio_text(a), pct(a.uncontended_share));
    case ContentionReason::Disturbed:
      return fmt::format("calls that met another thread were fast more often than calls made alone (exclusion ratio "
                         "{}): the calls made alone were slowed by calls the timing windows did not see, such as a "
                         "thread asleep inside the allocator since before the window",
                         ratio_text(a));
    case ContentionReason::Masked:
      return fmt::format("the exclusion ratio {} shows no waiting, but only {} of the calls that met another thread "
                         "were fast: when calls are slow anyway, threads queued on a lock out of the timing "
                         "windows' sight look the same",
                         ratio_text(a), pct(static_cast<double>(a.observed_fast) / static_cast<double>(a.met)));
    case ContentionReason::Sleeping:
      return fmt::format("the exclusion ratio {} shows no waiting, but {} of {} sampled calls slept in the kernel: "
                         "a lock may be at work that the ratio does not see",
                         ratio_text(a), in.rusage_blocked, in.rusage_samples);
  }
  return "";
}

std::string contention_advice(const ContentionVerdict& v) {
  if (v.kind != ContentionKind::Unsure) return "";
  switch (v.reason) {
    case ContentionReason::NotTimed:
      return "record again without --sample 0";
    case ContentionReason::TooFewMet:
      return "record a longer run, or time more of it (--sample 8, or --sample 1 to time every call), with the "
             "threads allocating at the same time";
    case ContentionReason::Disturbed:
    case ContentionReason::Sleeping:
    case ContentionReason::Masked:
      return "time every call (--sample 1), so that no call goes unseen";
    default:
      return "record a longer run or time more of it (--sample 8) so that the bounds narrow";
  }
}

std::string contention_sentence(const ContentionVerdict& v) {
  switch (v.kind) {
    case ContentionKind::SingleThread:
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
      break;
  }
  return fmt::format("Whether threads wait for each other inside the allocator cannot be told from this run: {}; {}.",
                     contention_reason(v), contention_advice(v));
}

}  // namespace allocscope
