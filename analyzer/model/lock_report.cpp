// lock_report.cpp — see lock_report.h.
#include "model/lock_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <tuple>

#include "model/callsites.h"
#include "util/json_writer.h"
#include "profile/profile.h"
#include "symbols/symbolize.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

const char* kind_name(uint8_t kind) {
  switch (static_cast<format::LockKind>(kind)) {
    case format::LockKind::Mutex: return "mutex";
    case format::LockKind::RwRead:
    case format::LockKind::RwWrite: return "rwlock";
    case format::LockKind::Cond: return "condition";
    case format::LockKind::Unlock: return "mutex";
  }
  return "lock";
}

std::string innermost(const FrameInfo& f) {
  if (!f.source.empty() && !f.source.front().function.empty()) return f.source.front().function;
  return f.name();
}

// Per lock address (and kind class: a condition variable is never a lock), then per call site.
struct SiteAcc {
  uint64_t waits = 0, ticks = 0, max_ticks = 0;
  StackIndex stack = kNoStack;
};
struct LockAcc {
  std::string kind;
  uint64_t waits = 0, ticks = 0, max_ticks = 0, timeouts = 0;
  double unlock_ticks = 0;  // estimated
  uint64_t unlocks_timed = 0;
  std::set<uint32_t> threads;
  std::map<uint64_t, SiteAcc> sites;  // by call-site address
};

}  // namespace

std::string LockRow::name() const {
  if (sites.empty()) return fmt::format("{:#x}", address);
  const LockSite& s = sites.front();
  return s.location.empty() ? s.site : fmt::format("{} ({})", s.site, s.location);
}

