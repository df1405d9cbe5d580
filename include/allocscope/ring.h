// allocscope/ring.h — a single-producer, single-consumer lock-free ring of fixed-size records.
//
// The producer is the thread that owns the ring (the shim's per-thread slot).  The consumer is
// whoever flushes it: usually the same thread, at exit or reclaim another one, never two at a time
// (the caller serialises consumers with a try-flag, never by waiting).  Storage is provided by the
// caller (capacity a power of two), so the ring itself never allocates.
//
// Invariants: 0 <= head - tail <= capacity; records [tail, head) are readable; the producer only
// writes head, the consumer only writes tail.  Indices are 64-bit and never wrap in practice.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace allocscope {

template <class T>
class Ring {
 public:
  Ring() = default;
  void init(T* storage, uint64_t capacity_pow2) {
    buf_ = storage;
    mask_ = capacity_pow2 - 1;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
  }
  uint64_t capacity() const { return mask_ + 1; }

  // Producer: false when full (the caller counts the drop).
  bool push(const T& v) {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_.load(std::memory_order_acquire) > mask_) return false;
    buf_[h & mask_] = v;
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  uint64_t size() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
  }
  bool full() const { return size() > mask_; }

  // Consumer: hands out up to two contiguous spans of readable records (the ring may wrap),
  // then release() frees what was consumed.
  template <class F>
  uint64_t consume(uint64_t max, F&& sink) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    uint64_t n = head_.load(std::memory_order_acquire) - t;
    if (n > max) n = max;
    uint64_t done = 0;
    while (done < n) {
      const uint64_t pos = (t + done) & mask_;
      uint64_t run = mask_ + 1 - pos;
      if (run > n - done) run = n - done;
      sink(buf_ + pos, run, t + done);
      done += run;
    }
    tail_.store(t + n, std::memory_order_release);
    return n;
  }
  uint64_t consumed() const { return tail_.load(std::memory_order_acquire); }

 private:
  T* buf_ = nullptr;
  uint64_t mask_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace allocscope
