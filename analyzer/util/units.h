// units.h — human-readable numbers for text output: counts, byte sizes, durations, size buckets.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "profile/stats.h"

namespace allocscope {

std::string group_digits(uint64_t value);          // 1234567 -> "1,234,567"
std::string format_bytes(ByteCount bytes);         // "512 B", "1.5 KiB", "3.25 GiB" (2 decimals max)
std::string format_duration_ns(double ns);         // "850 ns", "1.23 µs", "4.5 ms", "7.89 s"
// Text from the profiled program, made safe for a terminal: control characters are escaped.
std::string printable(std::string_view text);
std::string format_size_bucket(unsigned bucket);   // "24 B", "[1 KiB, 1.25 KiB)", "≥ 14 EiB",
                                                   // "size not taken" (kBucketUnknown)

}  // namespace allocscope
