// class_tables.h — the size classes of common malloc implementations, and per-class views of a
// profile's per-bucket statistics.
//
// A ClassTable maps a request size to the size class the allocator serves it from.  Its classes
// are contiguous ranges of request sizes covering all of uint64_t, in increasing order:
//
//   lo, hi     the smallest and largest request that land in the class (in-band headers included
//              in the computation: glibc's chunk size field, musl's 4-byte slot header, scudo's
//              16-byte chunk header)
//   slot_size  the block that serves the class's largest request, header included; 0 when blocks
//              are not fixed slots but sized per request (page runs, mmap, huge)
//   label      a short name, e.g. "chunk 48 (tcache, fastbin)", "class 3 (64 B)", "mmap"
//
// The tables are data (class_tables_libc.cpp and class_tables_replacements.cpp, each with a legend
// naming the version it reflects; class_tables.cpp looks them up); they describe each allocator's
// default configuration on x86_64.  Tables exist for:
//
//   glibc      glibc malloc 2.36     libc.so.6 (or any libc.so path of a glibc process)
//   musl       musl mallocng 1.2.3+  ld-musl-*.so.1, or a libc.so path of a musl process
//   jemalloc   jemalloc 5.3          libjemalloc*
//   tcmalloc   gperftools 2.10       libtcmalloc*, not the _debug variants
//   mimalloc   mimalloc 2.0.9        libmimalloc*
//   scudo      LLVM 14 standalone    *scudo*, not the older sanitizer-based libclang_rt.scudo-*
//
// For any other allocator class_table_for() returns nullptr; bucket_class_table() is then the
// neutral choice: one class per log-linear size bucket (buckets.h).
//
// Splitting bucket statistics into classes (split_cells): a profile counts calls per (operation,
// size bucket); a bucket may straddle several classes.  Each cell is split across the classes its
// range [bucket_lo, bucket_hi] overlaps:
//   * with timed-call events of that (op, bucket) whose exact sizes are known (EventSizes), in
//     proportion to them: calls, failed, timed and latency by the number of events per class
//     (each latency bin by the events in that bin when it has any), bytes by the events' bytes,
//     timed_ticks by the events' durations;
//   * otherwise as if the bucket's sizes were uniform: calls, failed, timed and latency by the
//     number of sizes the bucket shares with each class, bytes by the sum of those sizes,
//     timed_ticks like calls.
// Every split is done in integers by largest remainder, so per-class cells add up exactly to the
// cells split.  max_ticks goes to every class that received timed calls (it is an upper bound
// there), except that with events each class gets its longest event and the class holding the
// longest one gets the cell's max_ticks.  Cells of kBucketUnknown (free without a size) have no
// range: they land in class kNoClass, unsplit.
// Free's size is the usable size of the block (ops.h); for these allocators that size maps back to
// the class that served the block, so frees can be split like allocations.
#pragma once
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "allocscope/buckets.h"
#include "allocscope/format.h"
#include "profile/stats.h"

namespace allocscope {

struct Profile;

struct SizeClass {
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint64_t slot_size = 0;  // 0: blocks sized per request
  std::string_view label;
};

class ClassTable {
 public:
  constexpr ClassTable(std::string_view name, std::string_view source, uint32_t header,
                       std::span<const SizeClass> classes)
      : name_(name), source_(source), header_(header), classes_(classes) {}

  std::string_view name() const { return name_; }          // "glibc", "musl", …, "buckets"
  std::string_view source() const { return source_; }      // the version the data reflects
  uint32_t header() const { return header_; }              // in-band bytes per block (in slot_size)
  std::span<const SizeClass> classes() const { return classes_; }

  // Index in classes() of the class that serves `request`.  Every value has one.
  size_t class_of(uint64_t request) const;

 private:
  std::string_view name_;
  std::string_view source_;
  uint32_t header_;
  std::span<const SizeClass> classes_;
};

// ClassTable::class_of for hot loops: each size bucket (buckets.h) knows the classes it spans,
// most buckets lie in one class, and the others search only their own few.
class ClassLookup {
 public:
  explicit ClassLookup(const ClassTable& table);
  size_t operator()(uint64_t request) const;
  const ClassTable& table() const { return table_; }

 private:
  const ClassTable& table_;
  std::array<uint32_t, kSizeBuckets> first_{}, last_{};
};

// The table of the allocator recorded in a profile (ProcessRecord::allocator, ProcessInfo::libc),
// or nullptr when it is not one of the above.
const ClassTable* class_table_for(std::string_view allocator_path, format::Libc libc);

// One class per size bucket of buckets.h (kSizeBuckets classes, labels like "256-319").
const ClassTable& bucket_class_table();

// Every allocator table (not the bucket table), in the order listed above.
std::span<const ClassTable* const> allocator_class_tables();

// ---- Per-class statistics ----

// What the timed-call events of one (op, bucket) say about one exact request size.
struct SizeTally {
  uint64_t events = 0;
  uint64_t ticks = 0;                    // sum of durations
  uint64_t max_ticks = 0;
  // latency bin -> events, in order of first appearance: a size's calls fall in few bins, and a
  // short vector searched from the last bin hit costs far less per event than a tree.
  std::vector<std::pair<uint16_t, uint64_t>> latency;
  size_t last_bin = 0;  // index in `latency` of the last bin added to
};

// Exact sizes of timed-call events, per (op, bucket).  Feed it from LoadOptions::on_events.
// Events whose size does not lie in their bucket (sizes saturate at 2^32-1) are not kept.
class EventSizes {
 public:
  void add(std::span<const format::Event> events);
  void add(const format::Event& event);
  // Size -> tally for one cell; nullptr when no event of that cell was kept.
  const std::map<uint64_t, SizeTally>* find(CellKey key) const;
  bool empty() const { return by_cell_.empty(); }

 private:
  std::map<CellKey, std::map<uint64_t, SizeTally>> by_cell_;
  // (op, bucket, size) -> its tally in by_cell_ (map nodes do not move): one hash lookup per
  // event instead of two tree walks; `report` on a 2 x 1 M harness profile (--sample 1) took
  // about 10 % less CPU with it.
  // Sizes below kSmallSizes (most calls) skip the hash: an array per operation, made on first use.
  static constexpr size_t kSmallSizes = 1 << 16;
  std::array<std::vector<SizeTally*>, kOpSlots> small_index_;
  std::unordered_map<uint64_t, SizeTally*> index_;
};

constexpr uint32_t kNoClass = ~uint32_t{0};  // calls without a size (kBucketUnknown)

struct ClassCellKey {
  uint32_t cls = 0;  // index in ClassTable::classes(), or kNoClass
  uint8_t op = 0;
  auto operator<=>(const ClassCellKey&) const = default;
};

using ClassCellMap = std::map<ClassCellKey, Cell>;

// Splits (op, bucket) cells into (class, op) cells as described at the top.  `sizes` may be null.
ClassCellMap split_cells(const CellMap& cells, const ClassTable& table,
                         const EventSizes* sizes = nullptr);

// split_cells over the sum of all threads' cells.
ClassCellMap split_profile(const Profile& profile, const ClassTable& table,
                           const EventSizes* sizes = nullptr);

}  // namespace allocscope
