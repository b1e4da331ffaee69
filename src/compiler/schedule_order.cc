#include "ccsynth/compiler/schedule_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/sort_key.h"

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

// The ops of every (src, dst) connection: the connections in ascending (src, dst) order and,
// for each, its ops' indices in op order. Per-connection passes then read one short list each
// instead of looking the pair up in a tree per op (16.8 M lookups at 4096 ranks).
struct ConnectionOps {
  std::vector<std::pair<int, int>> connections;  // (src, dst), ascending
  std::vector<size_t> begin;  // where each connection's ops start in `ops`; then the end
  std::vector<int> ops;       // op indices grouped by connection, each group in op order

  size_t size() const { return connections.size(); }
};

ConnectionOps group_by_connection(const std::vector<ChunkOp>& ops) {
  std::vector<uint64_t> pairs;  // pack(src, dst), ascending
  const std::vector<int> id = dense_ranks(
      ops.size(), [&](size_t i) { return pack(ops[i].src, ops[i].dst); }, &pairs);
  ConnectionOps out;
  out.connections.reserve(pairs.size());
  for (const uint64_t pair : pairs) out.connections.emplace_back(unpack_hi(pair), unpack_lo(pair));
  // Counted into their groups, each in op order.
  out.begin.assign(pairs.size() + 1, 0);
  for (const int i : id) ++out.begin[i + 1];
  for (size_t c = 0; c < pairs.size(); ++c) out.begin[c + 1] += out.begin[c];
  std::vector<size_t> next(out.begin.begin(), out.begin.end() - 1);
  out.ops.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) out.ops[next[id[i]]++] = static_cast<int>(i);
  return out;
}

// Per op, the position of its start time among the distinct start times (its step in
// start-time order). The times are gathered without the runs of equal ones that ops in step
// order have, and a run of ops with one start time is looked up once: the same positions as
// sorting every op's time.
std::vector<int> start_time_steps(const std::vector<ChunkOp>& ops) {
  std::vector<double> starts;
  for (const ChunkOp& op : ops) {
    if (starts.empty() || op.start_us != starts.back()) starts.push_back(op.start_us);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end(), same_time), starts.end());
  std::vector<int> out(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    out[i] = i > 0 && ops[i].start_us == ops[i - 1].start_us ? out[i - 1]
                                                             : time_index(starts, ops[i].start_us);
  }
  return out;
}

// The start-time order of `algorithm` (its ops grouped by `grouped`), or nullopt when it has
// none (!has_schedule_order).
std::optional<StartTimeOrder> start_time_order(const Algorithm& algorithm,
                                               const ConnectionOps& grouped, int max_channels) {
  const std::vector<double> arrival = data_arrival_starts(algorithm);
  if (!starts_after_arrivals(algorithm, arrival)) return std::nullopt;
  const std::vector<ChunkOp>& ops = algorithm.ops;
  StartTimeOrder out;
  // Channel hints: per connection, the distinct data arrival times in increasing order. A
  // threadblock hint fixes the threadblock, and with it the channel (TACOS and TACCL give none:
  // the ops, far apart in a connection's list, are then not read again).
  auto hinted = [](const ChunkOp& op) {
    return op.channel >= 0 || op.send_tb >= 0 || op.recv_tb >= 0;
  };
  const bool any_hinted = std::any_of(ops.begin(), ops.end(), hinted);
  out.channel.resize(ops.size());
  std::vector<double> arrivals;  // of one connection's ops, in their order
  std::vector<double> times;
  for (size_t c = 0; c < grouped.size(); ++c) {
    arrivals.clear();
    for (size_t k = grouped.begin[c]; k < grouped.begin[c + 1]; ++k)
      arrivals.push_back(arrival[grouped.ops[k]]);
    times = arrivals;
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end(), same_time), times.end());
    for (size_t k = grouped.begin[c]; k < grouped.begin[c + 1]; ++k) {
      const int i = grouped.ops[k];
      out.channel[i] = any_hinted && hinted(ops[i])
                           ? ops[i].channel
                           : std::min(time_index(times, arrivals[k - grouped.begin[c]]),
                                      last_channel(max_channels));
    }
  }
  out.step = start_time_steps(ops);  // one step per distinct start time
  return out;
}

// start_time_order_overflow over the ops of `grouped` with the channels and steps of `order`
// (their own without one): the first connection in (src, dst) order with more distinct steps
// on the last channel than a threadblock may have, or "".
std::string overflow_on_last_channel(const std::vector<ChunkOp>& ops, const ConnectionOps& grouped,
                                     const StartTimeOrder* order, int last, int max_steps) {
  std::vector<int> steps;
  for (size_t c = 0; c < grouped.size(); ++c) {
    steps.clear();
    for (size_t k = grouped.begin[c]; k < grouped.begin[c + 1]; ++k) {
      const int i = grouped.ops[k];
      const int channel = order ? order->channel[i] : ops[i].channel;
      if (channel == last) steps.push_back(order ? order->step[i] : ops[i].step);
    }
    if (static_cast<int64_t>(steps.size()) <= max_steps) continue;
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    if (static_cast<int64_t>(steps.size()) > max_steps) {
      const auto [src, dst] = grouped.connections[c];
      return "in start-time order rank " + std::to_string(src) + " sends to rank " +
             std::to_string(dst) + " at " + std::to_string(steps.size()) +
             " different steps on its last channel (" + std::to_string(last) +
             ": every data arrival after the first " + std::to_string(last) +
             " shares it), more than the " + std::to_string(max_steps) +
             " steps a threadblock may have; the step order (no --schedule-order) may fit";
    }
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
  const std::optional<StartTimeOrder> order =
      start_time_order(algorithm, group_by_connection(algorithm.ops), max_channels);
  return order ? apply(algorithm, *order) : algorithm;
}

Algorithm order_by_start_times(const Algorithm& algorithm, int max_channels, int max_steps,
                               std::string* overflow) {
  const ConnectionOps grouped = group_by_connection(algorithm.ops);
  const std::optional<StartTimeOrder> order = start_time_order(algorithm, grouped, max_channels);
  *overflow = overflow_on_last_channel(algorithm.ops, grouped, order ? &*order : nullptr,
                                       last_channel(max_channels), max_steps);
  if (!overflow->empty()) return {};
  return order ? apply(algorithm, *order) : algorithm;
}

std::string start_time_order_overflow(const Algorithm& ordered, int max_channels, int max_steps) {
  return overflow_on_last_channel(ordered.ops, group_by_connection(ordered.ops), nullptr,
                                  last_channel(max_channels), max_steps);
}

}  // namespace ccsynth::compiler
