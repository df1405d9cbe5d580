// Size-class tables (analyzer/model/class_tables.h): invariants of every table, each table against an
// independent re-derivation from its allocator's algorithm, spot checks, and the bucket-to-class
// split.
#include "model/class_tables.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "allocscope/buckets.h"

namespace allocscope {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

const ClassTable& table_named(std::string_view name) {
  for (const ClassTable* t : allocator_class_tables()) {
    if (t->name() == name) return *t;
  }
  throw std::runtime_error("no table " + std::string(name));
}

uint64_t slot_of(const ClassTable& t, uint64_t request) { return t.classes()[t.class_of(request)].slot_size; }

std::vector<const ClassTable*> every_table() {
  std::vector<const ClassTable*> all(allocator_class_tables().begin(), allocator_class_tables().end());
  all.push_back(&bucket_class_table());
  return all;
}

// ---- Invariants ----

TEST(ClassTables, AreContiguousOverAllRequestSizes) {
  for (const ClassTable* t : every_table()) {
    SCOPED_TRACE(std::string(t->name()));
    const auto classes = t->classes();
    ASSERT_FALSE(classes.empty());
    EXPECT_EQ(classes.front().lo, 0u);
    EXPECT_EQ(classes.back().hi, kMax);
    for (size_t i = 0; i < classes.size(); ++i) {
      ASSERT_LE(classes[i].lo, classes[i].hi) << "class " << i;
      if (i + 1 < classes.size()) {
        ASSERT_EQ(classes[i].hi + 1, classes[i + 1].lo) << "after class " << i;
      }
      EXPECT_FALSE(classes[i].label.empty()) << "class " << i;
    }
  }
}

TEST(ClassTables, BoundsMapToTheirOwnClass) {
  for (const ClassTable* t : every_table()) {
    SCOPED_TRACE(std::string(t->name()));
    const auto classes = t->classes();
    for (size_t i = 0; i < classes.size(); ++i) {
      ASSERT_EQ(t->class_of(classes[i].lo), i) << "lo of class " << i;
      ASSERT_EQ(t->class_of(classes[i].hi), i) << "hi of class " << i;
      if (classes[i].hi - classes[i].lo >= 2) {
        ASSERT_EQ(t->class_of(classes[i].lo + (classes[i].hi - classes[i].lo) / 2), i);
      }
    }
  }
}

TEST(ClassTables, ClassOfIsMonotonic) {
  for (const ClassTable* t : every_table()) {
    SCOPED_TRACE(std::string(t->name()));
    size_t prev = 0;
    for (uint64_t n = 0; n <= (1u << 20); ++n) {
      const size_t c = t->class_of(n);
      ASSERT_GE(c, prev) << "request " << n;
      ASSERT_LE(c, prev + 1) << "request " << n;  // contiguous: never skips a class
      prev = c;
    }
    EXPECT_EQ(t->class_of(kMax), t->classes().size() - 1);
  }
}

TEST(ClassTables, LookupAgreesWithClassOf) {
  for (const ClassTable* t : every_table()) {
    SCOPED_TRACE(std::string(t->name()));
    const ClassLookup lookup(*t);
    for (uint64_t n = 0; n <= (1u << 20); ++n) ASSERT_EQ(lookup(n), t->class_of(n)) << "request " << n;
    for (const SizeClass& c : t->classes()) {  // every bound, and either side of it
      for (uint64_t v : {c.lo, c.hi, c.lo - 1, c.hi + 1}) ASSERT_EQ(lookup(v), t->class_of(v)) << "request " << v;
    }
    for (unsigned shift = 20; shift < 64; ++shift) {
      for (uint64_t v : {uint64_t{1} << shift, (uint64_t{1} << shift) - 1, (uint64_t{3} << (shift - 1)) + 1})
        ASSERT_EQ(lookup(v), t->class_of(v)) << "request " << v;
    }
    EXPECT_EQ(lookup(kMax), t->class_of(kMax));
  }
}

TEST(ClassTables, SlotsHoldTheirLargestRequestAndGrow) {
  for (const ClassTable* t : allocator_class_tables()) {
    SCOPED_TRACE(std::string(t->name()));
    uint64_t prev_slot = 0;
    bool open_ended = false;
    for (const SizeClass& c : t->classes()) {
      if (c.slot_size == 0) {
        open_ended = true;  // sized per request from here on
        continue;
      }
      EXPECT_FALSE(open_ended) << c.label << ": a fixed slot after per-request classes";
      EXPECT_GE(c.slot_size, c.hi + t->header()) << c.label;
      EXPECT_GT(c.slot_size, prev_slot) << c.label;
      // The next smaller request that does not fit is the previous class's: the slot is tight.
      if (c.lo > 0) {
        EXPECT_LT(prev_slot, c.lo + t->header()) << c.label;
      }
      prev_slot = c.slot_size;
    }
    EXPECT_EQ(t->classes().back().slot_size, 0u) << "the last class is open-ended";
  }
}

TEST(ClassTables, NamedAndVersioned) {
  std::vector<std::string> names;
  for (const ClassTable* t : allocator_class_tables()) {
    names.emplace_back(t->name());
    EXPECT_FALSE(t->source().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"glibc", "musl", "jemalloc", "tcmalloc", "mimalloc", "scudo"}));
}

