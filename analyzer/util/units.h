// units.h — human-readable numbers for text output: counts, byte sizes, durations, size buckets.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace allocscope {

// A sum of request sizes.  A few failed multi-exabyte requests already exceed 64 bits, so sums
// are 128-bit: every view of the same calls then adds up exactly.
using ByteCount = unsigned __int128;

std::string group_digits(uint64_t value);          // 1234567 -> "1,234,567"
std::string format_bytes(ByteCount bytes);         // "512 B", "1.5 KiB", "3.25 GiB" (2 decimals max)
std::string format_duration_ns(double ns);         // "850 ns", "1.23 µs", "4.5 ms", "7.89 s"
// A difference of durations with its sign: "+1.2 ms", "-850 ns"; `minus` is "-" in plain text and
// "−" (U+2212) where the output is typeset (shape tables, HTML).
std::string format_signed_duration_ns(double ns, std::string_view minus = "-");
// A share as a percentage: 0.417 -> "42 %" (0 decimals), "41.7 %" (1 decimal); "-" when it is not
// a finite number.
std::string format_percent(double share, int decimals = 0);
// Text from the profiled program, made safe for a terminal: control characters are escaped.
std::string printable(std::string_view text);
// A range of sizes: "16–24 B", "1 KiB–1.5 KiB", "≥ 14 EiB", "48 B".
std::string size_range_text(uint64_t lo, uint64_t hi);
std::string format_size_bucket(unsigned bucket);   // "24 B", "[1 KiB, 1.25 KiB)", "≥ 14 EiB",
                                                   // "size not taken" (kBucketUnknown)

}  // namespace allocscope
