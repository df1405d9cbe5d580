#include "profile/trace_decode.h"

#include "allocscope/buckets.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <tuple>
#include <variant>
#include <vector>

namespace allocscope {

TraceCursor::TraceCursor(const TraceEventsRecord& chunk)
    : p_(chunk.bytes.data()),
      end_(chunk.bytes.data() + chunk.bytes.size()),
      cursor_{chunk.header.base_tick, chunk.header.base_addr},
      count_(chunk.header.count) {}

bool TraceCursor::next(trace::Record& record) {
  if (read_ >= count_ || !trace::decode(p_, end_, cursor_, record)) return false;
  ++read_;
  return true;
}

std::vector<format::Event> trace_chunk_as_events(const TraceEventsRecord& chunk) {
  std::vector<format::Event> out;
  out.reserve(chunk.header.count);
  TraceCursor cursor(chunk);
  for (trace::Record r; cursor.next(r);) {
    if (r.duration == 0) continue;  // recorded outside the timing windows: not a timed call
    format::Event e{};
    e.start_tick = r.start_tick;
    e.duration_ticks = r.duration > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(r.duration);
    if (r.duration > 0xffffffffu) e.flags |= format::kEvClamped;
    if (r.failed) e.flags |= format::kEvFailed;
    e.op = r.op;
    if (trace::has_size(r.op)) {
      e.size = r.size > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(r.size);
      e.bucket = static_cast<uint8_t>(bucket_of(r.size));
    } else {
      e.bucket = static_cast<uint8_t>(kBucketUnknown);
    }
    e.stack_id = r.stack_id;
    out.push_back(e);
  }
  return out;
}

format::EventsHeader trace_chunk_events_header(const TraceEventsRecord& chunk) {
  return format::EventsHeader{chunk.header.thread_serial, chunk.header.count, chunk.header.first_index};
}

void read_timed_calls(LoadOptions& load, EventSink sink) {
  load.on_events = sink;
  load.on_trace = [sink = std::move(sink)](const TraceEventsRecord& chunk) {
    const std::vector<format::Event> events = trace_chunk_as_events(chunk);
    sink(trace_chunk_events_header(chunk), events);
  };
}

namespace {

// One thread's calls, chunk after chunk.
struct ThreadStream {
  uint32_t serial = 0;
  std::vector<TraceChunkRef> chunks;  // by first_index
  size_t next_chunk = 0;
  TraceEventsRecord current;
  std::optional<TraceCursor> cursor;
  uint64_t next_index = 0;            // index of the next record this stream hands out
  uint64_t chunk_index = 0;           // index of the next record of the current chunk
  TraceCall call;
  bool entered = false;               // call's enter was visited, its exit is pending
  uint64_t last_step = 0;
};

class Merger {
 public:
  Merger(const Profile& profile, std::span<TraceVisitor* const> visitors)
      : profile_(profile), visitors_(visitors), reader_(profile.file, [](std::string_view) {}) {}

  TraceMergeStats run() {
    for (const auto& [serial, refs] : profile_.trace_chunks) {
      ThreadStream s;
      s.serial = serial;
      s.chunks = refs;
      std::stable_sort(s.chunks.begin(), s.chunks.end(),
                       [](const TraceChunkRef& a, const TraceChunkRef& b) { return a.first_index < b.first_index; });
      if (!s.chunks.empty()) s.next_index = s.chunks.front().first_index;
      streams_.push_back(std::move(s));
    }
    stats_.threads = static_cast<uint32_t>(streams_.size());
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (advance(streams_[i])) push(i);
    }
    bool first = true;
    while (!heap_.empty()) {
      const auto [tick, phase, serial, i] = heap_.top();
      heap_.pop();
      ThreadStream& s = streams_[i];
      if (phase == 0) {
        if (first) stats_.first_tick = tick;
        first = false;
        for (TraceVisitor* v : visitors_) v->enter(s.call);
        s.entered = true;
        push(i);
      } else {
        stats_.last_tick = std::max(stats_.last_tick, tick);
        for (TraceVisitor* v : visitors_) v->exit(s.call);
        ++stats_.calls;
        s.entered = false;
        if (advance(s)) push(i);
      }
    }
    for (TraceVisitor* v : visitors_) v->finish();
    return stats_;
  }

 private:
  using Step = std::tuple<uint64_t, int, uint32_t, size_t>;  // tick, 0 enter / 1 exit, serial, stream

  void push(size_t i) {
    const ThreadStream& s = streams_[i];
    heap_.emplace(s.entered ? s.call.exit_tick : s.call.enter_tick, s.entered ? 1 : 0, s.serial, i);
  }

  bool load_next_chunk(ThreadStream& s) {
    while (s.next_chunk < s.chunks.size()) {
      const TraceChunkRef& ref = s.chunks[s.next_chunk++];
      reader_.seek(ref.offset);
      Chunk chunk;
      if (!reader_.next(chunk) || !std::holds_alternative<TraceEventsRecord>(chunk.body)) {
        throw ProfileError(profile_.file, ref.offset, "a TraceEvents chunk seen before cannot be read again");
      }
      s.current = std::move(std::get<TraceEventsRecord>(chunk.body));
      s.cursor.emplace(s.current);
      s.chunk_index = s.current.header.first_index;
      if (s.chunk_index > s.next_index) {
        stats_.missing += s.chunk_index - s.next_index;
        s.next_index = s.chunk_index;
      }
      return true;
    }
    return false;
  }

  // Moves `s` to its next call; false when the thread has no more.
  bool advance(ThreadStream& s) {
    trace::Record r;
    for (;;) {
      if (!s.cursor || !s.cursor->next(r)) {
        if (!load_next_chunk(s)) {
          s.cursor.reset();
          s.current = {};
          return false;
        }
        continue;
      }
      const uint64_t index = s.chunk_index++;
      if (index < s.next_index) {  // already handed out by an earlier chunk
        ++stats_.repeated;
        continue;
      }
      s.next_index = index + 1;
      s.call.thread = s.serial;
      s.call.index = index;
      s.call.record = r;
      uint64_t enter = r.start_tick, exit = r.start_tick + r.duration;
      if (enter < s.last_step) {
        ++stats_.reordered;
        exit += s.last_step - enter;
        enter = s.last_step;
      }
      s.call.enter_tick = enter;
      s.call.exit_tick = exit;
      s.last_step = exit;
      return true;
    }
  }

  const Profile& profile_;
  std::span<TraceVisitor* const> visitors_;
  ProfileReader reader_;
  std::vector<ThreadStream> streams_;
  std::priority_queue<Step, std::vector<Step>, std::greater<Step>> heap_;
  TraceMergeStats stats_;
};

}  // namespace

TraceMergeStats merge_trace(const Profile& profile, std::span<TraceVisitor* const> visitors) {
  if (profile.trace_chunks.empty()) {
    for (TraceVisitor* v : visitors) v->finish();
    return {};
  }
  return Merger(profile, visitors).run();
}

}  // namespace allocscope
