// The size-class tables looked up: by allocator, by request size, and the bucket table.
#include "model/class_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "allocscope/buckets.h"
#include "model/class_tables_data.h"

namespace allocscope {

namespace {

using namespace class_data;

constexpr const ClassTable* kAllocatorTables[] = {&kGlibcTable,    &kMuslTable,     &kJemallocTable,
                                                  &kTcmallocTable, &kMimallocTable, &kScudoTable};

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

size_t ClassTable::class_of(uint64_t request) const {
  // The first class whose hi is >= request; the last class ends at 2^64-1.
  const auto it = std::lower_bound(classes_.begin(), classes_.end(), request,
                                   [](const SizeClass& c, uint64_t v) { return c.hi < v; });
  return it == classes_.end() ? classes_.size() - 1 : static_cast<size_t>(it - classes_.begin());
}

ClassLookup::ClassLookup(const ClassTable& table) : table_(table) {
  for (unsigned b = 0; b < kSizeBuckets; ++b) {
    first_[b] = static_cast<uint32_t>(table.class_of(bucket_lo(b)));
    last_[b] = static_cast<uint32_t>(table.class_of(bucket_hi(b)));
  }
}

size_t ClassLookup::operator()(uint64_t request) const {
  const unsigned b = bucket_of(request);
  if (first_[b] == last_[b]) return first_[b];
  const auto classes = table_.classes();
  const auto begin = classes.begin() + first_[b], end = classes.begin() + last_[b] + 1;
  const auto it = std::lower_bound(begin, end, request, [](const SizeClass& c, uint64_t v) { return c.hi < v; });
  return static_cast<size_t>(it - classes.begin());
}

const ClassTable* class_table_for(std::string_view allocator_path, format::Libc libc) {
  const std::string_view name = base_name(allocator_path);
  if (name.empty()) return nullptr;
  if (contains(name, "jemalloc")) return &kJemallocTable;
  if (contains(name, "tcmalloc")) return contains(name, "debug") ? nullptr : &kTcmallocTable;
  if (contains(name, "mimalloc")) return &kMimallocTable;
  if (contains(name, "scudo")) {
    // libclang_rt.scudo-<arch>.so and scudo_minimal are the older, sanitizer-based scudo.
    const bool legacy = name.starts_with("libclang_rt.scudo-") ||
                        name.starts_with("libclang_rt.scudo_minimal");
    return legacy ? nullptr : &kScudoTable;
  }
  if (name.starts_with("ld-musl") || name.starts_with("libc.musl")) return &kMuslTable;
  if (name.starts_with("libc.so") || name.starts_with("libc-")) {
    if (libc == format::Libc::Musl) return &kMuslTable;
    if (libc == format::Libc::Glibc || name == "libc.so.6") return &kGlibcTable;
  }
  return nullptr;
}

const ClassTable& bucket_class_table() {
  struct Buckets {
    std::vector<std::string> labels;
    std::vector<SizeClass> classes;
    ClassTable table{"buckets", "log-linear size buckets (4 per power of two)", 0, {}};
    Buckets() {
      labels.reserve(kSizeBuckets);
      for (unsigned b = 0; b < kSizeBuckets; ++b) {
        const uint64_t lo = bucket_lo(b), hi = bucket_hi(b);
        labels.push_back(lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi));
      }
      for (unsigned b = 0; b < kSizeBuckets; ++b) {
        classes.push_back(SizeClass{bucket_lo(b), bucket_hi(b), 0, labels[b]});
      }
      table = ClassTable{"buckets", "log-linear size buckets (4 per power of two)", 0, classes};
    }
  };
  static const Buckets buckets;
  return buckets.table;
}

std::span<const ClassTable* const> allocator_class_tables() { return kAllocatorTables; }

}  // namespace allocscope