// ---- Each table against its allocator's algorithm ----

// musl mallocng: size_to_class() of src/malloc/mallocng/meta.h, restated.
constexpr uint16_t kMuslUnits[48] = {1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   12,   15,
                                     18,   20,   25,   31,   36,   42,   50,   63,   72,   84,   102,  127,
                                     146,  170,  204,  255,  292,  340,  409,  511,  584,  682,  818,  1023,
                                     1169, 1364, 1637, 2047, 2340, 2730, 3276, 4095, 4680, 5460, 6552, 8191};
int musl_size_to_class(uint64_t n) {
  n = (n + 4 - 1) >> 4;
  if (n < 10) return static_cast<int>(n);
  n++;
  int i = (28 - __builtin_clz(static_cast<uint32_t>(n))) * 4 + 8;
  if (n > kMuslUnits[i + 1]) i += 2;
  if (n > kMuslUnits[i]) i++;
  return i;
}

TEST(ClassTables, MuslMatchesSizeToClass) {
  const ClassTable& t = table_named("musl");
  ASSERT_EQ(t.classes().size(), 49u);
  for (uint64_t n = 0; n < 131052; ++n) {
    const int c = musl_size_to_class(n);
    ASSERT_EQ(t.class_of(n), static_cast<size_t>(c)) << "request " << n;
    ASSERT_EQ(slot_of(t, n), 16u * kMuslUnits[c]) << "request " << n;
  }
  EXPECT_EQ(t.classes()[t.class_of(131052)].label, "mmap");
  // Spot checks: 20 + 4 = 24 bytes -> the 32-byte class; 12 is the most a 16-byte slot holds.
  EXPECT_EQ(slot_of(t, 20), 32u);
  EXPECT_EQ(slot_of(t, 12), 16u);
  EXPECT_EQ(slot_of(t, 13), 32u);
  EXPECT_EQ(slot_of(t, 0), 16u);
  EXPECT_EQ(slot_of(t, 131051), 131056u);
}

// glibc: request2size and the bin rules of malloc/malloc.c (2.36, 64-bit).
uint64_t glibc_chunk(uint64_t n) { return n + 8 + 15 < 32 ? 32 : (n + 8 + 15) & ~uint64_t{15}; }
unsigned glibc_largebin(uint64_t sz) {
  if ((sz >> 6) <= 48) return 48 + static_cast<unsigned>(sz >> 6);
  if ((sz >> 9) <= 20) return 91 + static_cast<unsigned>(sz >> 9);
  if ((sz >> 12) <= 10) return 110 + static_cast<unsigned>(sz >> 12);
  if ((sz >> 15) <= 4) return 119 + static_cast<unsigned>(sz >> 15);
  if ((sz >> 18) <= 2) return 124 + static_cast<unsigned>(sz >> 18);
  return 126;
}

