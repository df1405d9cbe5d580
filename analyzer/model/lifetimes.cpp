#include "model/lifetimes.h"

#include <algorithm>
#include <cmath>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"

namespace allocscope {

namespace {

bool obtains_block(unsigned op) {
  switch (static_cast<Op>(op)) {
    case Op::Malloc:
    case Op::Calloc:
    case Op::Realloc:
    case Op::Reallocarray:
    case Op::PosixMemalign:
    case Op::AlignedAlloc:
    case Op::Memalign:
    case Op::Valloc:
    case Op::Pvalloc:
    case Op::New:
    case Op::NewArray: return true;
    case Op::Free:
    case Op::MallocUsableSize:
    case Op::Delete:
    case Op::DeleteArray: return false;
  }
  return false;
}

bool is_realloc(unsigned op) { return trace::has_old_addr(op); }

}  // namespace

LifetimeBand lifetime_band(uint64_t ns) {
  if (ns < 1'000) return LifetimeBand::Under1us;
  if (ns < 10'000) return LifetimeBand::Under10us;
  if (ns < 100'000) return LifetimeBand::Under100us;
  if (ns < 1'000'000) return LifetimeBand::Under1ms;
  if (ns < 1'000'000'000) return LifetimeBand::Under1s;
  return LifetimeBand::AtLeast1s;
}

const char* lifetime_band_name(LifetimeBand band) {
  constexpr const char* names[kLifetimeBands] = {"<1us", "<10us", "<100us", "<1ms", "<1s", ">=1s", "leaked"};
  return names[static_cast<unsigned>(band)];
}

LifetimeTracker::LifetimeTracker(const ClassTable& table, const TickClock& clock, const StackTable& stacks,
                                 uint64_t t0, uint64_t t1, unsigned slots)
    : table_(table), class_lookup_(table), clock_(clock), stacks_(stacks), t0_(t0), t1_(std::max(t0, t1)) {
  r_.classes.resize(table.classes().size());
  r_.timeline.resize(slots);
}

uint64_t& LifetimeTracker::allocs_of(uint32_t thread) {
  if (thread >= allocs_.size()) {
    allocs_.resize(thread + 1, 0);
    resizing_.resize(thread + 1);
  }
  return allocs_[thread];
}

void LifetimeTracker::set_live(uint64_t live, uint64_t tick) {
  r_.live_bytes = live;
  if (live > r_.peak_live_bytes) {
    r_.peak_live_bytes = live;
    r_.peak_tick = tick;
  }
  if (r_.timeline.empty()) return;
  const uint64_t span = t1_ - t0_ + 1;
  const uint64_t at = tick < t0_ ? 0 : std::min(tick - t0_, span - 1);
  const size_t slot = static_cast<size_t>(static_cast<unsigned __int128>(at) * r_.timeline.size() / span);
  LiveSample& s = r_.timeline[slot];
  s.max_live = std::max(s.max_live, live);
  s.end_live = live;
  s.touched = true;
}

namespace {

// A record with a duration was timed (trace_codec.h: 0 means not timed).
bool timed(const TraceCall& call) { return call.record.duration != 0; }

}  // namespace

TimedCalls& LifetimeTracker::timed_cell(unsigned op, uint32_t cls) {
  const size_t width = r_.classes.size() + 1;
  if (timed_by_class_.empty()) timed_by_class_.resize(kOpSlots * width);
  const size_t c = cls < r_.classes.size() ? cls : r_.classes.size();
  return timed_by_class_[op * width + c];
}

void LifetimeTracker::add_cost(const TraceCall& call, uint32_t cls, ByteCount bytes) {
  const StackCostKey key{stacks_.find(call.thread, call.record.stack_id), call.record.op, cls};
  StackCost*& slot = cost_index_[uint64_t{key.stack} << 32 | uint64_t{key.op} << 24 | (key.cls & 0xffffffu)];
  if (!slot) slot = &r_.stack_costs[key];
  StackCost& c = *slot;
  const bool t = timed(call);
  ++c.calls;
  c.timed += t;
  c.ticks += call.duration();
  c.bytes += bytes;
  if (call.record.op < kOpSlots) timed_cell(call.record.op, cls).add(t, call.duration());
  if (call.record.op < kOpSlots) timed_by_op_[call.record.op].add(t, call.duration());
}

void LifetimeTracker::end_chain(const Block& b) {
  if (b.chain_len == 0) return;
  ReallocChains& c = r_.chains;
  ++c.chains;
  ++c.by_length[b.chain_len];
  c.max_length = std::max(c.max_length, b.chain_len);
  if (b.chain_first > 0 && b.size > 0) {
    c.log_growth_sum += std::log(static_cast<double>(b.size) / static_cast<double>(b.chain_first));
    ++c.growth_chains;
  }
}

void LifetimeTracker::add_shape(const Block& b, LifetimeBand band, bool cross, const TraceCall* end) {
  for (int by_bucket = 0; by_bucket < 2; ++by_bucket) {
    const ShapeKey key{by_bucket ? b.bucket : b.cls, band, cross};
    ShapeCounts*& slot = shape_index_[by_bucket][uint64_t{key.cls} << 16 | static_cast<uint64_t>(band) << 8 | cross];
    if (!slot) slot = &(by_bucket ? r_.bucket_shapes : r_.shapes)[key];
    ShapeCounts& shape = *slot;
    ++shape.blocks;
    shape.bytes += b.size;
    shape.min_size = std::min(shape.min_size, b.size);
    shape.max_size = std::max(shape.max_size, b.size);
    ++shape.calls;
    shape.timed_calls += b.create_timed;
    shape.ticks += b.create_ticks;
    if (b.op < kOpSlots) shape.by_op[b.op].add(b.create_timed, b.create_ticks);
    if (end) {
      const bool t = timed(*end);
      ++shape.calls;
      shape.timed_calls += t;
      shape.ticks += end->duration();
      if (end->record.op < kOpSlots) shape.by_op[end->record.op].add(t, end->duration());
    }
  }
}

// Times of untimed calls (a trace recorded with --sample N > 1), as lifetimes.h says.
void LifetimeTracker::estimate_untimed() {
  if (r_.timed_calls == r_.calls) return;
  auto op_mean = [&](unsigned op) {
    const TimedCalls& t = timed_by_op_[op];
    return t.timed ? static_cast<double>(t.ticks) / static_cast<double>(t.timed) : 0.0;
  };
  auto class_mean = [&](unsigned op, uint32_t cls) {
    const TimedCalls& t = timed_cell(op, cls);
    return t.timed ? static_cast<double>(t.ticks) / static_cast<double>(t.timed) : op_mean(op);
  };
  auto estimate = [&](const TimedCalls& t, unsigned op, uint32_t cls) {
    if (t.timed == t.calls) return static_cast<double>(t.ticks);
    if (t.timed > 0)
      return static_cast<double>(t.ticks) * static_cast<double>(t.calls) / static_cast<double>(t.timed);
    return class_mean(op, cls) * static_cast<double>(t.calls);
  };
  for (auto* shapes : {&r_.shapes, &r_.bucket_shapes}) {
    for (auto& [key, shape] : *shapes) {
      if (shape.timed_calls == shape.calls) continue;
      double ticks = 0;
      for (unsigned op = 0; op < kOpSlots; ++op) {
        const TimedCalls& t = shape.by_op[op];
        // A bucket shape's cell has no class of the table: its operation's mean stands in.
        if (t.calls) ticks += shapes == &r_.shapes ? estimate(t, op, key.cls)
                                                    : (t.timed ? estimate(t, op, 0) : op_mean(op) * static_cast<double>(t.calls));
      }
      shape.ticks = static_cast<uint64_t>(std::llround(ticks));
    }
  }
  for (auto& [key, cost] : r_.stack_costs) {
    if (cost.timed == cost.calls) continue;
    const TimedCalls t{cost.calls, cost.timed, cost.ticks};
    cost.ticks = static_cast<uint64_t>(std::llround(estimate(t, key.op, key.cls)));
  }
}

void LifetimeTracker::release(const Block& b, const TraceCall& call, bool by_free) {
  const uint64_t lifetime = call.enter_tick > b.obtained ? call.enter_tick - b.obtained : 0;
  const LifetimeBand band = lifetime_band(clock_.to_ns(lifetime));
  const bool cross = call.thread != b.owner;
  ClassLifetimes& cl = r_.classes[b.cls];
  ++cl.freed;
  ++(cross ? cl.cross_thread : cl.same_thread);
  ++cl.bands[static_cast<unsigned>(band)];
  cl.lifetime_ticks.add(lifetime);
  cl.allocs_between.add(allocs_of(b.owner) - b.allocs_at);
  add_shape(b, band, cross, by_free ? &call : nullptr);
  if (by_free) {
    ++r_.frees;
    ++(cross ? r_.cross_thread_frees : r_.same_thread_frees);
    end_chain(b);
  } else {
    ++r_.resized;
  }
}

void LifetimeTracker::obtain(const TraceCall& call, uint64_t addr, uint64_t size, const Block* from) {
  uint64_t& mine = allocs_of(call.thread);
  ++mine;
  Block b;
  b.size = size;
  b.obtained = call.exit_tick;
  b.allocs_at = mine;
  b.create_ticks = call.duration();
  b.create_timed = timed(call);
  b.owner = call.thread;
  b.cls = class_of(size);
  b.bucket = static_cast<uint8_t>(bucket_of(size));
  b.stack = stacks_.find(call.thread, call.record.stack_id);
  b.op = call.record.op;
  b.chain_first = size;
  if (from) {
    b.chain_first = from->chain_first;
    b.chain_len = from->chain_len + 1;
    ReallocChains& c = r_.chains;
    ++c.steps;
    ++(addr == call.record.old_addr ? c.in_place : c.moved);
    ++(size > from->size ? c.grew : size < from->size ? c.shrank : c.same);
    if (size > 0 && from->size > 0) {
      c.log_step_sum += std::log(static_cast<double>(size) / static_cast<double>(from->size));
      ++c.growth_steps;
    }
  }
  uint64_t live = r_.live_bytes;
  auto [it, inserted] = live_.try_emplace(addr, b);
  if (!inserted) {
    if (!timed(call) || !it->second.create_timed) {
      // An untimed call's record holds its start, not its end: the call that frees this address
      // may have begun after it and still handed the address over before it returned; and a
      // block an untimed call obtained may sit here earlier than it really did.  The block waits
      // for a release of the address.
      pending_[addr].push_back(b);
    } else {
      ++r_.reused_live;
      live -= it->second.size;
      it->second = b;
    }
  }
  ++r_.blocks;
  ClassLifetimes& cl = r_.classes[b.cls];
  ++cl.blocks;
  cl.bytes += size;
  set_live(live + size, call.exit_tick);
}

bool LifetimeTracker::take_block(uint64_t addr, uint32_t thread, Block& out) {
  const auto it = live_.find(addr);
  if (it == live_.end()) return false;
  if (!pending_.empty()) {
    const auto p = pending_.find(addr);
    if (p != pending_.end()) {
      std::vector<Block>& waiting = p->second;
      // Several blocks at one address: the order of untimed calls is only that of their starts.
      // A thread frees its own block rather than another's, when it has one there.
      auto mine = waiting.end();
      if (it->second.owner != thread)
        mine = std::find_if(waiting.begin(), waiting.end(), [&](const Block& b) { return b.owner == thread; });
      if (mine != waiting.end()) {
        out = *mine;
        waiting.erase(mine);
      } else {
        out = it->second;
        it->second = waiting.front();
        waiting.erase(waiting.begin());
      }
      if (waiting.empty()) pending_.erase(p);
      return true;
    }
  }
  out = it->second;
  live_.erase(it);
  return true;
}

void LifetimeTracker::enter(const TraceCall& call) {
  const trace::Record& rec = call.record;
  ++r_.calls;
  r_.timed_calls += timed(call);
  allocs_of(call.thread);  // sizes the per-thread tables
  resizing_[call.thread].reset();
  if (releases(rec.op)) {
    if (rec.addr == 0) {
      ++r_.null_frees;
      add_cost(call, kNoClass, 0);
      return;
    }
    Block b;
    if (!take_block(rec.addr, call.thread, b)) {
      ++r_.unmatched_frees;
      add_cost(call, kNoClass, 0);
      return;
    }
    set_live(r_.live_bytes - b.size, call.enter_tick);
    release(b, call, true);
    add_cost(call, b.cls, 0);
    return;
  }
  if (rec.failed) {
    ++r_.failed;
    add_cost(call, class_of(rec.size), 0);
    return;
  }
  if (rec.op == static_cast<uint8_t>(Op::MallocUsableSize)) {
    add_cost(call, class_of(rec.size), 0);
    return;
  }
  if (is_realloc(rec.op) && rec.old_addr != 0) {
    Block b;
    if (!take_block(rec.old_addr, call.thread, b)) {
      ++r_.unmatched_reallocs;
      if (rec.addr == 0) add_cost(call, kNoClass, 0);  // realloc(p, 0) of an unknown block
      return;
    }
    set_live(r_.live_bytes - b.size, call.enter_tick);
    if (rec.addr == 0) {  // realloc(p, 0) freed p
      release(b, call, true);
      add_cost(call, b.cls, 0);
      return;
    }
    release(b, call, false);
    resizing_[call.thread] = b;
    return;
  }
  // A call that returns a block is costed at its exit; one that returned none (a NULL that was
  // not called a failure) is costed here.
  if (rec.addr == 0) add_cost(call, class_of(rec.size), 0);
}

void LifetimeTracker::exit(const TraceCall& call) {
  const trace::Record& rec = call.record;
  if (rec.failed || rec.addr == 0 || !obtains_block(rec.op)) return;
  std::optional<Block>& from = resizing_[call.thread];
  obtain(call, rec.addr, rec.size, from ? &*from : nullptr);
  from.reset();
  add_cost(call, class_of(rec.size), rec.size);
}

void LifetimeTracker::finish() {
  auto leak = [&](const Block& b) {
    ClassLifetimes& cl = r_.classes[b.cls];
    ++cl.leaked;
    cl.leaked_bytes += b.size;
    ++cl.bands[static_cast<unsigned>(LifetimeBand::Leaked)];
    add_shape(b, LifetimeBand::Leaked, false, nullptr);
    ++r_.leaked_blocks;
    r_.leaked_bytes += b.size;
    end_chain(b);
    StackCost& c = r_.stack_costs[StackCostKey{b.stack, b.op, b.cls}];
    ++c.leaked;
    c.leaked_bytes += b.size;
  };
  for (const auto& [addr, b] : live_) leak(b);
  for (const auto& [addr, blocks] : pending_) {  // their addresses were never released again
    for (const Block& b : blocks) leak(b);
  }
  estimate_untimed();
  // Slots without a change carry the level of the last change before them.
  uint64_t level = 0;
  for (LiveSample& s : r_.timeline) {
    if (!s.touched) s.max_live = s.end_live = level;
    level = s.end_live;
  }
}

}  // namespace allocscope
