#include "ccsynth/compiler/schedule_order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ccsynth::compiler {

namespace {

// The channel the hints of a connection's later data arrivals are clamped to.
int last_channel(int max_channels) { return std::max(max_channels, 1) - 1; }

bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// Position of the first time in `times` (ascending, no two the same_time) that is the same time
// as `t`, or times.size(): a binary search equal to a linear std::find_if with same_time.
int time_index(const std::vector<double>& times, double t) {
  const auto at = std::lower_bound(times.begin(), times.end(), t, [](double x, double value) {
    return x < value && !same_time(x, value);
  });
  if (at == times.end() || !same_time(*at, t)) return static_cast<int>(times.size());
  return static_cast<int>(at - times.begin());
}

// For every op, the latest start time of the ops of earlier steps that delivered one of its
// chunks to its sender; -1 when the sender held them all from the start.
std::vector<double> data_arrival_starts(const Algorithm& a) {
  std::vector<double> out(a.ops.size(), -1.0);
  // (rank, chunk) -> latest delivering start, -1 for none; one flat table (ranks x chunks).
  const size_t chunks = static_cast<size_t>(std::max(a.collective.num_chunks(), 0));
  std::vector<double> delivered(static_cast<size_t>(std::max(a.collective.num_ranks, 0)) * chunks,
                                -1.0);
  std::map<std::pair<int, int>, double> outside;  // ranks or chunks out of range (bad input)
  auto cell = [&](int rank, int chunk) -> double& {
    if (rank < 0 || rank >= a.collective.num_ranks || chunk < 0 ||
        chunk >= a.collective.num_chunks())
      return outside.try_emplace({rank, chunk}, -1.0).first->second;
    return delivered[static_cast<size_t>(rank) * chunks + chunk];
  };
  size_t begin = 0;
  while (begin < a.ops.size()) {  // ops are sorted by step: one step at a time
    size_t end = begin;
    while (end < a.ops.size() && a.ops[end].step == a.ops[begin].step) ++end;
    for (size_t i = begin; i < end; ++i) {
      const ChunkOp& op = a.ops[i];
      for (int c = op.chunk; c < op.chunk + op.count; ++c)
        out[i] = std::max(out[i], cell(op.src, c));
    }
    for (size_t i = begin; i < end; ++i) {
      const ChunkOp& op = a.ops[i];
      for (int c = op.chunk; c < op.chunk + op.count; ++c) {
        double& d = cell(op.dst, c);
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

namespace {

// Per op of an algorithm (index-aligned with its ops), its channel hint and step in start-time
// order: what order_by_start_times sets, without building the ordered algorithm.
struct StartTimeOrder {
  std::vector<int> channel;
  std::vector<int> step;
};

// The start-time order of `algorithm`, or nullopt when it has none (!has_schedule_order).
std::optional<StartTimeOrder> start_time_order(const Algorithm& algorithm, int max_channels) {
  const std::vector<double> arrival = data_arrival_starts(algorithm);
  if (!starts_after_arrivals(algorithm, arrival)) return std::nullopt;
  const std::vector<ChunkOp>& ops = algorithm.ops;
  StartTimeOrder out;
  // Channel hints: per connection, the distinct data arrival times in increasing order.
  std::map<std::pair<int, int>, std::vector<double>> arrivals;
  for (size_t i = 0; i < ops.size(); ++i) arrivals[{ops[i].src, ops[i].dst}].push_back(arrival[i]);
  for (auto& [connection, times] : arrivals) {
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end(), same_time), times.end());
  }
  out.channel.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const ChunkOp& op = ops[i];
    // A threadblock hint fixes the threadblock, and with it the channel.
    if (op.channel >= 0 || op.send_tb >= 0 || op.recv_tb >= 0) {
      out.channel[i] = op.channel;
      continue;
    }
    const int at = time_index(arrivals.at({op.src, op.dst}), arrival[i]);
    out.channel[i] = std::min(at, last_channel(max_channels));
  }
  // Steps: one per distinct start time.
  std::vector<double> starts;
  starts.reserve(ops.size());
  for (const ChunkOp& op : ops) starts.push_back(op.start_us);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end(), same_time), starts.end());
  out.step.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) out.step[i] = time_index(starts, ops[i].start_us);
  return out;
}

// start_time_order_overflow over ops given as (src, dst, step) of those on the last channel.
std::string overflow_on_last_channel(std::vector<std::tuple<int, int, int>> on_last, int last,
                                     int max_steps) {
  std::sort(on_last.begin(), on_last.end());
  on_last.erase(std::unique(on_last.begin(), on_last.end()), on_last.end());
  for (size_t begin = 0; begin < on_last.size();) {
    size_t end = begin;
    const int src = std::get<0>(on_last[begin]);
    const int dst = std::get<1>(on_last[begin]);
    while (end < on_last.size() && std::get<0>(on_last[end]) == src &&
           std::get<1>(on_last[end]) == dst)
      ++end;
    if (static_cast<int64_t>(end - begin) > max_steps) {
      return "in start-time order rank " + std::to_string(src) + " sends to rank " +
             std::to_string(dst) + " at " + std::to_string(end - begin) +
             " different steps on its last channel (" + std::to_string(last) +
             ": every data arrival after the first " + std::to_string(last) +
             " shares it), more than the " + std::to_string(max_steps) +
             " steps a threadblock may have; the step order (no --schedule-order) may fit";
    }
    begin = end;
  }
  return "";
}

// The algorithm with the ops' channels and steps of `order`, in step order.
Algorithm apply(const Algorithm& algorithm, const StartTimeOrder& order) {
  Algorithm a = algorithm;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    a.ops[i].channel = order.channel[i];
    a.ops[i].step = order.step[i];
  }
  a.rounds_per_step.clear();  // SCCL rounds describe the old steps
  sort_ops(a);
  return a;
}

}  // namespace

Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels) {
  const std::optional<StartTimeOrder> order = start_time_order(algorithm, max_channels);
  return order ? apply(algorithm, *order) : algorithm;
}

Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels, int max_steps,
                               std::string* overflow) {
  const std::optional<StartTimeOrder> order = start_time_order(algorithm, max_channels);
  const int last = last_channel(max_channels);
  std::vector<std::tuple<int, int, int>> on_last;
  for (size_t i = 0; i < algorithm.ops.size(); ++i) {
    const ChunkOp& op = algorithm.ops[i];
    const int channel = order ? order->channel[i] : op.channel;
    if (channel == last) on_last.emplace_back(op.src, op.dst, order ? order->step[i] : op.step);
  }
  *overflow = overflow_on_last_channel(std::move(on_last), last, max_steps);
  if (!overflow->empty()) return {};
  return order ? apply(algorithm, *order) : algorithm;
}

std::string start_time_order_overflow(const Algorithm& ordered, int max_channels, int max_steps) {
  const int last = last_channel(max_channels);
  std::vector<std::tuple<int, int, int>> on_last;  // (src, dst, step) of the ops hinted there
  for (const ChunkOp& op : ordered.ops) {
    if (op.channel == last) on_last.emplace_back(op.src, op.dst, op.step);
  }
  return overflow_on_last_channel(std::move(on_last), last, max_steps);
}

}  // namespace ccsynth::compiler
