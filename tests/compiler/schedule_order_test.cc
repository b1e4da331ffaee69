// The schedule-order pass: steps by start time, channel hints by data arrival, and programs
// that stay correct.

#include "ccsynth/compiler/schedule_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace ccsynth::compiler {
namespace {

// Allgather on a line 0 - 1 - 2 (one chunk per rank), timed as a schedule would: rank 1 first
// relays chunk 0 to rank 2 (t = 2), then sends its own chunk to rank 2 (t = 3), though both
// are in step order 1 and 0.
Algorithm timed_line_allgather() {
  Algorithm a;
  a.name = "timed-line";
  a.collective = make_collective(CollectiveKind::kAllGather, 3, 1);
  constexpr OpKind kCopy = OpKind::kCopy;
  // {chunk, src, dst, kind, step, start_us}
  a.ops = {{0, 0, 1, kCopy, 0, 0.0}, {1, 1, 0, kCopy, 0, 0.0}, {2, 2, 1, kCopy, 0, 0.0},
           {1, 1, 2, kCopy, 0, 3.0}, {0, 1, 2, kCopy, 1, 2.0}, {2, 1, 0, kCopy, 1, 2.0}};
  sort_ops(a);
  return a;
}

const ChunkOp& find(const Algorithm& a, int chunk, int src, int dst) {
  for (const ChunkOp& op : a.ops) {
    if (op.chunk == chunk && op.src == src && op.dst == dst) return op;
  }
  throw std::logic_error("no such op");
}

TEST(ScheduleOrder, StepsFollowStartTimesAndChannelsFollowDataArrival) {
  const Algorithm a = timed_line_allgather();
  ASSERT_TRUE(verify::verify_algorithm(a).ok());
  ASSERT_TRUE(has_schedule_order(a));
  const Algorithm o = order_by_start_times(a, 32);
  ASSERT_TRUE(verify::verify_algorithm(o).ok());
  // Distinct start times 0, 2, 3 become steps 0, 1, 2.
  EXPECT_EQ(find(o, 0, 0, 1).step, 0);
  EXPECT_EQ(find(o, 0, 1, 2).step, 1);
  EXPECT_EQ(find(o, 1, 1, 2).step, 2);
  // On 1 -> 2 rank 1's own chunk is there from the start (channel 0), chunk 0 arrives later
  // (channel 1); 1 -> 0 likewise.
  EXPECT_EQ(find(o, 1, 1, 2).channel, 0);
  EXPECT_EQ(find(o, 0, 1, 2).channel, 1);
  EXPECT_EQ(find(o, 1, 1, 0).channel, 0);
  EXPECT_EQ(find(o, 2, 1, 0).channel, 1);
  EXPECT_EQ(find(o, 0, 0, 1).channel, 0);
  // At most one channel per connection when the runtime allows only one.
  const Algorithm one_channel = order_by_start_times(a, 1);
  for (const ChunkOp& op : one_channel.ops) EXPECT_EQ(op.channel, 0);
}

TEST(ScheduleOrder, CompiledProgramIsCorrectAndSplitsTheConnection) {
  const Algorithm a = timed_line_allgather();
  CompileOptions options;
  options.schedule_order = true;
  const Program p = compile(a, options);
  const verify::VerifyReport report = verify::verify_program(p);
  EXPECT_TRUE(report.ok()) << report.summary();
  std::set<int> channels_1_to_2;
  for (const Threadblock& tb : p.gpus[1].threadblocks) {
    if (tb.send_peer == 2) channels_1_to_2.insert(tb.channel);
  }
  EXPECT_EQ(channels_1_to_2.size(), 2u);
  // Without the option rank 1 sends to rank 2 on one threadblock.
  std::set<int> plain;
  const Program step_order = compile(a);
  for (const Threadblock& tb : step_order.gpus[1].threadblocks) {
    if (tb.send_peer == 2) plain.insert(tb.channel);
  }
  EXPECT_EQ(plain.size(), 1u);
}

TEST(ScheduleOrder, UntimedOrInconsistentAlgorithmsAreLeftAlone) {
  Algorithm untimed = timed_line_allgather();
  untimed.ops[0].start_us = -1;
  EXPECT_FALSE(has_schedule_order(untimed));
  EXPECT_EQ(order_by_start_times(untimed, 32), untimed);
  // Rank 1 forwards chunk 0 before it arrives: not a schedule.
  Algorithm early = timed_line_allgather();
  for (ChunkOp& op : early.ops) {
    if (op.chunk == 0 && op.src == 0) op.start_us = 2.5;
  }
  EXPECT_FALSE(has_schedule_order(early));
  EXPECT_EQ(order_by_start_times(early, 32), early);
  Algorithm none;
  none.collective = make_collective(CollectiveKind::kAllGather, 2, 1);
  EXPECT_FALSE(has_schedule_order(none));
}

// Allgather on a line 0 - 1 - 2 with `n` chunks per rank, timed: rank 2 sends its chunks to
// rank 1 one at a time (chunk k at t = k) and rank 1 forwards each at once (t = k + 0.5), so
// the connection 1 -> 0 sees n distinct data arrivals after rank 1's own chunks.
Algorithm timed_line_relay(int n) {
  Algorithm a;
  a.name = "timed-relay";
  a.collective = make_collective(CollectiveKind::kAllGather, 3, n);
  constexpr OpKind kCopy = OpKind::kCopy;
  for (int j = 0; j < n; ++j) {
    a.ops.push_back({j, 0, 1, kCopy, 0, 0.0});  // rank 0's chunks
    a.ops.push_back({j, 1, 2, kCopy, 1, 0.5});
    a.ops.push_back({n + j, 1, 0, kCopy, 0, 0.0});  // rank 1's own
    a.ops.push_back({n + j, 1, 2, kCopy, 0, 0.0});
    a.ops.push_back({2 * n + j, 2, 1, kCopy, j, 1.0 * j});  // rank 2's, relayed
    a.ops.push_back({2 * n + j, 1, 0, kCopy, j + 1, j + 0.5});
  }
  sort_ops(a);
  return a;
}

TEST(ScheduleOrder, AConnectionWithMoreLateArrivalsThanItsLastChannelHoldsFailsBeforeLowering) {
  CompileOptions options;
  options.schedule_order = true;
  options.max_channels = 32;
  options.max_steps_per_threadblock = 64;
  // 40 arrivals: channels 1..31 take one each, the last one 10 more; it fits.
  const Algorithm fits = timed_line_relay(40);
  ASSERT_TRUE(verify::verify_algorithm(fits).ok());
  const Algorithm fits_ordered = order_by_start_times(fits, 32);
  EXPECT_EQ(start_time_order_overflow(fits_ordered, 32, 64), "");
  const Program p = compile(fits, options);
  EXPECT_TRUE(verify::verify_program(p).ok());
  // 100 arrivals: 70 different steps on 1 -> 0's channel 31, over 64 steps at any capacity.
  const Algorithm over = timed_line_relay(100);
  ASSERT_TRUE(verify::verify_algorithm(over).ok());
  const std::string reason = start_time_order_overflow(order_by_start_times(over, 32), 32, 64);
  EXPECT_NE(reason.find("rank 1 sends to rank 0 at 70 different steps"), std::string::npos)
      << reason;
  try {
    (void)Lowering(over, options);
    ADD_FAILURE() << "lowered an order that cannot fit";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no --schedule-order"), std::string::npos) << e.what();
  }
  // A higher step limit (the classic dialect's) holds them.
  options.max_steps_per_threadblock = 256;
  EXPECT_TRUE(verify::verify_program(compile(over, options)).ok());
}

// The overload with a step limit finds the same overflow before building the ordered algorithm,
// and builds the same one where it fits, with hinted ops and untimed algorithms alike.
TEST(ScheduleOrder, TheOverflowFoundBeforeOrderingIsTheOneTheOrderedAlgorithmHas) {
  Algorithm hinted = timed_line_relay(100);
  for (ChunkOp& op : hinted.ops)
    if (op.src == 1 && op.dst == 0 && op.step % 3 == 0) op.channel = 31;
  Algorithm untimed = timed_line_relay(100);
  for (ChunkOp& op : untimed.ops) op.start_us = -1.0;
  // Relays in pairs: chunks j and j + 1 (j even) leave rank 1 together at j + 1.5, one start
  // time for two steps, so the start-time order has half the steps on the last channel.
  Algorithm paired = timed_line_relay(100);
  for (ChunkOp& op : paired.ops) {
    const int j = op.chunk - 200;
    if (op.src == 1 && op.dst == 0 && j >= 0 && j % 2 == 0) op.start_us = j + 1.5;
  }
  ASSERT_TRUE(has_schedule_order(paired));
  int overflows = 0, fits = 0;
  for (const Algorithm& a :
       {timed_line_relay(40), timed_line_relay(100), hinted, untimed, paired}) {
    for (const int max_steps : {16, 64, 256}) {
      for (const int channels : {1, 8, 32}) {
        const Algorithm ordered = order_by_start_times(a, channels);
        const std::string expected = start_time_order_overflow(ordered, channels, max_steps);
        std::string overflow = "not set";
        const Algorithm checked = order_by_start_times(a, channels, max_steps, &overflow);
        EXPECT_EQ(overflow, expected) << max_steps << " " << channels;
        EXPECT_EQ(checked, expected.empty() ? ordered : Algorithm{})
            << max_steps << " " << channels;
        ++(expected.empty() ? fits : overflows);
      }
    }
  }
  EXPECT_GT(overflows, 0);
  EXPECT_GT(fits, 0);
}

// A random timed relay: every rank starts with its own chunk, and at every step some ranks
// pass chunks they hold to ranks that lack them, each op starting a random delay after the op
// that brought its chunk started. Delays come from a few values and some starts are nudged by
// less than the order's tolerance, so that start times and data arrivals tie, exactly or
// nearly; with `hints`, some ops carry a channel or threadblock hint.
Algorithm random_timed_relay(int ranks, int steps, unsigned seed, bool hints) {
  constexpr int kChunksPerRank = 3;
  const int chunks = ranks * kChunksPerRank;
  std::mt19937 rng(seed);
  Algorithm a;
  a.name = "random-relay";
  a.collective = make_collective(CollectiveKind::kAllGather, ranks, kChunksPerRank);
  // Start of the op that brought chunk c to rank r (-1: held from the start), or NaN: absent.
  std::vector<std::vector<double>> brought(ranks, std::vector<double>(chunks, std::nan("")));
  for (int c = 0; c < chunks; ++c) brought[c / kChunksPerRank][c] = -1.0;
  const double delays[] = {0.5, 1.0, 1.0, 1.5};
  for (int step = 0; step < steps; ++step) {
    std::vector<std::pair<int, double>> arrivals;  // (rank * chunks + chunk, start)
    for (int src = 0; src < ranks; ++src) {
      for (int chunk = 0; chunk < chunks; ++chunk) {
        if (std::isnan(brought[src][chunk]) || rng() % 2 != 0) continue;
        const int dst = static_cast<int>(rng() % ranks);
        if (!std::isnan(brought[dst][chunk])) continue;
        if (std::any_of(arrivals.begin(), arrivals.end(),
                        [&](const auto& x) { return x.first == dst * chunks + chunk; }))
          continue;
        double start = std::max(brought[src][chunk], 0.0) + delays[rng() % 4];
        if (rng() % 2 == 0) start += 1e-12 * (1 + rng() % 3);  // the same time within tolerance
        ChunkOp op{chunk, src, dst, OpKind::kCopy, step, start};
        if (hints && rng() % 5 == 0) op.channel = static_cast<int>(rng() % 4);
        if (hints && rng() % 7 == 0) op.send_tb = 0;
        a.ops.push_back(op);
        arrivals.emplace_back(dst * chunks + chunk, start);
      }
    }
    for (const auto& [cell, start] : arrivals) brought[cell / chunks][cell % chunks] = start;
  }
  sort_ops(a);
  return a;
}

// The start-time order by its definition, op by op with ordered maps and linear searches: the
// channel of an unhinted op is the position of its data arrival (the latest start of an earlier
// step's op that brought one of its chunks to its sender) among the distinct arrivals of its
// connection, at most the last channel; its step the position of its start among the distinct
// start times. Keyed by (chunk, src, dst).
std::map<std::tuple<int, int, int>, std::pair<int, int>> reference_order(const Algorithm& a,
                                                                         int channels) {
  auto same = [](double x, double y) {
    return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
  };
  auto distinct = [&](std::vector<double> times) {
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end(), same), times.end());
    return times;
  };
  auto position = [&](const std::vector<double>& times, double t) {
    return static_cast<int>(
        std::find_if(times.begin(), times.end(), [&](double x) { return same(x, t); }) -
        times.begin());
  };
  std::vector<double> arrival(a.ops.size(), -1.0);
  std::map<std::pair<int, int>, std::vector<double>> by_connection;
  std::vector<double> starts;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const ChunkOp& op = a.ops[i];
    for (const ChunkOp& earlier : a.ops) {
      if (earlier.step < op.step && earlier.dst == op.src && earlier.chunk < op.chunk + op.count &&
          op.chunk < earlier.chunk + earlier.count)
        arrival[i] = std::max(arrival[i], earlier.start_us);
    }
    by_connection[{op.src, op.dst}].push_back(arrival[i]);
    starts.push_back(op.start_us);
  }
  for (auto& [connection, times] : by_connection) times = distinct(times);
  starts = distinct(starts);
  std::map<std::tuple<int, int, int>, std::pair<int, int>> out;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const ChunkOp& op = a.ops[i];
    const bool hinted = op.channel >= 0 || op.send_tb >= 0 || op.recv_tb >= 0;
    const int channel =
        hinted ? op.channel
               : std::min(position(by_connection[{op.src, op.dst}], arrival[i]), channels - 1);
    out[{op.chunk, op.src, op.dst}] = {channel, position(starts, op.start_us)};
  }
  return out;
}

