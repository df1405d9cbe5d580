#include "render/report_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "render/contention_wording.h"
#include "util/units.h"

namespace allocscope {

namespace {

// What to record so that the allocator time's bound falls under half of it: the bound shrinks
// with the square root of the timing windows (or of the timed calls).
std::string unsure_advice(const CostReport& r) {
  const double rel = r.allocator_time_ns > 0 ? r.allocator_error_ns / r.allocator_time_ns : 1;
  const double factor = std::max(2.0, std::ceil(std::pow(rel / 0.4, 2)));
  std::string text = fmt::format("Record at least {:.0f}x as long", factor);
  if (r.wall_ns) text += fmt::format(" (about {})", format_duration_ns(*r.wall_ns * factor));
  if (r.sample_every > 1) {
    const double n = std::max(1.0, std::floor(static_cast<double>(r.sample_every) / factor));
    text += fmt::format(", or time more calls with --sample {:.0f}", n);
  }
  return text + ".";
}

}  // namespace

std::string verdict_text(const CostReport& r) {
  const Verdict& v = r.verdict;
  const double total = r.split.total();
  switch (v.kind) {
    case VerdictKind::NoCallTimed:
      if (r.sparse_calls)
        return fmt::format("Too few allocator calls to judge where the allocator's time goes: none of its {} calls "
                           "{}fell in a timing window (1/{} of the time is timed). Time every call with --sample 1: "
                           "at so few calls it costs little.",
                           group_digits(r.calls),
                           r.wall_ns ? fmt::format("(in {}) ", format_duration_ns(*r.wall_ns)) : std::string(),
                           r.sample_every);
      return fmt::format("Run too short to judge where the allocator's time goes: none of its {} allocator calls "
                         "fell in a timing window (1/{} of "
                         "the time is timed). Record a longer run, or time every call with --sample 1.",
                         group_digits(r.calls), r.sample_every);
    case VerdictKind::NoCalls: return "No allocator calls were recorded.";
    case VerdictKind::NotSampling:
      return "No call was timed: record with sampling (--sample N, N >= 1) to see where the time goes.";
    case VerdictKind::NoneTimed:
      return fmt::format("No call was timed: sampling timed calls during 1/{} of the time, and none fell in a "
                         "timing window; record with a smaller --sample N (1 times every call).",
                         r.sample_every);
    case VerdictKind::SharesUnsure:
      // No claim rests on an unsure figure: say what to record instead.
      return fmt::format("Run too short to judge where the allocator's time goes: its time is {} ± {}{} ({} timed "
                         "call{} in {} timing window{}), and fast path, slow but running and waiting are within their "
                         "bounds of each other. {} {}",
                         format_duration_ns(r.allocator_time_ns), format_duration_ns(r.allocator_error_ns),
                         r.allocator_unsure ? ", a bound over half of it" : "", group_digits(r.timed),
                         r.timed == 1 ? "" : "s", group_digits(r.error.windows), r.error.windows == 1 ? "" : "s",
                         unsure_advice(r), contention_sentence(r.contention.verdict));
    case VerdictKind::Waiting:
    case VerdictKind::Slow:
    case VerdictKind::Fast: break;
  }
  const Contention& c = r.contention;
  std::string text;
  const double fast = r.split.fast_ns / total, slow = r.split.slow_ns / total, wait = r.split.wait_ns / total;
  if (v.kind == VerdictKind::Waiting) {
    text = fmt::format("{} of allocator time is waiting: threads blocked off-CPU inside the allocator",
                       format_percent(wait));
    if (r.model.rusage_blocked) {
      text += fmt::format(" ({} sampled calls caught blocking)", r.model.rusage_blocked);
    } else if (r.model.fallback_blocked_calls >= 1) {
      text += fmt::format(" (about {} blocking calls, matching the threads' voluntary context switches)",
                          static_cast<uint64_t>(std::llround(r.model.fallback_blocked_calls)));
    }
  } else if (v.kind == VerdictKind::Slow) {
    text = fmt::format("{} of allocator time is spent running beyond the calls' uncontended cost",
                       format_percent(slow));
    const bool excluded = c.verdict.kind == ContentionKind::GlobalLock || c.verdict.kind == ContentionKind::Partial;
    if (excluded && v.slowdown && *v.slowdown > 1.2) {
      text += fmt::format(": calls that met another thread inside took {:.1f}x as long as calls made alone "
                          "(spinning, lock hand-over, shared cache lines)", *v.slowdown);
    } else {
      text += " (page faults, system calls, refills, preemption)";
    }
  } else {
    text = fmt::format("{} of allocator time is the calls' uncontended cost: the fast path dominates",
                       format_percent(fast));
  }
  text += ".";
  text += " " + contention_sentence(c.verdict);
  if (r.allocator_unsure) {
    text += fmt::format(" Its time itself is unsure ({} ± {}, a bound over half of it): no share of thread time is "
                        "claimed. {}", format_duration_ns(r.allocator_time_ns), format_duration_ns(r.allocator_error_ns),
                        unsure_advice(r));
  } else {
    text += fmt::format(" The allocator takes {} of thread time.", format_percent(r.allocator_share));
  }
  return text;
}

const char* verdict_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::NoCalls:
    case VerdictKind::NotSampling:
    case VerdictKind::NoneTimed: return "none";
    case VerdictKind::NoCallTimed:
    case VerdictKind::SharesUnsure: return "unsure";
    case VerdictKind::Waiting: return "waiting";
    case VerdictKind::Slow: return "slow";
    case VerdictKind::Fast: return "fast";
  }
  return "none";
}

}  // namespace allocscope