TEST(ClassTables, GlibcMatchesChunkSizesAndBins) {
  const ClassTable& t = table_named("glibc");
  const auto classes = t.classes();
  for (uint64_t n = 0; n <= 1032; ++n) {  // tcache sizes: one class per chunk size
    const SizeClass& c = classes[t.class_of(n)];
    ASSERT_EQ(c.slot_size, glibc_chunk(n)) << "request " << n;
    ASSERT_EQ(c.hi, glibc_chunk(n) - 8) << "request " << n;  // = malloc_usable_size
  }
  // Past the tcache: two requests share a class exactly when their chunks share a largebin.
  for (uint64_t n = 1033; n + 16 < 131049; n += 16) {
    const bool same_bin = glibc_largebin(glibc_chunk(n)) == glibc_largebin(glibc_chunk(n + 16));
    ASSERT_EQ(t.class_of(n) == t.class_of(n + 16), same_bin) << "request " << n;
    ASSERT_GE(classes[t.class_of(n)].slot_size, glibc_chunk(n));
  }
  EXPECT_EQ(classes[t.class_of(131048)].label, "largebin 122 (chunks 98304-131071)");
  EXPECT_EQ(classes[t.class_of(131049)].label, "mmap");  // chunk 131072 = the default threshold
  // Spot checks.
  EXPECT_EQ(slot_of(t, 24), 32u);
  EXPECT_EQ(slot_of(t, 25), 48u);
  EXPECT_EQ(slot_of(t, 0), 32u);
  EXPECT_EQ(classes[t.class_of(120)].label, "chunk 128 (tcache, fastbin)");
  EXPECT_EQ(classes[t.class_of(121)].label, "chunk 144 (tcache, smallbin)");
  EXPECT_EQ(classes[t.class_of(1000)].label, "chunk 1008 (tcache, smallbin)");
  EXPECT_EQ(classes[t.class_of(1032)].label, "chunk 1040 (tcache, largebin 64)");
  EXPECT_EQ(classes[t.class_of(1033)].label, "largebin 64 (chunks 1056-1087)");
}

// jemalloc 5.3: 8, then 16..128 by 16, then four classes per doubling.
uint64_t jemalloc_class_size(uint64_t n) {
  if (n <= 8) return 8;
  if (n <= 128) return (n + 15) & ~uint64_t{15};
  const unsigned lg = 63 - static_cast<unsigned>(__builtin_clzll(n - 1));  // 2^lg < n <= 2^(lg+1)
  const uint64_t delta = uint64_t{1} << (lg - 2);
  return (n + delta - 1) & ~(delta - 1);
}

TEST(ClassTables, JemallocMatchesSizeClasses) {
  const ClassTable& t = table_named("jemalloc");
  for (uint64_t n = 0; n < (uint64_t{7} << 20); n += (n < 65536 ? 1 : 61)) {
    ASSERT_EQ(slot_of(t, n), jemalloc_class_size(n)) << "request " << n;
  }
  EXPECT_EQ(t.classes()[t.class_of(14336)].label, "small 14336");
  EXPECT_EQ(t.classes()[t.class_of(14337)].label, "large 16384 (tcache)");
  EXPECT_EQ(t.classes()[t.class_of(32769)].label, "large 40960");
  EXPECT_EQ(t.classes()[t.class_of(7 << 20)].slot_size, 7u << 20);
  EXPECT_EQ(t.classes()[t.class_of((7 << 20) + 1)].label, "huge (oversize arena)");
  EXPECT_EQ(slot_of(t, 0), 8u);
  EXPECT_EQ(slot_of(t, 129), 160u);
  EXPECT_EQ(slot_of(t, 257), 320u);
}

// gperftools 2.10: SizeMap::Init of src/common.cc with its defaults, restated.
std::vector<uint64_t> tcmalloc_class_sizes() {
  constexpr uint64_t kPageShift = 13, kPageSize = 1 << kPageShift, kMaxSize = 256 * 1024;
  constexpr uint64_t kAlignment = 8, kMinAlign = 16, kTransfer = 32;
  auto alignment_for = [&](uint64_t size) {
    uint64_t a = kAlignment;
    if (size > kMaxSize) a = kPageSize;
    else if (size >= 128) a = (uint64_t{1} << (63 - __builtin_clzll(size))) / 8;
    else if (size >= kMinAlign) a = kMinAlign;
    return std::min(a, kPageSize);
  };
  auto num_move = [&](uint64_t size) {
    uint64_t num = static_cast<uint64_t>(64.0 * 1024.0 / static_cast<double>(size));
    return std::min(std::max<uint64_t>(num, 2), kTransfer);
  };
  std::vector<uint64_t> sizes, pages;
  for (uint64_t size = kAlignment, alignment = kAlignment; size <= kMaxSize; size += alignment) {
    alignment = alignment_for(size);
    const uint64_t blocks_to_move = num_move(size) / 4;
    uint64_t psize = 0;
    do {
      psize += kPageSize;
      while ((psize % size) > (psize >> 3)) psize += kPageSize;
    } while ((psize / size) < blocks_to_move);
    const uint64_t my_pages = psize >> kPageShift;
    if (!sizes.empty() && my_pages == pages.back() &&
        (my_pages << kPageShift) / size == (pages.back() << kPageShift) / sizes.back()) {
      sizes.back() = size;
      continue;
    }
    sizes.push_back(size);
    pages.push_back(my_pages);
  }
  return sizes;
}

