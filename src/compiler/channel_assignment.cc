#include "compiler/channel_assignment.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {

// (src, dst) as one hashable number, and room after it for a channel (pair * kChannelSpan +
// channel; channels past the span are refused before they are counted).
int64_t pair_key(int src, int dst) { return static_cast<int64_t>(src) << 32 | dst; }
constexpr int64_t kChannelSpan = 64;

// A hinted threadblock: (rank, threadblock hint).
using HintedTb = std::pair<int, int>;

// The hinted threadblocks a transfer runs in: its send on src and its receive on dst.
std::vector<std::pair<HintedTb, std::string>> hinted_tbs(const Transfer& tr) {
  std::vector<std::pair<HintedTb, std::string>> out;
  if (tr.send_tb >= 0) out.push_back({{tr.src_rank, tr.send_tb}, "send_tb"});
  if (tr.recv_tb >= 0) out.push_back({{tr.dst_rank, tr.recv_tb}, "recv_tb"});
  return out;
}

// Records the channel of every hinted threadblock (the transfer that fixes it) and throws
// when two transfers of one threadblock have different channels.
std::map<HintedTb, int> hinted_channels(const Lowered& l) {
  std::map<HintedTb, int> fixed_by;
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    const Transfer& tr = l.transfers[t];
    if (tr.removed || tr.channel < 0) continue;
    for (const auto& [tb, field] : hinted_tbs(tr)) {
      const auto [it, fresh] = fixed_by.emplace(tb, t);
      const Transfer& other = l.transfers[it->second];
      if (fresh || other.channel == tr.channel) continue;
      throw UserError("", "ops[" + std::to_string(tr.op) + "]." + field,
                      "threadblock " + std::to_string(tb.second) + " of rank " +
                          std::to_string(tb.first) + " would run on channel " +
                          std::to_string(tr.channel) + " and, for ops[" + std::to_string(other.op) +
                          "], on channel " + std::to_string(other.channel) +
                          "; a threadblock has one channel");
    }
  }
  return fixed_by;
}

}  // namespace

void share_hinted_channels(Lowered& l) {
  // A transfer hinted on both ends carries a channel from one threadblock to another: repeat
  // until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    const std::map<HintedTb, int> fixed_by = hinted_channels(l);
    for (Transfer& tr : l.transfers) {
      if (tr.removed || tr.channel >= 0) continue;
      for (const auto& [tb, field] : hinted_tbs(tr)) {
        auto it = fixed_by.find(tb);
        if (it == fixed_by.end()) continue;
        tr.channel = l.transfers[it->second].channel;
        changed = true;
        break;
      }
    }
  }
}

void assign_channels(Lowered& l, int capacity, int max_channels) {
  // Transfers in the order of their sends: sorted by (key, index), the keys held next to the
  // indices (a stable sort by key without an indirect lookup per comparison).
  std::vector<std::pair<OrderKey, int>> keyed;
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    if (!l.transfers[t].removed) keyed.emplace_back(l.instructions[l.transfers[t].sender].key, t);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> order;
  order.reserve(keyed.size());
  for (const auto& [key, t] : keyed) order.push_back(t);
  // A connection of n > capacity transfers spreads them evenly over the ceil(n / capacity)
  // channels it needs (at most `capacity` each) instead of filling channels to `capacity` in
  // turn: its threadblocks, which also hold the paired connection, stay equally short.
  struct PairShare {
    int transfers = 0;
    int per_channel = 0;  // the pair's capacity per channel
    bool spills = false;  // it needs more than one channel
  };
  std::unordered_map<int64_t, PairShare> per_pair;  // (src, dst) -> its share
  for (int t : order) {
    ++per_pair[pair_key(l.transfers[t].src_rank, l.transfers[t].dst_rank)].transfers;
  }
  for (auto& [pair, share] : per_pair) {
    const int channels = (share.transfers + capacity - 1) / capacity;
    share.per_channel = (share.transfers + channels - 1) / channels;
    share.spills = channels > 1;
  }
  std::unordered_map<int64_t, int> used;  // (src, dst, channel) -> transfers
  // A timed lowering's spilling pairs: (src, dst, channel) -> its latest transfer so far, for
  // Lowered::spill_after.
  std::unordered_map<int64_t, int> last;
  l.spill_after.clear();
  for (int t : order) {
    Transfer& tr = l.transfers[t];
    const int64_t pair = pair_key(tr.src_rank, tr.dst_rank);
    const PairShare& share = per_pair.at(pair);
    int channel = std::max(tr.channel, 0);
    while (used[pair * kChannelSpan + channel] >= share.per_channel) ++channel;
    if (channel >= max_channels) {
      throw UserError("", "channels",
                      "transfers " + std::to_string(tr.src_rank) + " -> " +
                          std::to_string(tr.dst_rank) + " need more than " +
                          std::to_string(max_channels) + " channels of at most " +
                          std::to_string(capacity) + " steps each");
    }
    const bool spilled = channel != std::max(tr.channel, 0);
    if (spilled) tr.send_tb = tr.recv_tb = -1;
    if (spilled && l.timed && used[pair * kChannelSpan + channel] == 0) {
      const auto before = last.find(pair * kChannelSpan + channel - 1);
      if (before != last.end()) l.spill_after.emplace(t, before->second);
    }
    ++used[pair * kChannelSpan + channel];
    if (l.timed && share.spills) last[pair * kChannelSpan + channel] = t;
    tr.channel = channel;
  }
}

}  // namespace ccsynth::compiler