LockReport analyze_locks(const Profile& profile, double thread_time_ns, const std::map<uint32_t, double>& lifetimes_ns,
                         const LockOptions& options) {
  LockReport r;
  r.recorded = profile.lock_mode();
  r.thread_time_ns = thread_time_ns;
  if (!r.recorded && profile.lock_waits.empty()) return r;
  r.recorded = true;

  std::map<std::pair<bool, uint64_t>, LockAcc> locks;  // (is condition, address)
  uint64_t lock_ticks = 0, cond_ticks = 0, dropped_ticks = 0;
  double unlock_ticks = 0;
  for (const auto& [serial, rec] : profile.lock_waits) {
    r.dropped_waits += rec.header.dropped_waits;
    dropped_ticks += rec.header.dropped_ticks;
    r.waits += rec.header.dropped_waits;
    lock_ticks += rec.header.dropped_ticks;
    r.wait_ns_by_thread[serial] += static_cast<double>(profile.ticks_to_ns(rec.header.dropped_ticks));
    r.time_ns_by_thread[serial] += static_cast<double>(profile.ticks_to_ns(rec.header.dropped_ticks));
    r.unlocks += rec.header.unlocks;
    r.unlocks_timed += rec.header.unlocks_timed;
    double unlock_scale = rec.header.unlocks_timed
                              ? static_cast<double>(rec.header.unlocks) / static_cast<double>(rec.header.unlocks_timed)
                              : 0;
    // A few timed unlocks that were preempted for milliseconds weigh 64 times their share: the
    // estimate of a thread is capped at what its lifetime leaves after its waits (the cost
    // model caps an allocator estimate the same way), and the capped threads are counted.
    if (const auto life = lifetimes_ns.find(serial); life != lifetimes_ns.end() && unlock_scale > 0) {
      uint64_t unlock_sampled = 0, waited = rec.header.dropped_ticks;
      for (const format::LockWaitRow& row : rec.rows)
        (row.kind == static_cast<uint8_t>(format::LockKind::Unlock) ? unlock_sampled : waited) += row.wait_ticks;
      const double est_ns = profile.clock.to_ns_exact(static_cast<double>(unlock_sampled) * unlock_scale);
      const double room_ns = std::max(0.0, life->second - static_cast<double>(profile.ticks_to_ns(waited)));
      if (est_ns > room_ns) {
        unlock_scale *= room_ns / est_ns;
        ++r.capped_threads;
      }
    }
    for (const format::LockWaitRow& row : rec.rows) {
      if (row.kind == static_cast<uint8_t>(format::LockKind::Unlock)) {
        const double est = static_cast<double>(row.wait_ticks) * unlock_scale;
        locks[{false, row.lock}].unlock_ticks += est;
        locks[{false, row.lock}].unlocks_timed += row.waits;
        unlock_ticks += est;
        r.time_ns_by_thread[serial] += profile.clock.to_ns_exact(est);
        continue;
      }
      const bool cond = row.kind == static_cast<uint8_t>(format::LockKind::Cond);
      LockAcc& acc = locks[{cond, row.lock}];
      const std::string kind = kind_name(row.kind);
      if (acc.kind.empty()) acc.kind = kind;
      else if (acc.kind != kind) acc.kind = "lock";  // one address used as two kinds over time
      acc.waits += row.waits;
      acc.ticks += row.wait_ticks;
      acc.max_ticks = std::max(acc.max_ticks, row.max_ticks);
      acc.timeouts += row.timeouts;
      if (row.waits) acc.threads.insert(serial);
      SiteAcc& site = acc.sites[row.site];
      site.waits += row.waits;
      site.ticks += row.wait_ticks;
      site.max_ticks = std::max(site.max_ticks, row.max_ticks);
      if (site.stack == kNoStack) site.stack = profile.stacks.find(serial, row.stack_id);
      const double ns = static_cast<double>(profile.ticks_to_ns(row.wait_ticks));
      if (cond) {
        r.cond_waits += row.waits;
        cond_ticks += row.wait_ticks;
        r.cond_wait_ns_by_thread[serial] += ns;
      } else {
        r.waits += row.waits;
        lock_ticks += row.wait_ticks;
        r.wait_ns_by_thread[serial] += ns;
        r.time_ns_by_thread[serial] += ns;
      }
    }
  }
  r.wait_ns = static_cast<double>(profile.ticks_to_ns(lock_ticks));
  r.cond_wait_ns = static_cast<double>(profile.ticks_to_ns(cond_ticks));
  r.dropped_ns = static_cast<double>(profile.ticks_to_ns(dropped_ticks));
  r.share = thread_time_ns > 0 ? r.wait_ns / thread_time_ns : 0;
  r.unlock_ns = profile.clock.to_ns_exact(unlock_ticks);
  r.time_ns = r.wait_ns + r.unlock_ns;
  r.time_share = thread_time_ns > 0 ? r.time_ns / thread_time_ns : 0;
  r.cond_share = thread_time_ns > 0 ? r.cond_wait_ns / thread_time_ns : 0;

  // The top locks of each list; only their call sites and stacks are symbolized.
  using Entry = std::pair<const std::pair<bool, uint64_t>, LockAcc>;
  std::vector<const Entry*> order;
  for (const auto& e : locks) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    const double ta = static_cast<double>(a->second.ticks) + a->second.unlock_ticks;
    const double tb = static_cast<double>(b->second.ticks) + b->second.unlock_ticks;
    return std::tie(ta, a->first.second) > std::tie(tb, b->first.second);
  });
  std::vector<const Entry*> kept;
  size_t n_locks = 0, n_conds = 0;
  for (const Entry* e : order) {
    size_t& n = e->first.first ? n_conds : n_locks;
    if (n < options.top && e->second.waits > 0) {
      kept.push_back(e);
      ++n;
    }
  }
  SymbolizeOptions so;
  if (profile.process) so.exe = profile.process->exe;
  so.source_lines = options.source_lines;
  Symbolizer symbolizer(profile.modules, so);
  std::vector<uint64_t> addresses;
  for (const Entry* e : kept) {
    for (const auto& [site, acc] : e->second.sites) {
      addresses.push_back(site);
      if (acc.stack != kNoStack) {
        const Stack& s = profile.stacks.stack(acc.stack);
        addresses.insert(addresses.end(), s.frames.begin(), s.frames.end());
      }
    }
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (!profile.modules.empty()) symbolizer.prepare(addresses);
  FrameFilter filter(profile, symbolizer);

  for (const Entry* e : kept) {
    const LockAcc& acc = e->second;
    LockRow row;
    row.address = e->first.second;
    row.kind = acc.kind;
    row.waits = acc.waits;
    row.timeouts = acc.timeouts;
    row.wait_ns = static_cast<double>(profile.ticks_to_ns(acc.ticks));
    row.max_ns = static_cast<double>(profile.ticks_to_ns(acc.max_ticks));
    row.unlock_ns = profile.clock.to_ns_exact(acc.unlock_ticks);
    row.unlocks_timed = acc.unlocks_timed;
    row.share = thread_time_ns > 0 ? row.wait_ns / thread_time_ns : 0;
    row.threads = static_cast<uint32_t>(acc.threads.size());
    for (const auto& [address, sa] : acc.sites) {
      if (sa.waits == 0) continue;
      LockSite site;
      const FrameInfo& f = symbolizer.frame(address);
      site.site = innermost(f);
      site.location = f.location();
      site.module = f.module_name;
      for (const SourceFrame& s : f.source) {
        // A function inlined into a clone of itself (Bfree into Bfree.part.0) is named once.
        if (site.chain.empty() || s.function != site.chain.back()) site.chain.push_back(s.function);
      }
      if (site.chain.empty()) site.chain.push_back(f.name());
      if (sa.stack != kNoStack) {
        // The callers: the frames after the call site in the sampled stack (the shim's own
        // frames come first in it; the site is the first frame outside the shim).
        const Stack& s = profile.stacks.stack(sa.stack);
        size_t at = 0;
        while (at < s.frames.size() && filter.in_shim(symbolizer.frame(s.frames[at]))) ++at;
        for (size_t up = at + 1; up < s.frames.size() && up <= at + 2; ++up) {
          // (A caller that repeats the name before it would only stutter.)
          std::string name = symbolizer.frame(s.frames[up]).name();
          if (name != site.chain.back()) site.chain.push_back(std::move(name));
        }
      }
      site.waits = sa.waits;
      site.wait_ns = static_cast<double>(profile.ticks_to_ns(sa.ticks));
      site.max_ns = static_cast<double>(profile.ticks_to_ns(sa.max_ticks));
      row.sites.push_back(std::move(site));
    }
    std::sort(row.sites.begin(), row.sites.end(), [](const LockSite& a, const LockSite& b) {
      return std::tie(a.wait_ns, a.waits, a.site) > std::tie(b.wait_ns, b.waits, b.site);
    });
    (e->first.first ? r.conditions : r.locks).push_back(std::move(row));
  }
  return r;
}

