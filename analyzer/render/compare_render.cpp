// compare_render.cpp — the table of `allocscope compare` as text, Markdown, JSON and HTML (compare.h;
// the JSON schema is documented in docs/compare.md: keep the two in step).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "render/compare.h"
#include "render/report.h"
#include "render/html_page.h"
#include "render/html_report.h"
#include "util/json_writer.h"
#include "util/text_table.h"
#include "util/units.h"

namespace allocscope {

namespace {

constexpr size_t kWidth = 100;

std::string command_line(const std::vector<std::string>& command) {
  std::string line;
  for (const auto& arg : command) line += (line.empty() ? "" : " ") + printable(arg);
  return line;
}

std::string signed_percent(double pct) { return fmt::format("{:+.1f} %", pct); }

std::string opt_percent(const std::optional<double>& fraction) { return fraction ? format_percent(*fraction, 1) : "-"; }

std::string coverage_cell(const CompareRow& row, bool first) {
  if (first) return "baseline";
  if (!row.coverage) return "-";
  return fmt::format("{:.0f} %", 100 * *row.coverage);
}

std::string classes_cell(const CompareRow& row) {
  std::string cell;
  for (size_t i = 0; i < row.top_classes.size(); ++i) {
    const ClassCost& c = row.top_classes[i];
    cell += fmt::format("{}{} {:.0f} %", cell.empty() ? "" : ", ", printable(c.label), 100 * c.share);
  }
  return cell.empty() ? "-" : cell;
}

std::string row_label(const CompareRow& row) { return row.spec.variant ? row.spec.name + " (variant)" : row.spec.name; }

std::string runs_cell(const CompareRow& row) { return fmt::format("{}/{}", row.ok_runs, row.runs.size()); }

// The cells of one row, in the order of columns(); the costliest classes last, when asked for.
std::vector<std::string> cells(const CompareRow& row, bool first, bool with_classes, bool locks) {
  std::vector<std::string> cells = {row_label(row),
                                    fmt::format("{:.3f} s", row.wall_ns / 1e9),
                                    first ? "-" : signed_percent(row.delta_pct),
                                    format_bytes(static_cast<ByteCount>(std::llround(row.maxrss_kb)) * 1024),
                                    opt_percent(row.allocator_share) + (row.allocator_unsure ? " unsure" : ""),
                                    opt_percent(row.wait_share),
                                    row.contention ? contention_kind_name(row.contention->kind) : "-",
                                    coverage_cell(row, first)};
  if (locks) {  // --locks: the program's own locks, and the gap they and the allocator explain
    cells.push_back(opt_percent(row.lock_share));
    cells.push_back(first ? "baseline" : row.explained ? fmt::format("{:.0f} %", 100 * *row.explained) : "-");
    cells.push_back(first                     ? "baseline"
                    : row.cpu_explained       ? fmt::format("{:.0f} %", 100 * *row.cpu_explained)
                    : row.cpu_too_few_samples ? "unsure"
                                              : "-");
  }
  cells.push_back(runs_cell(row));
  if (with_classes) cells.push_back(classes_cell(row));
  return cells;
}

std::vector<std::string> columns(bool locks) {
  std::vector<std::string> c = {"row", "wall", "Δ wall", "max RSS", "allocator", "waiting", "contention", "coverage"};
  if (locks) c.insert(c.end(), {"other locks", "alloc+locks", "of CPU"});
  c.insert(c.end(), {"ok", "costliest classes"});
  return c;
}

// The footnote: how the numbers were measured, and what each attribution column means.
std::string footnote(const CompareResult& r) {
  const std::string baseline = r.rows.empty() ? "the first row" : r.rows.front().spec.name;
  return fmt::format(
      "Every run had the allocscope shim preloaded, in every row: the same observer everywhere, so its overhead "
      "(docs/overhead.md) is in every wall time. {} {} per row, interleaved (round-robin, each round in a rotated "
      "order); wall (fork to exit) and max RSS (wait4) are medians of the runs that exited 0. Δ wall is against "
      "{}.{} allocator: estimated time inside the allocator over the threads' time; waiting: its blocked share; "
      "costliest classes: share of allocator time; coverage: the part of the thread-time gap to {} that the "
      "allocator explains (allocscope diff of the median runs; none when the gap is under 2 % of thread time){}.",
      r.runs_per_row, r.runs_per_row == 1 ? "run" : "runs", baseline,
      r.sample_every ? fmt::format(" The shim timed calls with --sample {} in every row.", *r.sample_every) : "",
      baseline,
      r.locks ? "; other locks: the program's own lock time (contended waits and unlocks) over the threads' time (record --locks); "
                "alloc+locks: the part of the gap that the allocator and those waits explain together; of CPU: the part "
                "of the threads' CPU-time gap spent inside allocator and lock calls (CPU samples)"
              : "");
}

}  // namespace

std::string compare_analysis_error(const CompareRow& row) {
  switch (row.analysis_gap) {
    case AnalysisGap::None: return "";
    case AnalysisGap::NoProfile: return "no run wrote a profile";
    case AnalysisGap::NoneTimed:
      if (row.sparse_calls)
        return fmt::format("none of its {} allocator calls was timed (too few calls for the sampling: try --sample 1)",
                           group_digits(row.calls));
      return fmt::format(
          "none of its {} allocator calls was timed (a run too short for the sampling: try --sample with a small N)",
          group_digits(row.calls));
    case AnalysisGap::Failed: return row.analysis_failure;
  }
  return "";
}

std::string compare_coverage_reason(const CompareRow& row) {
  switch (row.coverage_gap) {
    case CoverageGap::None: return "";
    case CoverageGap::Baseline: return "the baseline";
    case CoverageGap::BaselineNoProfile: return "the baseline has no profile";
    case CoverageGap::NoProfile: return "no run wrote a profile";
    case CoverageGap::BaselineNoAttribution: return "the baseline has no attribution";
    case CoverageGap::NoAttribution: return "this row has no attribution";
    case CoverageGap::SameThreadTime: return "the two median runs take the same thread time within 2 %: no gap to attribute";
    case CoverageGap::WithinSpread:
      return "the median wall times differ by no more than the runs of one row differ among themselves: no gap to "
             "attribute (more --runs, or a quieter machine)";
    case CoverageGap::OffCpu:
      return "most of the gap is time the threads spent off the CPU outside allocator calls (preempted or blocked): "
             "no share is claimed (`allocscope diff` of the two profiles says which)";
    case CoverageGap::Unsure:
      return "the allocator's part of the gap is unsure (a bound over half of it): no share is claimed (record longer, "
             "or with a smaller --sample)";
    case CoverageGap::Exceeds:
      return "the allocator's change exceeds the whole gap by more than its bound: the runs differ outside the "
             "allocator too, and no share is claimed (`allocscope diff` of the two profiles says more)";
    case CoverageGap::Failed: return row.coverage_failure;
  }
  return "";
}

std::vector<std::string> compare_run_notes(const CompareResult& result) {
  std::vector<std::string> notes;
  for (const auto& row : result.rows) {
    std::vector<int> statuses;
    const CompareRun* last_failed = nullptr;
    for (const auto& run : row.runs) {
      if (run.status == 0) continue;
      if (std::find(statuses.begin(), statuses.end(), run.status) == statuses.end()) statuses.push_back(run.status);
      last_failed = &run;
    }
    if (last_failed) {
      std::string list;
      for (const int status : statuses) list += (list.empty() ? "" : ", ") + std::to_string(status);
      const size_t failed = row.runs.size() - row.ok_runs;
      std::string note = fmt::format("{}: the workload exited with status {} in {} of {} {}", row.spec.name, list,
                                     failed, row.runs.size(), row.runs.size() == 1 ? "run" : "runs");
      note += row.ok_runs > 0 ? "; the medians are of the runs that exited 0" : "; the medians are of these runs";
      if (!last_failed->last_output.empty()) note += fmt::format(" (last output: \"{}\")", last_failed->last_output);
      notes.push_back(note);
    }
    if (row.analysis_gap != AnalysisGap::None) {
      notes.push_back(fmt::format("{}: no attribution: {}", row.spec.name, compare_analysis_error(row)));
    } else if (share_unsure(row)) {
      notes.push_back(fmt::format(
          "{}: the allocator's share is unsure: {:.1f} % ± {:.1f} % of thread time, from {} timed calls (record "
          "longer, or with a smaller --sample)",
          row.spec.name, 100 * *row.allocator_share, 100 * *row.allocator_error_share, group_digits(row.timed_calls)));
    }
  }
  return notes;
}

namespace {

std::vector<std::string> all_notes(const CompareResult& r) {
  std::vector<std::string> notes;
  for (const auto& s : r.skipped) notes.push_back(fmt::format("skipped {}: {}", s.name, s.reason));
  for (const auto& row : r.rows) {
    const std::string reason = compare_coverage_reason(row);
    if (!row.coverage && !reason.empty() && &row != &r.rows.front()) {
      notes.push_back(fmt::format("{}: no coverage: {}", row.spec.name, reason));
    }
  }
  const std::vector<std::string> run_notes = compare_run_notes(r);
  notes.insert(notes.end(), run_notes.begin(), run_notes.end());
  if (r.output_dir) notes.push_back(fmt::format("profiles and the runs' output: {}", printable(r.output_dir->string())));
  return notes;
}

std::string markdown_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}


}  // namespace

