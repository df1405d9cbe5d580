// `allocscope report` on a trace runs the shapes pass on a thread of its own while the cost model
// reads the file (report.cpp), and `diff` analyzes its two profiles side by side (side_by_side.h).
// These tests check that the output is the one the passes give one after the other, on good and
// on damaged traces, that errors come in the order of the files, and (under ThreadSanitizer) that
// the threads share nothing they write.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../unit/temp_dir.h"
#include "../unit/test_profile_writer.h"
#include "allocscope/ops.h"
#include "model/cost_model.h"
#include "commands/commands.h"
#include "model/diff.h"
#include "profile/profile_error.h"
#include "render/diff.h"
#include "render/report.h"
#include "util/side_by_side.h"

namespace allocscope {
namespace {

constexpr unsigned kMalloc = static_cast<unsigned>(Op::Malloc);
constexpr unsigned kFree = static_cast<unsigned>(Op::Free);

// A trace of `threads` threads, each allocating and freeing random sizes, some blocks freed by the
// next thread: enough calls for both passes to overlap in time.
test::TestProfileWriter random_trace(unsigned threads, unsigned calls_per_thread) {
  test::TestProfileWriter w = test::trace_profile();
  std::mt19937_64 rng(7);
  std::vector<std::vector<trace::Record>> per_thread(threads);
  for (unsigned t = 0; t < threads; ++t) {
    uint64_t tick = 1000 + t * 7;
    std::vector<uint64_t> live;
    for (unsigned i = 0; i < calls_per_thread; ++i) {
      tick += 20 + rng() % 200;
      const uint64_t duration = 5 + rng() % 60;
      if (!live.empty() && rng() % 2) {
        const size_t k = rng() % live.size();
        per_thread[t].push_back(test::make_record(kFree, tick, duration, live[k]));
        live.erase(live.begin() + static_cast<long>(k));
      } else {
        const uint64_t addr = (uint64_t{t + 1} << 32) + i * 64;
        per_thread[t].push_back(test::make_record(kMalloc, tick, duration, addr, 16 + rng() % 4000));
        live.push_back(addr);
      }
    }
  }
  for (unsigned t = 0; t < threads; ++t) {
    const auto& records = per_thread[t];
    for (size_t first = 0; first < records.size(); first += 500) {  // several chunks per thread
      const std::vector<trace::Record> part(records.begin() + static_cast<long>(first),
                                            records.begin() + static_cast<long>(std::min(records.size(), first + 500)));
      w.trace(t + 1, first, part, part.front().start_tick);
    }
  }
  format::ProcessEnd end{};
  end.end_tick = 100'000'000;
  end.end_mono_ns = 100'000'000;
  w.process_end(end);
  return w;
}

// What report_command prints for one file, computed one pass after the other.
std::string sequential_report(const std::filesystem::path& path, bool json, ReportGrouping by) {
  CostOptions options;
  options.by = by;
  const CostReport report = analyze_profile(path, options);
  const ReportDetails details = report_details(report);
  return json ? report_json(report, details) : report_text(report, details);
}

std::string run_report(const std::vector<std::string>& args) {
  testing::internal::CaptureStdout();
  const int rc = report_command(args);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  return out;
}

class ReportThreads : public ::testing::Test {
 protected:
  test::TempDir dir_;
};

TEST_F(ReportThreads, TraceReportEqualsThePassesOneAfterTheOther) {
  const auto path = dir_.file("trace.asp");
  random_trace(3, 6000).save(path);
  const std::string json = run_report({"--json", path.string()});
  EXPECT_EQ(json, sequential_report(path, true, ReportGrouping::Class));
  EXPECT_NE(json.find("\"shapes\""), std::string::npos) << "the shapes pass did not run";
  const std::string text = run_report({"--by", "shape", path.string()});
  EXPECT_EQ(text, sequential_report(path, false, ReportGrouping::Shape));
  // Two files: each one's passes run side by side, one file after the other.
  const auto other = dir_.file("other.asp");
  random_trace(2, 3000).save(other);
  const std::string both = run_report({"--json", path.string(), other.string()});
  EXPECT_NE(both.find(json.substr(0, json.size() - 1)), std::string::npos);
}

// A trace cut short in the middle of a chunk: both passes stop at the last whole chunk (with a
// warning), and the report still equals the sequential one.  A damaged chunk: the error is
// reported once, whichever pass meets it first, and nothing hangs.
TEST_F(ReportThreads, DamagedTracesFailOrWarnAsTheyDoAlone) {
  const auto whole = dir_.file("whole.asp");
  auto w = random_trace(2, 4000);
  w.save(whole);
  const auto cut = dir_.file("cut.asp");
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(w.bytes().data(), static_cast<std::streamsize>(w.bytes().size() * 2 / 3));
  }
  testing::internal::CaptureStderr();
  const std::string json = run_report({"--json", cut.string()});
  const std::string expected = sequential_report(cut, true, ReportGrouping::Class);
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(json, expected);
  EXPECT_NE(warnings.find("cut short"), std::string::npos) << warnings;

  const auto bad = dir_.file("bad.asp");
  std::string bytes = w.bytes();
  bytes[bytes.size() * 2 / 3] ^= 0x5a;  // inside a trace chunk's payload: its checksum fails
  {
    std::ofstream out(bad, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_THROW(sequential_report(bad, true, ReportGrouping::Class), ProfileError);
  testing::internal::CaptureStdout();
  EXPECT_THROW(report_command(std::vector<std::string>{"--json", bad.string()}), ProfileError);
  testing::internal::GetCapturedStdout();
}

TEST_F(ReportThreads, DiffOfTwoTracesEqualsTheSequentialOne) {
  const auto base = dir_.file("base.asp");
  const auto other = dir_.file("other.asp");
  random_trace(2, 5000).save(base);
  random_trace(3, 5000).save(other);
  testing::internal::CaptureStdout();
  ASSERT_EQ(diff_command(std::vector<std::string>{"--json", base.string(), other.string()}), 0);
  const std::string json = testing::internal::GetCapturedStdout();
  CostOptions options;
  options.by = ReportGrouping::Bucket;
  const CostReport rb = analyze_profile(base, options);
  const CostReport ro = analyze_profile(other, options);
  EXPECT_EQ(json, diff_json(diff_reports(rb, ro)));
  EXPECT_NE(json.find("\"shape_gap\": {"), std::string::npos) << "no shape attribution";
}

TEST(SideBySide, ReturnsBothAndRaisesTheFirstError) {
  const auto [a, b] = side_by_side([] { return 1; }, [] { return std::string("two"); });
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, "two");
  const auto fail = [](const char* what) { return [what]() -> int { throw std::runtime_error(what); }; };
  const auto which = [](auto f, auto g) {
    try {
      side_by_side(f, g);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("none");
  };
  EXPECT_EQ(which(fail("first"), fail("second")), "first");
  EXPECT_EQ(which([] { return 0; }, fail("second")), "second");
  EXPECT_EQ(which(fail("first"), [] { return 0; }), "first");
}

}  // namespace
}  // namespace allocscope
