// fuzz_profile.cpp — libFuzzer target: a whole profile file, read the way `allocscope dump` and
// the reports read it.
//
// The input becomes a file (an anonymous memfd, opened by its /proc path, as the reader takes a
// path) and goes through load_profile (reader, every chunk decoder, snapshot assembly), the trace
// cursor over each TraceEvents chunk, merge_trace (which reads the file again), dump_json and
// dump_text.  Damage must surface as ProfileError; any other exception, crash, sanitizer report,
// leak, or allocation past libFuzzer's -malloc_limit_mb is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "render/dump.h"
#include "fuzz_target.h"
#include "profile/profile.h"
#include "profile/profile_error.h"
#include "profile/trace_decode.h"

namespace {

class CountingVisitor : public allocscope::TraceVisitor {
 public:
  void enter(const allocscope::TraceCall& call) override { sum_ += call.enter_tick; }
  void exit(const allocscope::TraceCall& call) override { sum_ += call.duration(); }
  uint64_t sum_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("allocscope-fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    allocscope::LoadOptions options;
    options.warn = [](std::string_view) {};
    uint64_t records = 0;
    options.on_trace = [&records](const allocscope::TraceEventsRecord& chunk) {
      allocscope::TraceCursor cursor(chunk);
      allocscope::trace::Record record;
      while (cursor.next(record)) records++;
    };
    const allocscope::Profile profile = allocscope::load_profile(path, options);
    CountingVisitor visitor;
    allocscope::TraceVisitor* visitors[] = {&visitor};
    allocscope::merge_trace(profile, visitors);
    allocscope::fuzz_sink(allocscope::dump_json(profile).size() + allocscope::dump_text(profile).size() +
                          records + visitor.sum_);
  } catch (const allocscope::ProfileError&) {
  }
  close(fd);
  return 0;
}