TEST(ClassTables, TcmallocMatchesSizeMapInit) {
  const ClassTable& t = table_named("tcmalloc");
  const std::vector<uint64_t> sizes = tcmalloc_class_sizes();
  ASSERT_EQ(sizes.size(), 85u);
  size_t next = 0;
  for (uint64_t n = 0; n <= 256 * 1024; ++n) {
    while (sizes[next] < n) ++next;
    ASSERT_EQ(slot_of(t, n), sizes[next]) << "request " << n;
    ASSERT_EQ(t.class_of(n), next) << "request " << n;
  }
  EXPECT_EQ(slot_of(t, 256 * 1024 + 1), 0u);
  EXPECT_EQ(slot_of(t, 24), 32u);   // kMinAlign 16
  EXPECT_EQ(slot_of(t, 769), 896u); // a merged class: 832 joined 896
}

// mimalloc 2.0.9: mi_bin() of src/page-queue.c with MI_ALIGN2W, restated; bin sizes in words.
unsigned mimalloc_bin(uint64_t size) {
  uint64_t w = (size + 7) / 8;
  if (w <= 1) return 1;
  if (w <= 8) return static_cast<unsigned>((w + 1) & ~uint64_t{1});
  if (w > 16384) return 73;  // MI_MEDIUM_OBJ_WSIZE_MAX: the huge bin
  w--;
  const unsigned b = 63 - static_cast<unsigned>(__builtin_clzll(w));
  return (b << 2) + static_cast<unsigned>((w >> (b - 2)) & 3) - 3;
}
uint64_t mimalloc_bin_bytes(unsigned bin) {  // inverse: the largest size of a bin
  if (bin <= 8) return 8 * bin;
  const unsigned b = (bin + 3) / 4, m = (bin + 3) % 4;
  return 8 * (static_cast<uint64_t>(4 + m + 1) << (b - 2));
}

TEST(ClassTables, MimallocMatchesBins) {
  const ClassTable& t = table_named("mimalloc");
  for (uint64_t n = 0; n <= 131072; ++n) {
    const unsigned bin = mimalloc_bin(n);
    ASSERT_EQ(slot_of(t, n), mimalloc_bin_bytes(bin)) << "request " << n;
    ASSERT_EQ(t.classes()[t.class_of(n)].label, fmt::format("bin {} ({} B)", bin, mimalloc_bin_bytes(bin)));
  }
  EXPECT_EQ(slot_of(t, 17), 32u);  // 24 rounds to 32: two-word alignment
  EXPECT_EQ(slot_of(t, 65), 80u);
  EXPECT_EQ(t.classes()[t.class_of(131073)].label, "large (1 block per page)");
  EXPECT_EQ(t.classes()[t.class_of(16 << 20)].label, "large (1 block per page)");
  EXPECT_EQ(t.classes()[t.class_of((16 << 20) + 1)].label, "huge (own segment)");
}

// scudo (LLVM 14): FixedSizeClassMap<DefaultSizeClassConfig> and the header of combined.h.
uint64_t scudo_class_size(uint64_t class_id) {
  if (class_id <= 8) return class_id << 5;
  class_id -= 8;
  const uint64_t t = uint64_t{256} << (class_id >> 2);
  return t + (t >> 2) * (class_id & 3);
}
uint64_t scudo_class_id(uint64_t size) {
  if (size <= 32) return 1;
  if (size <= 256) return (size + 31) >> 5;
  const uint64_t s = size - 1;
  const unsigned l = 63 - static_cast<unsigned>(__builtin_clzll(s));
  return 8 + 1 + ((s >> (l - 2)) - 4) + ((l - 8) << 2);
}

