// lock_test.h — the lock test `record` runs after the program ended.
//
// For each profile in which two threads or more called the allocator, `record` runs
// allocscope-lockprobe (lockprobe/lockprobe.c) once per distinct (C library, allocator): the
// probe built for the program's C library, with the program's environment and its allocator
// preloaded (nothing preloaded when the allocator is the C library's own). It holds one of two
// threads of its own inside that allocator and watches whether the other goes on. What it found is
// appended to the profile as a LockTest chunk (format.h); model/lock_test.h reads it. The probe
// never runs inside the program (which must get no helper thread): it is a process of its own.
//
// Not run, with the reason in the chunk: the allocator is linked into the program itself (nothing
// to preload), the probe for that C library is not installed. A probe that fails or tests another
// allocator than the program's (a preload that did not take) is recorded as failed.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace allocscope {

// Appends a LockTest chunk to every profile in `profiles` made by two threads or more.
// `env` is the program's environment as it was run (LD_PRELOAD included); `shim` the preloaded
// shim, which the probe runs without.
void add_lock_tests(const std::vector<std::filesystem::path>& profiles, const std::vector<std::string>& env,
                    const std::filesystem::path& shim);

}  // namespace allocscope
