// The class tables against the allocators installed here: usable_size_probe (tests/allocators)
// prints, under LD_PRELOAD, the runs of request sizes that get the same malloc_usable_size.  For
// glibc, jemalloc, tcmalloc and mimalloc that size is the slot (minus glibc's 8-byte size field),
// so every class must be exactly such a run (glibc's largebin classes: a series of them).  musl
// and scudo report the requested size instead; their tables are checked against their sources
// only (class_tables_test.cpp).  An allocator that is not installed is skipped.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "run/allocator_lookup.h"
#include "model/class_tables.h"

namespace allocscope {
namespace {

struct Run {
  uint64_t first = 0, last = 0, usable = 0;
};

std::vector<Run> probe(const std::string& preload, uint64_t max) {
  const std::string command = "LD_PRELOAD='" + preload + "' '" ALLOCSCOPE_USABLE_SIZE_PROBE "' " +
                              std::to_string(max);
  FILE* out = popen(command.c_str(), "r");
  if (!out) return {};
  std::vector<Run> runs;
  unsigned long long first, last, usable;
  while (fscanf(out, "%llu %llu %llu", &first, &last, &usable) == 3) runs.push_back({first, last, usable});
  const int status = pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  return runs;
}

const ClassTable& table_named(std::string_view name) {
  for (const ClassTable* t : allocator_class_tables()) {
    if (t->name() == name) return *t;
  }
  throw std::runtime_error("no table " + std::string(name));
}

// `limit`: the largest request whose usable size is still a fixed slot.
void check_installed(std::string_view name, uint64_t limit) {
  std::string preload;
  if (name != "glibc") {
    try {
      const AllocatorChoice choice = find_allocator(name);
      preload = choice.library->string();
    } catch (const AllocatorLookupError& e) {
      GTEST_SKIP() << name << " is not installed: " << e.what();
    }
  }
  const ClassTable& table = table_named(name);
  const std::vector<Run> runs = probe(preload, limit);
  ASSERT_FALSE(runs.empty());
  ASSERT_EQ(runs.back().last, limit);

  // No run of equal usable sizes crosses a class boundary.
  for (const Run& run : runs) {
    ASSERT_EQ(table.class_of(run.first), table.class_of(run.last))
        << name << ": requests " << run.first << "-" << run.last << " share usable size " << run.usable;
  }
  // Every class with a fixed slot is made of whole runs, and its last run's usable size is the slot.
  size_t r = 0;
  unsigned checked = 0;
  for (const SizeClass& c : table.classes()) {
    if (c.slot_size == 0 || c.hi > limit) break;
    while (runs[r].last < c.lo) ++r;
    ASSERT_EQ(runs[r].first, c.lo) << name << ": " << c.label << " starts inside a run";
    while (runs[r].last < c.hi) ++r;
    ASSERT_EQ(runs[r].last, c.hi) << name << ": " << c.label << " ends inside a run";
    EXPECT_EQ(runs[r].usable + table.header(), c.slot_size) << name << ": " << c.label;
    ++checked;
  }
  EXPECT_GT(checked, 40u);
}

TEST(ClassTablesInstalled, Glibc) { check_installed("glibc", 131048); }
TEST(ClassTablesInstalled, Jemalloc) { check_installed("jemalloc", 300000); }
TEST(ClassTablesInstalled, Tcmalloc) { check_installed("tcmalloc", 256 * 1024); }
TEST(ClassTablesInstalled, Mimalloc) { check_installed("mimalloc", 128 * 1024); }

}  // namespace
}  // namespace allocscope