TEST(ClassTables, ScudoMatchesDefaultSizeClassMap) {
  const ClassTable& t = table_named("scudo");
  for (uint64_t n = 0; n <= 131056; ++n) {
    const uint64_t needed = ((n + 15) & ~uint64_t{15}) + 16;
    const uint64_t id = scudo_class_id(needed);
    ASSERT_EQ(t.class_of(n) + 1, id) << "request " << n;
    ASSERT_EQ(slot_of(t, n), scudo_class_size(id)) << "request " << n;
  }
  EXPECT_EQ(t.classes().size(), 45u);  // classes 1..44 and the secondary
  EXPECT_EQ(slot_of(t, 16), 32u);
  EXPECT_EQ(slot_of(t, 17), 64u);
  EXPECT_EQ(slot_of(t, 240), 256u);
  EXPECT_EQ(slot_of(t, 241), 320u);
  EXPECT_EQ(t.classes()[t.class_of(131057)].label, "secondary (mmap)");
}

TEST(ClassTables, BucketTableIsTheBuckets) {
  const ClassTable& t = bucket_class_table();
  ASSERT_EQ(t.classes().size(), kSizeBuckets);
  for (unsigned b = 0; b < kSizeBuckets; ++b) {
    EXPECT_EQ(t.classes()[b].lo, bucket_lo(b));
    EXPECT_EQ(t.classes()[b].hi, bucket_hi(b));
  }
  EXPECT_EQ(t.classes()[bucket_of(256)].label, "256-319");
  for (uint64_t v : {0ull, 5ull, 1000ull, 123456789ull, ~0ull}) EXPECT_EQ(t.class_of(v), bucket_of(v));
}

// ---- Choosing a table ----

TEST(ClassTables, ChosenFromTheAllocatorPath) {
  using L = format::Libc;
  auto name = [](std::string_view path, L libc) {
    const ClassTable* t = class_table_for(path, libc);
    return t ? std::string(t->name()) : std::string("none");
  };
  EXPECT_EQ(name("/lib/x86_64-linux-gnu/libc.so.6", L::Glibc), "glibc");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libc.so.6", L::Unknown), "glibc");
  EXPECT_EQ(name("/lib/ld-musl-x86_64.so.1", L::Musl), "musl");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-musl/libc.so", L::Musl), "musl");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", L::Glibc), "jemalloc");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", L::Glibc), "tcmalloc");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4", L::Glibc), "tcmalloc");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal_debug.so.4", L::Glibc), "none");
  EXPECT_EQ(name("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", L::Glibc), "mimalloc");
  EXPECT_EQ(name("/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.scudo_standalone-x86_64.so",
                 L::Glibc), "scudo");
  EXPECT_EQ(name("/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.scudo-x86_64.so", L::Glibc),
            "none");
  EXPECT_EQ(name("/opt/lib/libspin_alloc.so", L::Glibc), "none");
  EXPECT_EQ(name("", L::Glibc), "none");
}

// ---- Splitting bucket cells into classes ----

Cell make_cell(uint64_t calls, ByteCount bytes, uint64_t timed, uint64_t ticks, uint64_t max_ticks,
               std::map<uint16_t, uint64_t> latency = {}) {
  Cell c;
  c.counters = Counters{calls, bytes, 0, timed, ticks, max_ticks};
  c.latency = std::move(latency);
  return c;
}

format::Event make_event(Op op, uint32_t size, uint32_t ticks) {
  format::Event e{};
  e.op = static_cast<uint8_t>(op);
  e.size = size;
  e.bucket = static_cast<uint8_t>(bucket_of(size));
  e.duration_ticks = ticks;
  return e;
}

Counters sum_op(const ClassCellMap& cells, uint8_t op) {
  Counters total;
  for (const auto& [key, cell] : cells) {
    if (key.op == op) total.add(cell.counters);
  }
  return total;
}

