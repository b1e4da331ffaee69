#include "ccsynth/compiler/schedule_order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace ccsynth::compiler {

namespace {

bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// For every op, the latest start time of the ops of earlier steps that delivered one of its
// chunks to its sender; -1 when the sender held them all from the start.
std::vector<double> data_arrival_starts(const Algorithm& a) {
  std::vector<double> out(a.ops.size(), -1.0);
  std::map<std::pair<int, int>, double> delivered;  // (rank, chunk) -> latest delivering start
  size_t begin = 0;
  while (begin < a.ops.size()) {  // ops are sorted by step: one step at a time
    size_t end = begin;
    while (end < a.ops.size() && a.ops[end].step == a.ops[begin].step) ++end;
    for (size_t i = begin; i < end; ++i) {
      const ChunkOp& op = a.ops[i];
      for (int c = op.chunk; c < op.chunk + op.count; ++c) {
        auto it = delivered.find({op.src, c});
        if (it != delivered.end()) out[i] = std::max(out[i], it->second);
      }
    }
    for (size_t i = begin; i < end; ++i) {
      const ChunkOp& op = a.ops[i];
      for (int c = op.chunk; c < op.chunk + op.count; ++c) {
        double& d = delivered.try_emplace({op.dst, c}, -1.0).first->second;
        d = std::max(d, op.start_us);
      }
    }
    begin = end;
  }
  return out;
}

// Whether every op has a start time after `arrival` (data_arrival_starts).
bool starts_after_arrivals(const Algorithm& a, const std::vector<double>& arrival) {
  if (a.ops.empty()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const double start = a.ops[i].start_us;
    if (start < 0) return false;
    if (arrival[i] >= 0 && (arrival[i] > start || same_time(arrival[i], start))) return false;
  }
  return true;
}

}  // namespace

bool has_schedule_order(const Algorithm& a) {
  return starts_after_arrivals(a, data_arrival_starts(a));
}

Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels) {
  const std::vector<double> arrival = data_arrival_starts(algorithm);
  if (!starts_after_arrivals(algorithm, arrival)) return algorithm;
  Algorithm a = algorithm;
  // Channel hints: per connection, the distinct data arrival times in increasing order.
  std::map<std::pair<int, int>, std::vector<double>> arrivals;
  for (size_t i = 0; i < a.ops.size(); ++i)
    arrivals[{a.ops[i].src, a.ops[i].dst}].push_back(arrival[i]);
  for (auto& [connection, times] : arrivals) {
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end(), same_time), times.end());
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    ChunkOp& op = a.ops[i];
    // A threadblock hint fixes the threadblock, and with it the channel.
    if (op.channel >= 0 || op.send_tb >= 0 || op.recv_tb >= 0) continue;
    const auto& times = arrivals.at({op.src, op.dst});
    const auto at = std::find_if(times.begin(), times.end(),
                                 [&](double t) { return same_time(t, arrival[i]); });
    op.channel = std::min(static_cast<int>(at - times.begin()), std::max(max_channels, 1) - 1);
  }
  // Steps: one per distinct start time.
  std::vector<double> starts;
  for (const ChunkOp& op : a.ops) starts.push_back(op.start_us);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end(), same_time), starts.end());
  for (ChunkOp& op : a.ops) {
    const auto at = std::find_if(starts.begin(), starts.end(),
                                 [&](double t) { return same_time(t, op.start_us); });
    op.step = static_cast<int>(at - starts.begin());
  }
  a.rounds_per_step.clear();  // SCCL rounds describe the old steps
  sort_ops(a);
  return a;
}

}  // namespace ccsynth::compiler
