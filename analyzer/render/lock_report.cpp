#include "render/lock_report.h"

#include <fmt/format.h>

#include "util/json_writer.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

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
  fields.add_row({"lock wait (mutexes, rwlocks, spin locks)",
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
    out += "\n  No mutex, rwlock or spin lock of the program was contended: every lock was free when tried.\n";
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
  w.begin_object();
  w.field("recorded", r.recorded);
  if (r.recorded) {
    w.field("thread_time_ns", json_ns(r.thread_time_ns));
    w.field("waits", r.waits).field("wait_ns", json_ns(r.wait_ns)).field("share", json_fraction(r.share));
    w.field("unlock_ns", json_ns(r.unlock_ns)).field("unlocks", r.unlocks).field("unlocks_timed", r.unlocks_timed);
    w.field("time_ns", json_ns(r.time_ns)).field("time_share", json_fraction(r.time_share));
    w.field("capped_threads", r.capped_threads);
    w.field("cond_waits", r.cond_waits).field("cond_wait_ns", json_ns(r.cond_wait_ns)).field("cond_share", json_fraction(r.cond_share));
    w.field("dropped_waits", r.dropped_waits).field("dropped_ns", json_ns(r.dropped_ns));
    auto rows = [&](const char* name, const std::vector<LockRow>& list) {
      w.key(name).begin_array();
      for (const LockRow& l : list) {
        w.begin_object();
        w.field("address", fmt::format("{:#x}", l.address)).field("kind", l.kind).field("name", l.name());
        w.field("waits", l.waits).field("wait_ns", json_ns(l.wait_ns)).field("max_ns", json_ns(l.max_ns));
        w.field("unlock_ns", json_ns(l.unlock_ns)).field("unlocks_timed", l.unlocks_timed);
        w.field("share", json_fraction(l.share)).field("threads", l.threads).field("timeouts", l.timeouts);
        w.key("sites").begin_array();
        for (const LockSite& s : l.sites) {
          w.begin_object();
          w.field("site", s.site).field("location", s.location).field("module", s.module);
          w.key("chain").begin_array();
          for (const auto& c : s.chain) w.value(c);
          w.end_array();
          w.field("waits", s.waits).field("wait_ns", json_ns(s.wait_ns)).field("max_ns", json_ns(s.max_ns));
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