std::string compare_text(const CompareResult& r) {
  std::string out = fmt::format("allocscope compare: {}\n\n", command_line(r.command));
  // The costliest classes have long names: in text they get a table of their own.
  const std::vector<std::string> names = columns(r.locks);
  std::vector<TextTable::Column> text_columns;
  for (size_t i = 0; i + 1 < names.size(); ++i) {  // all but the costliest classes
    text_columns.push_back({names[i], i == 0 ? TextTable::Align::Left : TextTable::Align::Right});
  }
  TextTable table(text_columns);
  TextTable classes({{"", TextTable::Align::Left}, {"", TextTable::Align::Left}});
  for (size_t i = 0; i < r.rows.size(); ++i) {
    table.add_row(cells(r.rows[i], i == 0, false, r.locks));
    classes.add_row({row_label(r.rows[i]), classes_cell(r.rows[i])});
  }
  out += table.render();
  out += "\nCostliest size classes (share of the allocator's time)\n" + classes.render();
  const auto notes = all_notes(r);
  if (!notes.empty()) {
    out += "\nNotes\n";
    for (const auto& note : notes) {
      std::string item = wrap_words(note, kWidth, "    ");  // continuation lines under the text
      out += item.replace(0, 4, "  - ");
    }
  }
  out += "\n" + wrap_words(footnote(r), kWidth, "");
  return out;
}

