#pragma once
// Units used across ccsynth. Names carry their unit (`alpha_us`, `beta_us_per_mb`, `bytes`).
// Times are microseconds (double); sizes are bytes (int64_t); beta is microseconds per MiB
// (2^20 bytes), the unit of TACCL's table 1; bandwidths printed for users are GB/s (1e9 bytes/s).

#include <cstdint>
#include <string>
#include <vector>

namespace ccsynth {

inline constexpr double kBytesPerMb = 1024.0 * 1024.0;  // beta's "MB" is a MiB

/// Time in microseconds to move `bytes` at `beta_us_per_mb` (no latency term).
inline double transfer_us(double beta_us_per_mb, double bytes) {
  return beta_us_per_mb * bytes / kBytesPerMb;
}

/// beta (us per MiB) of a link with the given bandwidth in GB/s (1e9 bytes per second).
inline double beta_from_gbps(double gbps) { return kBytesPerMb / (gbps * 1e3); }

/// Bandwidth in GB/s (1e9 bytes per second) of a link with the given beta.
inline double gbps_from_beta(double beta_us_per_mb) { return kBytesPerMb / (beta_us_per_mb * 1e3); }

/// Parses a size such as "1K", "64M", "1G", "512", "2MB", "1KiB" (binary multiples) into bytes.
/// Throws UserError naming `field` when the text is not a size.
int64_t parse_bytes(const std::string& text, const std::string& field = "size");

/// Parses a list of sizes "1K,1M,64M" or a range "1K:1G" (every power of 4 from the first to
/// the last, both included: 1K, 4K, 16K, ..., 1G; "1K:1G:2" steps by a factor of 2 instead).
/// Throws UserError naming `field`.
std::vector<int64_t> parse_byte_list(const std::string& text, const std::string& field = "sizes");

/// Formats bytes compactly with binary suffixes: 1024 -> "1K", 3145728 -> "3M", 1000 -> "1000".
std::string format_bytes(int64_t bytes);

}  // namespace ccsynth
