// Chrome trace-event JSON, streamed: one complete event per call, a counter of threads inside.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "allocscope/ops.h"
#include "model/callsites.h"
#include "export/export.h"
#include "util/json_writer.h"
#include "util/progress_bar.h"

namespace allocscope {

namespace {

// Exports of at least this many calls show a progress bar (progress_bar.h) on stderr.
constexpr uint64_t kProgressCalls = 1'000'000;
constexpr size_t kProgressSteps = 20;

// A progress bar over the calls read, in kProgressSteps steps.
class CallProgress {
 public:
  CallProgress(const Profile& profile, uint64_t total, bool enabled) : total_(total) {
    if (!enabled || total < kProgressCalls) return;
    bar_.emplace(kProgressSteps);
    bar_->begin_step(fmt::format("exporting {} calls of {}", total, profile.file));
    next_ = step_size();
  }
  void add() {
    if (!bar_ || ++seen_ < next_) return;
    bar_->end_step(fmt::format("{} of {} calls read", seen_, total_));
    next_ = bar_->done() + 1 >= kProgressSteps ? total_ : (bar_->done() + 1) * step_size();
  }
  void finish() {
    if (!bar_) return;
    while (bar_->done() < kProgressSteps) bar_->end_step(fmt::format("{} of {} calls read", seen_, total_));
    bar_->finish();
  }

 private:
  uint64_t step_size() const { return std::max<uint64_t>(1, total_ / kProgressSteps); }
  std::optional<ProgressBar> bar_;
  uint64_t total_, seen_ = 0, next_ = 0;
};

class ChromeWriter {
 public:
  ChromeWriter(std::FILE* out, const Profile& profile, std::vector<std::string> site_names, const ExportOptions& options)
      : out_(out), profile_(profile), sites_(std::move(site_names)) {
    origin_ = profile.process ? profile.process->info.start_tick : 0;
    pid_ = profile.process ? profile.process->info.pid : 1;
    auto resolve = [&](const TimeBound& b) {
      if (b.tick) return *b.tick;
      const double ticks = b.seconds * profile.clock.hz();
      return origin_ + (ticks >= 1.8e19 ? ~uint64_t{0} : static_cast<uint64_t>(std::max(0.0, ticks)));
    };
    if (options.from) from_ = resolve(*options.from);
    if (options.to) to_ = resolve(*options.to);
    if (!options.threads.empty()) {
      threads_filter_ = true;
      for (const ThreadProfile& t : profile.threads) {
        if (std::find(options.threads.begin(), options.threads.end(), t.tid) != options.threads.end()) {
          kept_threads_.insert(t.serial);
        }
      }
    }
    std::fputs("{\"traceEvents\":[\n", out_);
  }

  uint64_t from() const { return from_; }
  bool in_range(uint64_t tick) const { return tick >= from_ && tick < to_; }
  bool keep(uint32_t thread, uint64_t start) const {
    return in_range(start) && (!threads_filter_ || kept_threads_.contains(thread));
  }

  // µs from the process start, with ns precision.
  std::string ts(uint64_t tick) const {
    const uint64_t ns = tick > origin_ ? profile_.ticks_to_ns(tick - origin_) : 0;
    return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
  }
  std::string us(uint64_t ticks) const {
    const uint64_t ns = profile_.ticks_to_ns(ticks);
    return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
  }

  void event(const std::string& json) {
    if (!first_) std::fputs(",\n", out_);
    first_ = false;
    std::fputs(json.c_str(), out_);
  }

  // A timed call is a complete event ("X") with its duration; a call without one (a trace
  // recorded with --sample N > 1, outside the timing windows) an instant event ("i") on its thread.
  void call(uint32_t thread, unsigned op, bool failed, uint64_t start, std::optional<uint64_t> duration,
            std::optional<uint64_t> size, std::optional<uint64_t> addr, std::optional<uint64_t> old_addr,
            StackIndex stack) {
    if (!keep(thread, start)) return;
    std::string args = size ? fmt::format("\"size\":{}", *size) : std::string();
    auto add = [&](const std::string& field) {
      if (!args.empty()) args += ',';
      args += field;
    };
    if (addr) add(fmt::format("\"addr\":\"0x{:x}\"", *addr));
    if (old_addr) add(fmt::format("\"old_addr\":\"0x{:x}\"", *old_addr));
    if (failed) add("\"failed\":true");
    if (stack != kNoStack && stack < sites_.size()) add("\"site\":" + json_quote(sites_[stack]));
    const uint64_t tid = tid_of(thread);
    if (duration) {
      event(fmt::format("{{\"name\":\"{}\",\"cat\":\"allocator\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{{}}}}}",
                        op_label(op), pid_, tid, ts(start), us(*duration), args));
    } else {
      event(fmt::format("{{\"name\":\"{}\",\"cat\":\"allocator\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"ts\":{},\"args\":{{{}}}}}",
                        op_label(op), pid_, tid, ts(start), args));
    }
    ++written_;
    threads_[thread] = true;
  }

  void counter(uint64_t tick, uint32_t inside) {
    event(fmt::format("{{\"name\":\"threads in allocator\",\"ph\":\"C\",\"pid\":{},\"ts\":{},\"args\":{{\"threads\":{}}}}}",
                      pid_, ts(tick), inside));
  }

