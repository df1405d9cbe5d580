// lock_report.cpp — see lock_report.h.
#include "model/lock_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <tuple>

#include "model/callsites.h"
#include "profile/profile.h"
#include "symbols/symbolize.h"
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
    case format::LockKind::Spin: return "spinlock";
    case format::LockKind::Futex: return "futex";
  }
  return "lock";
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

namespace {

using LockKey = std::pair<bool, uint64_t>;  // (is condition, address)
using LockWaitsRecord = decltype(Profile::lock_waits)::mapped_type;  // one thread's waits

// The waits of every thread, summed per lock and in the report's totals.
struct LockTally {
  std::map<LockKey, LockAcc> locks;
  uint64_t lock_ticks = 0, cond_ticks = 0, dropped_ticks = 0;
  double unlock_ticks = 0;
};

// The factor from a thread's timed unlocks to all of them.  A few timed unlocks that were
// preempted for milliseconds weigh 64 times their share: the estimate of a thread is capped at
// what its lifetime leaves after its waits (the cost model caps an allocator estimate the same
// way), and the capped threads are counted.
double unlock_scale_of(const Profile& profile, const LockWaitsRecord& rec, uint32_t serial,
                       const std::map<uint32_t, double>& lifetimes_ns, LockReport& r) {
  double unlock_scale = rec.header.unlocks_timed
                            ? static_cast<double>(rec.header.unlocks) / static_cast<double>(rec.header.unlocks_timed)
                            : 0;
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
  return unlock_scale;
}

// One wait row of thread `serial` (not an unlock) in its lock's and its call site's sums.
void add_wait(LockTally& t, LockReport& r, const Profile& profile, uint32_t serial, const format::LockWaitRow& row) {
  const bool cond = row.kind == static_cast<uint8_t>(format::LockKind::Cond);
  LockAcc& acc = t.locks[{cond, row.lock}];
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
    t.cond_ticks += row.wait_ticks;
    r.cond_wait_ns_by_thread[serial] += ns;
  } else {
    r.waits += row.waits;
    t.lock_ticks += row.wait_ticks;
    r.wait_ns_by_thread[serial] += ns;
    r.time_ns_by_thread[serial] += ns;
  }
}

// One thread's lock waits record: its dropped waits, its unlocks (estimated) and its waits.
void add_thread(LockTally& t, LockReport& r, const Profile& profile, uint32_t serial, const LockWaitsRecord& rec,
                const std::map<uint32_t, double>& lifetimes_ns) {
  r.dropped_waits += rec.header.dropped_waits;
  t.dropped_ticks += rec.header.dropped_ticks;
  r.waits += rec.header.dropped_waits;
  t.lock_ticks += rec.header.dropped_ticks;
  r.wait_ns_by_thread[serial] += static_cast<double>(profile.ticks_to_ns(rec.header.dropped_ticks));
  r.time_ns_by_thread[serial] += static_cast<double>(profile.ticks_to_ns(rec.header.dropped_ticks));
  r.unlocks += rec.header.unlocks;
  r.unlocks_timed += rec.header.unlocks_timed;
  const double unlock_scale = unlock_scale_of(profile, rec, serial, lifetimes_ns, r);
  for (const format::LockWaitRow& row : rec.rows) {
    if (row.kind == static_cast<uint8_t>(format::LockKind::Unlock)) {
      const double est = static_cast<double>(row.wait_ticks) * unlock_scale;
      t.locks[{false, row.lock}].unlock_ticks += est;
      t.locks[{false, row.lock}].unlocks_timed += row.waits;
      t.unlock_ticks += est;
      r.time_ns_by_thread[serial] += profile.clock.to_ns_exact(est);
      continue;
    }
    add_wait(t, r, profile, serial, row);
  }
}

using Entry = std::pair<const LockKey, LockAcc>;

// The top locks of each list (locks, conditions), costliest first.
std::vector<const Entry*> top_locks(const std::map<LockKey, LockAcc>& locks, size_t top) {
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
    if (n < top && e->second.waits > 0) {
      kept.push_back(e);
      ++n;
    }
  }
  return kept;
}

// The call sites and stack frames of the kept locks: the only addresses symbolized.
std::vector<uint64_t> site_addresses(const Profile& profile, const std::vector<const Entry*>& kept) {
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
  return addresses;
}

// A call site of a lock: its name, its chain of inlined functions and callers, its waits.
LockSite lock_site(const Profile& profile, Symbolizer& symbolizer, const FrameFilter& filter, uint64_t address,
                   const SiteAcc& sa) {
  LockSite site;
  const FrameInfo& f = symbolizer.frame(address);
  site.site = f.innermost();
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
  return site;
}

LockRow lock_row(const Profile& profile, Symbolizer& symbolizer, const FrameFilter& filter, const Entry& e,
                 double thread_time_ns) {
  const LockAcc& acc = e.second;
  LockRow row;
  row.address = e.first.second;
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
    row.sites.push_back(lock_site(profile, symbolizer, filter, address, sa));
  }
  std::sort(row.sites.begin(), row.sites.end(), [](const LockSite& a, const LockSite& b) {
    return std::tie(a.wait_ns, a.waits, a.site) > std::tie(b.wait_ns, b.waits, b.site);
  });
  return row;
}

}  // namespace

LockReport analyze_locks(const Profile& profile, double thread_time_ns, const std::map<uint32_t, double>& lifetimes_ns,
                         const LockOptions& options) {
  LockReport r;
  r.recorded = profile.lock_mode();
  r.thread_time_ns = thread_time_ns;
  if (!r.recorded && profile.lock_waits.empty()) return r;
  r.recorded = true;

  LockTally t;
  for (const auto& [serial, rec] : profile.lock_waits) add_thread(t, r, profile, serial, rec, lifetimes_ns);
  r.wait_ns = static_cast<double>(profile.ticks_to_ns(t.lock_ticks));
  r.cond_wait_ns = static_cast<double>(profile.ticks_to_ns(t.cond_ticks));
  r.dropped_ns = static_cast<double>(profile.ticks_to_ns(t.dropped_ticks));
  r.share = thread_time_ns > 0 ? r.wait_ns / thread_time_ns : 0;
  r.unlock_ns = profile.clock.to_ns_exact(t.unlock_ticks);
  r.time_ns = r.wait_ns + r.unlock_ns;
  r.time_share = thread_time_ns > 0 ? r.time_ns / thread_time_ns : 0;
  r.cond_share = thread_time_ns > 0 ? r.cond_wait_ns / thread_time_ns : 0;

  // The top locks of each list; only their call sites and stacks are symbolized.
  const std::vector<const Entry*> kept = top_locks(t.locks, options.top);
  SymbolizeOptions so;
  if (profile.process) so.exe = profile.process->exe;
  so.source_lines = options.source_lines;
  Symbolizer symbolizer(profile.modules, so);
  if (!profile.modules.empty()) symbolizer.prepare(site_addresses(profile, kept));
  FrameFilter filter(profile, symbolizer);
  for (const Entry* e : kept) {
    (e->first.first ? r.conditions : r.locks).push_back(lock_row(profile, symbolizer, filter, *e, thread_time_ns));
  }
  return r;
}

}  // namespace allocscope
