// What the cost model's report notes about the model and the data, and its verdict: which of
// fast, slow and waiting dominates allocator time, if the bounds let it be told (cost_model.h).
#include <algorithm>
#include <cmath>
#include <string_view>

#include "model/cost_parts.h"

namespace allocscope::cost {

void note_model(ModelNotes& notes, const Profile& profile, const Pass1& p1, const Pass2& p2,
                const Model& model, const ReleaseTotals& release_totals, const SweepConfig& sweep_config) {
  auto to_ns = [&](double ticks) { return profile.clock.to_ns_exact(ticks); };
  notes.probe_overhead_ns = to_ns(model.overhead);
  notes.blocks_made = release_totals.blocks_made;
  notes.blocks_released = release_totals.releases;
  notes.unreleased_blocks = release_totals.unreleased();
  notes.window_trim_ns = to_ns(static_cast<double>(sweep_config.trim));
  notes.block_threshold_ns = to_ns(model.block_threshold);
  notes.events = profile.events_read;
  notes.events_dropped = profile.events_dropped();
  notes.late_events = p2.sweep.late_events;
  notes.windows = p2.sweep.windows;
  for (const EvidenceBin& e : p1.evidence) {
    notes.rusage_samples += e.samples;
    notes.rusage_blocked += e.blocked;
  }
  for (unsigned b = 0; b < kLatencyBins; ++b) notes.evidence_bins += model.wait_share[b] >= 0;
  notes.truncated = profile.truncated();
  // What the shim said about calls it could not see (an allocator entry point defined ahead of it).
  for (std::string_view note : profile.notes) {
    for (size_t end; !note.empty(); note.remove_prefix(end + (end < note.size()))) {
      end = std::min(note.find('\n'), note.size());
      std::string_view line = note.substr(0, end);
      if (line.starts_with("allocscope: ")) line.remove_prefix(12);
      if (!line.empty()) notes.shim_notes.emplace_back(line);
    }
  }
}

Verdict make_verdict(const CostReport& r) {
  Verdict v;
  const double total = r.split.total();
  if (r.calls > 0 && r.timed == 0 && r.sample_every > 1) {
    v.kind = VerdictKind::NoCallTimed;
    return v;
  }
  if (r.calls == 0 || total <= 0) {
    v.kind = r.calls == 0 ? VerdictKind::NoCalls : r.sample_every == 0 ? VerdictKind::NotSampling : VerdictKind::NoneTimed;
    return v;
  }
  // The dominant cost is claimed only when its share beats the runner-up by more than both bounds.
  const double fs = r.split.fast_ns / total, ss = r.split.slow_ns / total, ws = r.split.wait_ns / total;
  bool shares_sure = r.error.sampled_fraction >= 1;
  if (!shares_sure && r.error.wait_share_bound && r.error.fast_share_bound) {
    const double bw = *r.error.wait_share_bound, bf = *r.error.fast_share_bound, bs = std::hypot(bw, bf);
    const std::pair<double, double> parts[] = {{ws, bw}, {ss, bs}, {fs, bf}};
    const auto top = std::max_element(std::begin(parts), std::end(parts));
    shares_sure = true;
    for (const auto& p : parts) {
      if (&p != top && top->first - p.first <= top->second + p.second) shares_sure = false;
    }
  }
  if (!shares_sure) {
    // No claim rests on an unsure figure.  The contention verdict rests on figures of its own (and
    // says when they are too few), so it stays.
    v.kind = VerdictKind::SharesUnsure;
    return v;
  }
  const Contention& c = r.contention;
  // How much slower calls were with another thread inside than alone.
  if (c.by_inside.size() >= 2 && c.by_inside[0].inside == 1) {
    double calls = 0, sum = 0;
    for (size_t i = 1; i < c.by_inside.size(); ++i) {
      calls += static_cast<double>(c.by_inside[i].calls);
      sum += static_cast<double>(c.by_inside[i].calls) * c.by_inside[i].mean_ns;
    }
    if (calls >= static_cast<double>(kMinContended) && c.by_inside[0].mean_ns > 0) v.slowdown = sum / calls / c.by_inside[0].mean_ns;
  }
  const double fast = r.split.fast_ns / total, slow = r.split.slow_ns / total, wait = r.split.wait_ns / total;
  if (wait >= fast && wait >= slow) {
    v.kind = VerdictKind::Waiting;
  } else if (slow >= fast) {
    v.kind = VerdictKind::Slow;
  } else {
    v.kind = VerdictKind::Fast;
  }
  return v;
}

}  // namespace allocscope::cost