std::string compare_markdown(const CompareResult& r) {
  std::string out = fmt::format("allocscope compare: `{}`\n\n", command_line(r.command));
  std::string header = "|", rule = "|";
  const std::vector<std::string> names = columns(r.locks);
  for (size_t i = 0; i < names.size(); ++i) {
    header += " " + names[i] + " |";
    rule += i == 0 || i + 1 == names.size() ? " --- |" : " ---: |";
  }
  out += header + "\n" + rule + "\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    std::string line = "|";
    for (const auto& cell : cells(r.rows[i], i == 0, true, r.locks)) line += " " + markdown_cell(cell) + " |";
    out += line + "\n";
  }
  const auto notes = all_notes(r);
  if (!notes.empty()) {
    out += "\n";
    for (const auto& note : notes) out += "- " + markdown_cell(note) + "\n";
  }
  out += "\n" + footnote(r) + "\n";
  return out;
}

std::string compare_json(const CompareResult& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("schema", "allocscope-compare/2");
  w.key("command").begin_array();
  for (const auto& arg : r.command) w.value(arg);
  w.end_array();
  w.field("runs_per_row", r.runs_per_row);
  w.field("sample_every", r.sample_every);
  w.field("locks", r.locks);
  w.field("baseline", r.rows.empty() ? std::optional<std::string>() : r.rows.front().spec.name);
  w.key("rows").begin_array();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const CompareRow& row = r.rows[i];
    w.begin_object();
    w.field("name", row.spec.name).field("kind", row.spec.variant ? "variant" : "allocator");
    w.field("program", row.spec.program.string());
    w.field("allocator_library", row.spec.allocator ? std::optional<std::string>(row.spec.allocator->string())
                                                    : std::nullopt);
    w.field("allocator_seen", row.allocator_seen.empty() ? std::optional<std::string>() : row.allocator_seen);
    w.field("wall_ns", static_cast<int64_t>(std::llround(row.wall_ns)));
    w.field("maxrss_kb", static_cast<int64_t>(std::llround(row.maxrss_kb)));
    w.field("delta_pct", json_rounded(row.delta_pct, 1e2));
    w.field("allocator_share", json_fraction(row.allocator_share));
    w.field("allocator_share_error", json_fraction(row.allocator_error_share));
    w.field("allocator_share_unsure", row.allocator_unsure);
    w.field("wait_share", json_fraction(row.wait_share));
    if (row.contention) {
      w.key("contention").begin_object();
      write_contention_verdict(w, *row.contention);
      w.end_object();
    } else {
      w.key("contention").null();
    }
    w.field("timed_calls", row.timed_calls);
    const std::string analysis_error = compare_analysis_error(row);
    w.field("analysis_error", analysis_error.empty() ? std::optional<std::string>() : analysis_error);
    w.key("top_classes").begin_array();
    for (const auto& c : row.top_classes) {
      w.begin_object();
      w.field("label", c.label).field("time_ns", static_cast<int64_t>(std::llround(c.time_ns)));
      w.field("share", json_fraction(c.share));
      w.end_object();
    }
    w.end_array();
    w.field("coverage", json_fraction(row.coverage));
    w.field("wall_coverage", json_fraction(row.wall_coverage));
    w.field("thread_gap_share", json_fraction(row.thread_gap_share));
    const std::string coverage_reason = compare_coverage_reason(row);
    w.field("coverage_reason", coverage_reason.empty() ? std::optional<std::string>() : coverage_reason);
    if (r.locks) {
      w.field("lock_share", json_fraction(row.lock_share)).field("top_lock", row.top_lock);
      w.field("explained", json_fraction(row.explained));
      w.field("cpu_explained", json_fraction(row.cpu_explained));
      w.field("cpu_explained_error", json_fraction(row.cpu_explained_error));
      w.field("cpu_too_few_samples", row.cpu_too_few_samples);
    }
    w.field("ok_runs", row.ok_runs);
    w.key("exit_statuses").begin_array();
    for (const auto& run : row.runs) w.value(run.status);
    w.end_array();
    w.field("median_run", row.median_run ? std::optional<unsigned>(row.runs[*row.median_run].round + 1) : std::nullopt);
    w.key("runs").begin_array();
    for (const auto& run : row.runs) {
      w.begin_object();
      w.field("round", run.round + 1).field("wall_ns", static_cast<int64_t>(std::llround(run.wall_ns)));
      w.field("maxrss_kb", static_cast<int64_t>(run.maxrss_kb)).field("status", run.status);
      w.field("profile", run.profile ? std::optional<std::string>(run.profile->string()) : std::nullopt);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("skipped").begin_array();
  for (const auto& s : r.skipped) w.begin_object().field("name", s.name).field("reason", s.reason).end_object();
  w.end_array();
  w.key("notes").begin_array();
  for (const auto& note : compare_run_notes(r)) w.value(note);
  w.end_array();
  w.field("output_dir", r.output_dir ? std::optional<std::string>(r.output_dir->string()) : std::nullopt);
  w.field("exit_status", r.exit_status);
  w.field("footnote", footnote(r));
  w.end_object();
  out += "\n";
  return out;
}

}  // namespace allocscope