TEST(SplitCells, ABucketInsideOneClassMovesWhole) {
  const ClassTable& glibc = table_named("glibc");
  CellMap cells;
  const uint8_t malloc_op = static_cast<uint8_t>(Op::Malloc);
  cells[CellKey{malloc_op, static_cast<uint8_t>(bucket_of(16))}] = make_cell(10, 160, 2, 50, 30, {{5, 2}});
  const ClassCellMap out = split_cells(cells, glibc);
  ASSERT_EQ(out.size(), 1u);
  const auto& [key, cell] = *out.begin();
  EXPECT_EQ(key.cls, glibc.class_of(16));
  EXPECT_EQ(cell.counters, cells.begin()->second.counters);
  EXPECT_EQ(cell.latency, (std::map<uint16_t, uint64_t>{{5, 2}}));
}

TEST(SplitCells, WithoutEventsSplitsByOverlap) {
  // Bucket 256-319 spans glibc chunks 272..320: classes of 16 requests each, except the ends.
  const ClassTable& glibc = table_named("glibc");
  const uint8_t op = static_cast<uint8_t>(Op::Malloc);
  const unsigned b = bucket_of(256);
  CellMap cells;
  cells[CellKey{op, static_cast<uint8_t>(b)}] = make_cell(6400, 6400ull * 287, 64, 6400, 99, {{7, 64}});
  const ClassCellMap out = split_cells(cells, glibc);
  EXPECT_EQ(sum_op(out, op).calls, 6400u);
  EXPECT_EQ(sum_op(out, op).bytes, ByteCount{6400ull * 287});
  EXPECT_EQ(sum_op(out, op).timed, 64u);
  EXPECT_EQ(sum_op(out, op).timed_ticks, 6400u);
  uint64_t latency = 0;
  for (const auto& [key, cell] : out) {
    const SizeClass& c = glibc.classes()[key.cls];
    const uint64_t overlap = std::min<uint64_t>(c.hi, 319) - std::max<uint64_t>(c.lo, 256) + 1;
    EXPECT_EQ(cell.counters.calls, overlap * 100) << c.label;  // 64 sizes, 100 calls each
    EXPECT_EQ(cell.counters.max_ticks, 99u);
    for (const auto& [bin, n] : cell.latency) latency += n;
  }
  EXPECT_EQ(latency, 64u);
  EXPECT_EQ(out.size(), glibc.class_of(319) - glibc.class_of(256) + 1);
}

TEST(SplitCells, WithEventsSplitsByTheirExactSizes) {
  // Bucket 256-319; events say: sizes 260 (chunk 272) and 300 (chunk 320), 3:1, the larger slower.
  const ClassTable& glibc = table_named("glibc");
  const uint8_t op = static_cast<uint8_t>(Op::Malloc);
  const unsigned b = bucket_of(256);
  EventSizes sizes;
  std::vector<format::Event> events;
  for (int i = 0; i < 3; ++i) events.push_back(make_event(Op::Malloc, 260, 10));
  events.push_back(make_event(Op::Malloc, 300, 1000));
  sizes.add(events);
  CellMap cells;
  const uint16_t fast = static_cast<uint16_t>(latency_bin_of(10)), slow = static_cast<uint16_t>(latency_bin_of(1000));
  cells[CellKey{op, static_cast<uint8_t>(b)}] =
      make_cell(4000, 3000ull * 260 + 1000ull * 300, 40, 30 * 10 + 10 * 1000, 1200, {{fast, 30}, {slow, 10}});
  const ClassCellMap out = split_cells(cells, glibc, &sizes);
  ASSERT_EQ(out.size(), 2u);
  const Cell& small = out.at(ClassCellKey{static_cast<uint32_t>(glibc.class_of(260)), op});
  const Cell& large = out.at(ClassCellKey{static_cast<uint32_t>(glibc.class_of(300)), op});
  EXPECT_EQ(small.counters.calls, 3000u);
  EXPECT_EQ(large.counters.calls, 1000u);
  EXPECT_EQ(small.counters.bytes, ByteCount{3000ull * 260});
  EXPECT_EQ(large.counters.bytes, ByteCount{1000ull * 300});
  EXPECT_EQ(small.counters.timed, 30u);
  EXPECT_EQ(large.counters.timed, 10u);
  // Ticks by the events' durations: 30 : 1000.
  EXPECT_EQ(small.counters.timed_ticks + large.counters.timed_ticks, 10300u);
  EXPECT_NEAR(static_cast<double>(large.counters.timed_ticks), 10300.0 * 1000 / 1030, 1.0);
  EXPECT_EQ(small.latency, (std::map<uint16_t, uint64_t>{{fast, 30}}));
  EXPECT_EQ(large.latency, (std::map<uint16_t, uint64_t>{{slow, 10}}));
  EXPECT_EQ(large.counters.max_ticks, 1200u);  // the class of the longest event keeps the cell's max
  EXPECT_EQ(small.counters.max_ticks, 10u);
}

