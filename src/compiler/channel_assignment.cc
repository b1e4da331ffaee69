#include "compiler/channel_assignment.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ccsynth/core/error.h"
#include "compiler/sort_key.h"

namespace ccsynth::compiler {

namespace {

// Dense numbers 0..count()-1 of the (src, dst) pairs of some transfers (a hashed table keyed by
// pair and channel, looked up several times per transfer, was most of channel assignment at
// hundreds of thousands of transfers).
class PairIds {
 public:
  PairIds(const Lowered& l, const std::vector<int>& transfers) : id_(l.transfers.size(), -1) {
    std::vector<uint64_t> pairs;
    const std::vector<int> ids = dense_ranks(
        transfers.size(),
        [&](size_t i) {
          const Transfer& tr = l.transfers[transfers[i]];
          return pack(tr.src_rank, tr.dst_rank);
        },
        &pairs);
    count_ = pairs.size();
    for (size_t i = 0; i < transfers.size(); ++i) id_[transfers[i]] = ids[i];
  }

  size_t count() const { return count_; }
  // The number of transfer `t`'s pair (t one of the transfers given).
  size_t of(int t) const { return static_cast<size_t>(id_[t]); }

 private:
  std::vector<int> id_;  // per transfer of the lowering
  size_t count_ = 0;
};

// A pair's transfers and how they spread over channels.
struct PairShare {
  int transfers = 0;
  int per_channel = 0;  // the pair's capacity per channel
  bool spills = false;  // it needs more than one channel
};

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
  const PairIds pairs(l, order);
  std::vector<PairShare> shares(pairs.count());
  for (int t : order) ++shares[pairs.of(t)].transfers;
  for (PairShare& share : shares) {
    const int channels = (share.transfers + capacity - 1) / capacity;
    share.per_channel = (share.transfers + channels - 1) / channels;
    share.spills = channels > 1;
  }
  // Per (pair, channel), at pair * max_channels + channel: transfers so far, and (a timed
  // lowering's spilling pairs) its latest transfer so far, for Lowered::spill_after.
  std::vector<int> used(pairs.count() * static_cast<size_t>(max_channels), 0);
  std::vector<int> last(l.timed ? used.size() : 0, -1);
  l.spill_after.clear();
  for (int t : order) {
    Transfer& tr = l.transfers[t];
    const size_t pair = pairs.of(t);
    const PairShare& share = shares[pair];
    const size_t row = pair * max_channels;
    int channel = std::max(tr.channel, 0);
    while (channel < max_channels && used[row + channel] >= share.per_channel) ++channel;
    if (channel >= max_channels) {
      throw UserError("", "channels",
                      "transfers " + std::to_string(tr.src_rank) + " -> " +
                          std::to_string(tr.dst_rank) + " need more than " +
                          std::to_string(max_channels) + " channels of at most " +
                          std::to_string(capacity) + " steps each");
    }
    const bool spilled = channel != std::max(tr.channel, 0);
    if (spilled) tr.send_tb = tr.recv_tb = -1;
    if (spilled && l.timed && used[row + channel] == 0 && channel > 0 &&
        last[row + channel - 1] >= 0) {
      l.spill_after.emplace(t, last[row + channel - 1]);
    }
    ++used[row + channel];
    if (l.timed && share.spills) last[row + channel] = t;
    tr.channel = channel;
  }
}

}  // namespace ccsynth::compiler