namespace {

std::string chain_text(const LockSite& s) {
  std::string out;
  for (size_t i = 0; i < s.chain.size(); ++i) out += (i ? " ← " : "") + s.chain[i];
  if (!s.location.empty()) out += fmt::format(" ({})", s.location);
  return out;
}

std::string lock_table(const std::vector<LockRow>& rows, size_t width) {
  TextTable t({{"lock", TextTable::Align::Left}, {"kind", TextTable::Align::Left}, {"waits"}, {"wait"},
               {"share"}, {"longest"}, {"unlock"}, {"threads"}, {"call site", TextTable::Align::Left}});
  for (const LockRow& l : rows) {
    bool first = true;
    for (const LockSite& s : l.sites) {
      if (first) {
        t.add_row({fmt::format("{:#x}", l.address), l.kind, group_digits(l.waits), format_duration_ns(l.wait_ns),
                   format_percent(l.share, 1), format_duration_ns(l.max_ns), l.kind == "mutex" ? format_duration_ns(l.unlock_ns) : "",
                   std::to_string(l.threads), chain_text(s)});
        if (l.sites.size() > 1) {
          t.add_row({"", "", group_digits(s.waits), format_duration_ns(s.wait_ns), "", "", "", "", "  … of which here"});
        }
      } else {
        t.add_row({"", "", group_digits(s.waits), format_duration_ns(s.wait_ns), "", format_duration_ns(s.max_ns), "", "",
                   "  " + chain_text(s)});
      }
      first = false;
    }
  }
  t.shrink_to_fit(8, width, 24);
  return t.render();
}

}  // namespace