  // Metadata: the process's and each thread's name and order, after the events (viewers take them
  // from anywhere in the file).  The main thread (tid = pid) is named after the program.
  void finish(bool trace) {
    const std::string program = profile_.process ? profile_.process->exe : profile_.file;
    const std::string base = std::filesystem::path(program).filename().string();
    event(fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}", pid_,
                      json_quote(program)));
    std::map<uint64_t, uint32_t> named;  // tid -> first thread serial (a tid can be reused)
    for (const auto& [serial, used] : threads_) named.try_emplace(tid_of(serial), serial);
    for (const auto& [tid, serial] : named) {
      const std::string name = tid == pid_ && !base.empty() ? base : fmt::format("thread {}", serial);
      event(fmt::format("{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid_,
                        tid, json_quote(name)));
      event(fmt::format("{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                        pid_, tid, serial));
    }
    fmt::print(out_, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":\"allocscope\",\"file\":{},\"mode\":\"{}\",\"calls\":{}}}}}\n",
               json_quote(profile_.file), trace ? "trace" : "sampled", written_);
  }

  uint64_t written() const { return written_; }

 private:
  // The thread's id in the process (ThreadProfile::tid); its serial when the profile lacks it.
  uint64_t tid_of(uint32_t serial) const {
    const ThreadProfile* t = profile_.find_thread(serial);
    return t && t->tid ? t->tid : serial;
  }

  std::FILE* out_;
  const Profile& profile_;
  std::vector<std::string> sites_;
  uint64_t origin_ = 0;
  uint32_t pid_ = 1;
  uint64_t from_ = 0, to_ = ~uint64_t{0};
  bool threads_filter_ = false;
  std::set<uint32_t> kept_threads_;
  bool first_ = true;
  uint64_t written_ = 0;
  std::map<uint32_t, bool> threads_;
};

class ChromeVisitor : public TraceVisitor {
 public:
  ChromeVisitor(ChromeWriter& writer, const StackTable& stacks, CallProgress& progress)
      : writer_(writer), stacks_(stacks), progress_(progress) {}

  void enter(const TraceCall& call) override {
    step(call.enter_tick);
    ++inside_;
  }
  void exit(const TraceCall& call) override {
    step(call.exit_tick);
    if (inside_) --inside_;
    const trace::Record& r = call.record;
    const bool timed = r.duration != 0;  // trace_codec.h: 0 means not timed
    writer_.call(call.thread, r.op, r.failed, call.enter_tick, timed ? std::optional(call.duration()) : std::nullopt,
                 trace::has_size(r.op) ? std::optional<uint64_t>(r.size) : std::nullopt, r.addr,
                 trace::has_old_addr(r.op) ? std::optional<uint64_t>(r.old_addr) : std::nullopt,
                 stacks_.find(call.thread, r.stack_id));
    progress_.add();
  }
  void finish() override { flush(); }

 private:
  // The counter changes once per tick, to the level after every step at that tick; inside the
  // range only, starting with the level at its start.
  void step(uint64_t tick) {
    if (started_ && tick != tick_) flush();
    started_ = true;
    tick_ = tick;
  }
  void flush() {
    if (!started_) return;
    if (tick_ < writer_.from()) {
      before_ = inside_;  // the level when the range begins
      return;
    }
    if (!writer_.in_range(tick_)) return;
    if (!opened_) {
      opened_ = true;
      if (writer_.from() > 0) writer_.counter(writer_.from(), before_);
      emitted_ = before_;
    }
    if (inside_ != emitted_) {
      writer_.counter(tick_, inside_);
      emitted_ = inside_;
    }
  }

  ChromeWriter& writer_;
  const StackTable& stacks_;
  CallProgress& progress_;
  bool started_ = false, opened_ = false;
  uint64_t tick_ = 0;
  uint32_t inside_ = 0, emitted_ = 0, before_ = 0;
};

std::vector<std::string> site_names(const Profile& profile, const ExportOptions& options) {
  std::vector<std::string> names(profile.stacks.stacks().size());
  if (names.empty()) return names;
  const auto symbolizer = stack_symbolizer(profile, options.source_lines);
  FrameFilter filter(profile, *symbolizer);
  for (size_t i = 0; i < names.size(); ++i) {
    const Stack& stack = profile.stacks.stack(static_cast<StackIndex>(i));
    const auto at = filter.call_site(stack);
    if (!at) {
      names[i] = "[allocator]";
      continue;
    }
    const FrameInfo& f = symbolizer->frame(stack.frames[*at]);
    const std::string where = f.location();
    const std::string fn = !f.source.empty() && !f.source.front().function.empty() ? f.source.front().function : f.name();
    names[i] = where.empty() ? fn : fmt::format("{} ({})", fn, where);
  }
  return names;
}

}  // namespace

uint64_t export_chrome(const Profile& profile, std::FILE* out, const ExportOptions& options) {
  const std::filesystem::path path = profile.file;
  ChromeWriter writer(out, profile, site_names(profile, options), options);
  const bool trace = !profile.trace_chunks.empty();
  CallProgress progress(profile, trace ? profile.trace_records_read : profile.events_read, options.progress);
  if (trace) {
    ChromeVisitor visitor(writer, profile.stacks, progress);
    TraceVisitor* visitors[] = {&visitor};
    merge_trace(profile, visitors);
  } else {
    LoadOptions load;
    load.warn = [](std::string_view) {};  // the first load warned already
    load.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
      for (const format::Event& e : events) {
        progress.add();
        if (e.op >= kOpSlots) continue;
        std::optional<uint64_t> size;
        if (e.bucket < kSizeBuckets) size = e.size;
        writer.call(header.thread_serial, e.op, e.flags & format::kEvFailed, e.start_tick, e.duration_ticks, size,
                    std::nullopt, std::nullopt, profile.stacks.find(header.thread_serial, e.stack_id));
      }
    };
    load_profile(path, load);
  }
  progress.finish();
  writer.finish(trace);
  return writer.written();
}

}  // namespace allocscope
