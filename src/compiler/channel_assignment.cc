#include "compiler/channel_assignment.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

void assign_channels(Lowered& l, int capacity, int max_channels) {
  std::vector<int> order;
  for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
    if (!l.transfers[t].removed) order.push_back(t);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return l.instructions[l.transfers[a].sender].key < l.instructions[l.transfers[b].sender].key;
  });
  std::map<std::tuple<int, int, int>, int> used;  // (src, dst, channel) -> transfers
  for (int t : order) {
    Transfer& tr = l.transfers[t];
    int channel = std::max(tr.channel, 0);
    while (used[{tr.src_rank, tr.dst_rank, channel}] >= capacity) ++channel;
    if (channel >= max_channels) {
      throw UserError("", "channels",
                      "transfers " + std::to_string(tr.src_rank) + " -> " +
                          std::to_string(tr.dst_rank) + " need more than " +
                          std::to_string(max_channels) + " channels of at most " +
                          std::to_string(capacity) + " steps each");
    }
    ++used[{tr.src_rank, tr.dst_rank, channel}];
    tr.channel = channel;
  }
}

}  // namespace ccsynth::compiler