std::string lock_section_text(const LockReport& r, size_t width) {
  if (!r.recorded) return "";
  std::string out;
  TextTable fields({{"", TextTable::Align::Left}, {"", TextTable::Align::Left}});
  fields.add_row({"lock wait (mutexes, rwlocks)",
                  fmt::format("{} in {} contended waits: {} of thread time", format_duration_ns(r.wait_ns),
                              group_digits(r.waits), format_percent(r.share, 1))});
  fields.add_row({"unlock (sampled, est.)",
                  fmt::format("{} in pthread_mutex_unlock ({} of {} calls timed): lock time {}, {} of thread time",
                              format_duration_ns(r.unlock_ns), group_digits(r.unlocks_timed), group_digits(r.unlocks),
                              format_duration_ns(r.time_ns), format_percent(r.time_share, 1))});
  fields.add_row({"condition waits",
                  fmt::format("{} in {} waits ({} of thread time; waiting for work by design, not contention)",
                              format_duration_ns(r.cond_wait_ns), group_digits(r.cond_waits), format_percent(r.cond_share, 1))});
  if (r.capped_threads) {
    fields.add_row({"capped", fmt::format("{} thread(s): the unlock estimate exceeded the thread's lifetime less its "
                                          "waits (a few timed unlocks preempted for long), and was scaled down to it",
                                          r.capped_threads)});
  }
  if (r.dropped_waits) {
    fields.add_row({"not in the lock table", fmt::format("{} waits, {} (counted in the total)", group_digits(r.dropped_waits),
                                                         format_duration_ns(r.dropped_ns))});
  }
  out += fields.render();
  if (r.locks.empty()) {
    out += "\n  No mutex or rwlock of the program was contended: every lock was free when tried.\n";
  } else {
    out += "\n  Top contended locks (the call site's callers come from a sampled stack)\n";
    out += lock_table(r.locks, width);
  }
  if (!r.conditions.empty()) {
    out += "\n  Condition variables waited on\n";
    out += lock_table(r.conditions, width);
  }
  return out;
}

// As the rest of report --json: durations in integer nanoseconds, shares rounded to 4 decimals.
void write_lock_report_json(JsonWriter& w, const LockReport& r) {
  const auto ns = [](double v) { return std::isfinite(v) ? static_cast<int64_t>(std::llround(std::max(0.0, v))) : 0; };
  const auto fraction = [](double v) { return std::isfinite(v) ? std::round(v * 1e4) / 1e4 : 0.0; };
  w.begin_object();
  w.field("recorded", r.recorded);
  if (r.recorded) {
    w.field("thread_time_ns", ns(r.thread_time_ns));
    w.field("waits", r.waits).field("wait_ns", ns(r.wait_ns)).field("share", fraction(r.share));
    w.field("unlock_ns", ns(r.unlock_ns)).field("unlocks", r.unlocks).field("unlocks_timed", r.unlocks_timed);
    w.field("time_ns", ns(r.time_ns)).field("time_share", fraction(r.time_share));
    w.field("capped_threads", r.capped_threads);
    w.field("cond_waits", r.cond_waits).field("cond_wait_ns", ns(r.cond_wait_ns)).field("cond_share", fraction(r.cond_share));
    w.field("dropped_waits", r.dropped_waits).field("dropped_ns", ns(r.dropped_ns));
    auto rows = [&](const char* name, const std::vector<LockRow>& list) {
      w.key(name).begin_array();
      for (const LockRow& l : list) {
        w.begin_object();
        w.field("address", fmt::format("{:#x}", l.address)).field("kind", l.kind).field("name", l.name());
        w.field("waits", l.waits).field("wait_ns", ns(l.wait_ns)).field("max_ns", ns(l.max_ns));
        w.field("unlock_ns", ns(l.unlock_ns)).field("unlocks_timed", l.unlocks_timed);
        w.field("share", fraction(l.share)).field("threads", l.threads).field("timeouts", l.timeouts);
        w.key("sites").begin_array();
        for (const LockSite& s : l.sites) {
          w.begin_object();
          w.field("site", s.site).field("location", s.location).field("module", s.module);
          w.key("chain").begin_array();
          for (const auto& c : s.chain) w.value(c);
          w.end_array();
          w.field("waits", s.waits).field("wait_ns", ns(s.wait_ns)).field("max_ns", ns(s.max_ns));
          w.end_object();
        }
        w.end_array();
        w.end_object();
      }
      w.end_array();
    };
    rows("locks", r.locks);
    rows("conditions", r.conditions);
  }
  w.end_object();
}

}  // namespace allocscope
