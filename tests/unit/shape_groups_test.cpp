// Shapes merged across adjacent size classes: which classes form a run, the groups of one trace
// and of the difference between two, with known answers.
#include "model/shape_groups.h"
#include "render/shapes.h"

#include <gtest/gtest.h>

#include "allocscope/buckets.h"
#include "allocscope/ops.h"
#include "mini_json.h"
#include "model/shapes.h"
#include "temp_dir.h"
#include "test_profile_writer.h"

namespace allocscope {
namespace {

using test::make_record;
using test::TestProfileWriter;
using test::trace_profile;

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);

constexpr ShapeGroupKey kShortSame{LifetimeGroup::Short, false};
constexpr ShapeGroupKey kMediumSame{LifetimeGroup::Medium, false};
constexpr ShapeGroupKey kShortCross{LifetimeGroup::Short, true};

TEST(ShapeGroups, BandsFormLifetimeGroups) {
  EXPECT_EQ(lifetime_group(LifetimeBand::Under1us), LifetimeGroup::Short);
  EXPECT_EQ(lifetime_group(LifetimeBand::Under10us), LifetimeGroup::Short);
  EXPECT_EQ(lifetime_group(LifetimeBand::Under100us), LifetimeGroup::Medium);
  EXPECT_EQ(lifetime_group(LifetimeBand::Under1s), LifetimeGroup::Medium);
  EXPECT_EQ(lifetime_group(LifetimeBand::AtLeast1s), LifetimeGroup::Long);
  EXPECT_EQ(lifetime_group(LifetimeBand::Leaked), LifetimeGroup::Leaked);
  EXPECT_STREQ(lifetime_group_name(LifetimeGroup::Medium), "medium");
}

TEST(ShapeGroups, RunsEndAtAnOccupiedClassWithoutTheShape) {
  // Short same-thread in classes 1, 2, 3, 5 and 9; medium in 4; nothing in 6, 7, 8.
  const std::set<ShapeCell> cells = {{kShortSame, 1}, {kShortSame, 2}, {kShortSame, 3}, {kMediumSame, 4},
                                     {kShortSame, 5}, {kShortSame, 9}, {kShortCross, 2}};
  const auto runs = class_runs(cells);
  ASSERT_EQ(runs.size(), cells.size());
  EXPECT_EQ(runs.at({kShortSame, 1}), 1u);
  EXPECT_EQ(runs.at({kShortSame, 2}), 1u);
  EXPECT_EQ(runs.at({kShortSame, 3}), 1u);
  EXPECT_EQ(runs.at({kMediumSame, 4}), 4u);
  EXPECT_EQ(runs.at({kShortSame, 5}), 5u);  // class 4 holds blocks, none short: a new run
  EXPECT_EQ(runs.at({kShortSame, 9}), 5u);  // classes 6-8 hold nothing: the run goes on
  EXPECT_EQ(runs.at({kShortCross, 2}), 2u);
}


// Quick blocks of 100, 120 and 200 B (buckets 22, 23, 26); `slow_ns` is how long the call that
// frees the 200 B block takes; with `held`, a 150 B block (bucket 24) lives 50 µs.
TestProfileWriter two_shapes(bool held, uint64_t slow_ns = 10) {
  TestProfileWriter w = trace_profile();
  std::vector<trace::Record> records = {
      make_record(kMalloc, 1000, 10, 0x1000, 100), make_record(kFree, 1100, 10, 0x1000),
      make_record(kMalloc, 1200, 10, 0x2000, 120), make_record(kFree, 1300, 10, 0x2000),
      make_record(kMalloc, 1400, 10, 0x3000, 200), make_record(kFree, 1500, slow_ns, 0x3000),
  };
  if (held) {
    records.push_back(make_record(kMalloc, 20000, 10, 0x4000, 150));
    records.push_back(make_record(kFree, 70010, 10, 0x4000));
  }
  w.trace(1, 0, records, 1000);
  format::ProcessEnd end{};
  end.end_tick = 100000;
  end.end_mono_ns = 100000;
  w.process_end(end);
  return w;
}

class ShapeGroupsTest : public ::testing::Test {
 protected:
  ShapeReport report(const TestProfileWriter& w, const std::string& name) {
    const auto path = dir_.file(name);
    w.save(path);
    return analyze_shapes(path);
  }
  test::TempDir dir_;
};

TEST_F(ShapeGroupsTest, AdjacentClassesMergeIntoOneShape) {
  const ShapeReport r = report(two_shapes(false), "a.asp");
  ASSERT_EQ(r.shapes.size(), 3u);
  ASSERT_EQ(r.groups.size(), 1u);
  const ShapeGroupRow& g = r.groups[0];
  EXPECT_EQ(g.key, kShortSame);
  EXPECT_EQ(g.lo, 100u);
  EXPECT_EQ(g.hi, 200u);
  EXPECT_EQ(g.classes, 3u);
  EXPECT_EQ(g.blocks, 3u);
  EXPECT_EQ(g.calls, 6u);
  EXPECT_EQ(g.time_ns, 60u);
  EXPECT_EQ(describe_shape_group(g.lo, g.hi, g.key), "short-lived same-thread 100–200 B");
  EXPECT_NE(shape_groups_text(r).find("short-lived same-thread 100–200 B"), std::string::npos);
}

TEST_F(ShapeGroupsTest, AnotherShapeBetweenSplitsTheRun) {
  const ShapeReport r = report(two_shapes(true), "b.asp");
  ASSERT_EQ(r.groups.size(), 3u);
  std::set<std::string> names;
  for (const ShapeGroupRow& g : r.groups) names.insert(describe_shape_group(g.lo, g.hi, g.key));
  EXPECT_EQ(names, (std::set<std::string>{"short-lived same-thread 100–120 B", "short-lived same-thread 200 B",
                                          "medium-lived same-thread 150 B"}));
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  write_shape_groups(w, r);
  w.end_object();
  const test::Json j = test::parse_json(out);
  uint64_t calls = 0;
  for (const test::Json& g : j["shape_groups"].array()) {
    calls += g["calls"].as_u64();
    if (g["lifetime"].string() == "medium") {
      EXPECT_EQ(g["lo"].as_u64(), 150u);
      EXPECT_EQ(g["description"].string(), "medium-lived same-thread 150 B");
    }
  }
  EXPECT_EQ(calls, 8u);
}

TEST_F(ShapeGroupsTest, GapIsSplitOverMergedShapes) {
  const ShapeReport base = report(two_shapes(false, 10), "base.asp");
  const ShapeReport other = report(two_shapes(false, 1010), "other.asp");
  const ShapeGap gap = attribute_gap(base, other, bucket_class_table());
  EXPECT_DOUBLE_EQ(gap.gap_ns, 1000.0);
  ASSERT_EQ(gap.groups.size(), 1u);
  const ShapeGapGroup& g = gap.groups[0];
  EXPECT_EQ(g.key, kShortSame);
  EXPECT_EQ(g.lo, 100u);
  EXPECT_EQ(g.hi, 200u);
  EXPECT_EQ(g.classes, 3u);
  EXPECT_EQ(g.base_ns, 60u);
  EXPECT_EQ(g.other_ns, 1060u);
  EXPECT_DOUBLE_EQ(g.share, 1.0);
  ASSERT_EQ(gap.rows.size(), 1u);  // only the 200 B class changed
  EXPECT_EQ(gap.rows[0].min_size, 200u);
  const std::string text = shape_gap_text(gap);
  EXPECT_NE(text.find("short-lived same-thread 100–200 B"), std::string::npos) << text;
  EXPECT_NE(text.find("100.0 %"), std::string::npos) << text;
}

}  // namespace
}  // namespace allocscope
