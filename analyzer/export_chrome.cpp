// Chrome trace-event JSON, streamed: one complete event per call, a counter of threads inside.
#include <fmt/format.h>

#include <cinttypes>
#include <map>

#include "allocscope/ops.h"
#include "callsites.h"
#include "export.h"
#include "json_writer.h"

namespace allocscope {

namespace {

class ChromeWriter {
 public:
  ChromeWriter(std::FILE* out, const Profile& profile, std::vector<std::string> site_names)
      : out_(out), profile_(profile), sites_(std::move(site_names)) {
    origin_ = profile.process ? profile.process->info.start_tick : 0;
    pid_ = profile.process ? profile.process->info.pid : 1;
    std::fputs("{\"traceEvents\":[\n", out_);
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

  void call(uint32_t thread, unsigned op, bool failed, uint64_t start, uint64_t duration, std::optional<uint64_t> size,
            std::optional<uint64_t> addr, std::optional<uint64_t> old_addr, StackIndex stack) {
    std::string args = size ? fmt::format("\"size\":{}", *size) : std::string();
    auto add = [&](const std::string& field) {
      if (!args.empty()) args += ',';
      args += field;
    };
    if (addr) add(fmt::format("\"addr\":\"0x{:x}\"", *addr));
    if (old_addr) add(fmt::format("\"old_addr\":\"0x{:x}\"", *old_addr));
    if (failed) add("\"failed\":true");
    if (stack != kNoStack && stack < sites_.size()) add("\"site\":" + json_quote(sites_[stack]));
    event(fmt::format("{{\"name\":\"{}\",\"cat\":\"allocator\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{{}}}}}",
                      op_label(op), pid_, thread, ts(start), us(duration), args));
    threads_[thread] = true;
  }

  void counter(uint64_t tick, uint32_t inside) {
    event(fmt::format("{{\"name\":\"threads in allocator\",\"ph\":\"C\",\"pid\":{},\"tid\":0,\"ts\":{},\"args\":{{\"threads\":{}}}}}",
                      pid_, ts(tick), inside));
  }

  void finish(bool trace) {
    const std::string program = profile_.process ? profile_.process->exe : profile_.file;
    event(fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":{}}}}}", pid_,
                      json_quote(program)));
    for (const auto& [serial, used] : threads_) {
      const ThreadProfile* t = profile_.find_thread(serial);
      const std::string name = t ? fmt::format("thread {} (tid {})", serial, t->tid) : fmt::format("thread {}", serial);
      event(fmt::format("{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid_,
                        serial, json_quote(name)));
      event(fmt::format("{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
                        pid_, serial, serial));
    }
    fmt::print(out_, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":\"allocscope\",\"file\":{},\"mode\":\"{}\"}}}}\n",
               json_quote(profile_.file), trace ? "trace" : "sampled");
  }

 private:
  std::FILE* out_;
  const Profile& profile_;
  std::vector<std::string> sites_;
  uint64_t origin_ = 0;
  uint32_t pid_ = 1;
  bool first_ = true;
  std::map<uint32_t, bool> threads_;
};

class ChromeVisitor : public TraceVisitor {
 public:
  ChromeVisitor(ChromeWriter& writer, const StackTable& stacks) : writer_(writer), stacks_(stacks) {}

  void enter(const TraceCall& call) override {
    step(call.enter_tick);
    ++inside_;
  }
  void exit(const TraceCall& call) override {
    step(call.exit_tick);
    if (inside_) --inside_;
    const trace::Record& r = call.record;
    writer_.call(call.thread, r.op, r.failed, call.enter_tick, call.duration(),
                 trace::has_size(r.op) ? std::optional<uint64_t>(r.size) : std::nullopt, r.addr,
                 trace::has_old_addr(r.op) ? std::optional<uint64_t>(r.old_addr) : std::nullopt,
                 stacks_.find(call.thread, r.stack_id));
  }
  void finish() override { flush(); }

 private:
  // The counter changes once per tick, to the level after every step at that tick.
  void step(uint64_t tick) {
    if (started_ && tick != tick_) flush();
    started_ = true;
    tick_ = tick;
  }
  void flush() {
    if (started_ && inside_ != emitted_) {
      writer_.counter(tick_, inside_);
      emitted_ = inside_;
    }
  }

  ChromeWriter& writer_;
  const StackTable& stacks_;
  bool started_ = false;
  uint64_t tick_ = 0;
  uint32_t inside_ = 0, emitted_ = 0;
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

void export_chrome(const std::filesystem::path& path, std::FILE* out, const ExportOptions& options) {
  const Profile profile = load_profile(path);
  ChromeWriter writer(out, profile, site_names(profile, options));
  const bool trace = !profile.trace_chunks.empty();
  if (trace) {
    ChromeVisitor visitor(writer, profile.stacks);
    TraceVisitor* visitors[] = {&visitor};
    merge_trace(profile, visitors);
  } else {
    LoadOptions load;
    load.warn = [](std::string_view) {};  // the first load warned already
    load.on_events = [&](const format::EventsHeader& header, std::span<const format::Event> events) {
      for (const format::Event& e : events) {
        if (e.op >= kOpSlots) continue;
        std::optional<uint64_t> size;
        if (e.bucket < kSizeBuckets) size = e.size;
        writer.call(header.thread_serial, e.op, e.flags & format::kEvFailed, e.start_tick, e.duration_ticks, size,
                    std::nullopt, std::nullopt, profile.stacks.find(header.thread_serial, e.stack_id));
      }
    };
    load_profile(path, load);
  }
  writer.finish(trace);
}

}  // namespace allocscope
