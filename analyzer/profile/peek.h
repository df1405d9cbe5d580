// peek.h — what a profile's first chunks say, read without loading the whole profile (load_profile
// in profile.h), for the layers above that must decide before they load it.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "allocscope/format.h"
#include "profile/chunk_records.h"

namespace allocscope {

// The profile's Calibration chunk (written before any event), or nothing; errors are thrown as
// by load_profile.
std::optional<format::Calibration> read_calibration(const std::filesystem::path& path);

// The Process chunk, which the shim writes first (looked for among the first 8 chunks), or nothing.
std::optional<ProcessRecord> read_process(const std::filesystem::path& path);

// The Note chunks among the first 8 (the shim's notes at start-up: what it found ahead of it).
std::vector<std::string> read_early_notes(const std::filesystem::path& path);

// How many threads wrote statistics (the distinct thread_serial of the ThreadStats chunks), read
// from the chunk headers alone (nothing is checked: a damaged file is load_profile's to report);
// counting stops at `enough`.
uint32_t threads_with_statistics(const std::filesystem::path& path, uint32_t enough);

}  // namespace allocscope