TEST(SplitCells, NoClassGetsBytesOrTimedCallsWithoutCalls) {
  // Two calls in bucket 256-319 (glibc chunks 272..320), no events: by overlap, the calls go to
  // two of the four classes; the bytes and the timed call go only there, never to a class that
  // got no call (apportioned apart, rounding could leave one a few bytes of no call).
  const ClassTable& glibc = table_named("glibc");
  const uint8_t op = static_cast<uint8_t>(Op::Malloc);
  CellMap cells;
  cells[CellKey{op, static_cast<uint8_t>(bucket_of(256))}] = make_cell(2, 574, 1, 40, 40, {{7, 1}});
  const ClassCellMap out = split_cells(cells, glibc);
  EXPECT_EQ(sum_op(out, op).calls, 2u);
  EXPECT_EQ(sum_op(out, op).bytes, ByteCount{574});
  EXPECT_EQ(sum_op(out, op).timed, 1u);
  for (const auto& [key, cell] : out) {
    if (cell.counters.calls == 0) {
      EXPECT_EQ(cell.counters.bytes, ByteCount{0}) << glibc.classes()[key.cls].label;
      EXPECT_EQ(cell.counters.timed, 0u) << glibc.classes()[key.cls].label;
      EXPECT_EQ(cell.counters.timed_ticks, 0u) << glibc.classes()[key.cls].label;
    }
  }
}

TEST(SplitCells, ConservesTotalsWithRoundingAndKeepsUnknownSizes) {
  const ClassTable& musl = table_named("musl");
  CellMap cells;
  const uint8_t malloc_op = static_cast<uint8_t>(Op::Malloc), free_op = static_cast<uint8_t>(Op::Free);
  ByteCount bytes = 0;
  for (unsigned b = 0; b < 80; ++b) {
    const Cell cell = make_cell(7 + b * 13, ByteCount{bucket_lo(b)} * (7 + b * 13), b % 3, b * 11, b);
    cells[CellKey{malloc_op, static_cast<uint8_t>(b)}] = cell;
    bytes += cell.counters.bytes;
  }
  cells[CellKey{free_op, static_cast<uint8_t>(kBucketUnknown)}] = make_cell(500, 0, 0, 0, 0);
  const ClassCellMap out = split_cells(cells, musl);
  Counters expect;
  for (const auto& [key, cell] : cells) {
    if (key.op == malloc_op) expect.add(cell.counters);
  }
  const Counters got = sum_op(out, malloc_op);
  EXPECT_EQ(got.calls, expect.calls);
  EXPECT_EQ(got.bytes, expect.bytes);
  EXPECT_EQ(got.timed, expect.timed);
  EXPECT_EQ(got.timed_ticks, expect.timed_ticks);
  EXPECT_EQ(got.max_ticks, expect.max_ticks);
  EXPECT_EQ(out.at(ClassCellKey{kNoClass, free_op}).counters.calls, 500u);
}

TEST(SplitCells, IgnoresEventsWhoseSizeSaturated) {
  EventSizes sizes;
  format::Event e = make_event(Op::Malloc, ~uint32_t{0}, 5);
  e.bucket = static_cast<uint8_t>(bucket_of(uint64_t{1} << 40));  // the real request was larger
  sizes.add(e);
  EXPECT_TRUE(sizes.empty());
  sizes.add(make_event(Op::Malloc, 100, 5));
  EXPECT_NE(sizes.find(CellKey{static_cast<uint8_t>(Op::Malloc), static_cast<uint8_t>(bucket_of(100))}), nullptr);
}

}  // namespace
}  // namespace allocscope