TEST(ScheduleOrder, RandomTimedRelaysAreOrderedAsTheDefinitionOrdersThem) {
  int compared = 0, overflows = 0;
  for (unsigned seed = 0; seed < 40; ++seed) {
    const Algorithm a = random_timed_relay(3 + seed % 4, 5, seed, seed % 2 == 1);
    ASSERT_TRUE(has_schedule_order(a)) << seed;
    for (const int channels : {1, 3, 32}) {
      const auto expected = reference_order(a, channels);
      const Algorithm ordered = order_by_start_times(a, channels);
      ASSERT_EQ(ordered.ops.size(), a.ops.size());
      for (const ChunkOp& op : ordered.ops) {
        const auto [channel, step] = expected.at({op.chunk, op.src, op.dst});
        EXPECT_EQ(op.channel, channel) << seed << " " << channels;
        EXPECT_EQ(op.step, step) << seed << " " << channels;
        ++compared;
      }
      std::string overflow = "not set";
      const Algorithm checked = order_by_start_times(a, channels, 1, &overflow);
      EXPECT_EQ(overflow, start_time_order_overflow(ordered, channels, 1)) << seed;
      EXPECT_EQ(checked, overflow.empty() ? ordered : Algorithm{}) << seed;
      overflows += !overflow.empty();
    }
  }
  EXPECT_GT(compared, 1000);
  EXPECT_GT(overflows, 0);  // one step a threadblock: some connections are over
}

}  // namespace
}  // namespace ccsynth::compiler