namespace allocscope {

namespace {

// One sentence naming the row furthest from the baseline and what the allocator explains of it.
std::string compare_verdict(const CompareResult& r) {
  if (r.rows.size() < 2) return "One row only: nothing to compare.";
  const CompareRow* worst = nullptr;
  for (size_t i = 1; i < r.rows.size(); ++i) {
    if (!worst || std::fabs(r.rows[i].delta_pct) > std::fabs(worst->delta_pct)) worst = &r.rows[i];
  }
  std::string text = fmt::format("{} is {} than {} ({:+.1f} % wall time)", row_label(*worst),
                                 worst->delta_pct >= 0 ? "slower" : "faster", r.rows.front().spec.name,
                                 worst->delta_pct);
  if (worst->coverage) {
    text += fmt::format("; the allocator explains {:.0f} % of the thread-time gap", 100 * *worst->coverage);
  } else if (const std::string reason = compare_coverage_reason(*worst); !reason.empty()) {
    text += "; no coverage: " + reason;
  }
  if (worst->allocator_share && worst->allocator_unsure) {
    text += ". Its allocator's share of thread time is unsure (run too short: record longer, or with a smaller --sample)";
  } else if (worst->allocator_share) {
    text += fmt::format(". Its allocator takes {} of thread time", format_percent(*worst->allocator_share, 1));
    if (worst->wait_share) text += fmt::format(", {} of that waiting", format_percent(*worst->wait_share, 1));
    if (worst->contention) text += fmt::format("; contention: {}", contention_kind_name(worst->contention->kind));
  }
  return text + ".";
}

}  // namespace

std::string compare_html(const CompareResult& r) {
  HtmlPage page("allocscope compare: " + command_line(r.command));
  page.fact("command", command_line(r.command));
  page.fact("runs per row", fmt::format("{} (interleaved)", r.runs_per_row));
  if (r.sample_every) page.fact("sampling", fmt::format("--sample {}", *r.sample_every));
  page.verdict(compare_verdict(r));

  CompareBarTable bars;
  bars.label = "Wall time per row, with the allocator's share";
  // The allocator's time split as report splits it, in the same colours (html_page.cpp).
  bars.share_names = {"fast path", "slow but running", "waiting (blocked)"};
  for (const auto& row : r.rows) {
    CompareBarRow bar;
    bar.name = row_label(row);
    if (row.ok_runs > 0 || row.wall_ns > 0) bar.wall_ns = row.wall_ns;
    const double share = row.allocator_share.value_or(0.0);
    const double wait = row.wait_share.value_or(0.0);
    const double slow = std::min(row.slow_share.value_or(0.0), std::max(0.0, 1 - wait));
    bar.shares = {share * (1 - wait - slow), share * slow, share * wait};
    bars.rows.push_back(std::move(bar));
  }
  page.section("Wall time per row",
               "Each bar is a row's median wall time; its first parts are the allocator's estimated "
               "share of the threads' time (fast path, slow but running, then blocked waiting), drawn "
               "as that fraction of the bar.",
               compare_bars_html(bars));

  std::vector<std::vector<std::string>> table{columns(r.locks)};
  for (size_t i = 0; i < r.rows.size(); ++i) table.push_back(cells(r.rows[i], i == 0, true, r.locks));
  page.section("The table", footnote(r), html_table(table, true));

  const auto notes = all_notes(r);
  if (!notes.empty()) {
    std::vector<std::vector<std::string>> rows{{"note"}};
    for (const auto& note : notes) rows.push_back({note});
    page.section("Notes", "", html_table(rows));
  }
  return page.finish();
}

}  // namespace allocscope
