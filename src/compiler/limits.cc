#include "compiler/limits.h"

#include "compiler/instruction_generation.h"
#include "compiler/sort_key.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccsynth::compiler {

namespace {

std::string steps_violation(const Program& p, const CompileOptions& o) {
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) {
      if (static_cast<int>(tb.steps.size()) > o.max_steps_per_threadblock) {
        return "rank " + std::to_string(g.rank) + " threadblock " + std::to_string(tb.id) +
               " has " + std::to_string(tb.steps.size()) + " steps, more than the limit of " +
               std::to_string(o.max_steps_per_threadblock);
      }
    }
  }
  return "";
}

std::string other_violation(const Program& p, const CompileOptions& o) {
  if (p.num_channels > o.max_channels) {
    return "needs " + std::to_string(p.num_channels) + " channels, more than the limit of " +
           std::to_string(o.max_channels);
  }
  for (const GpuProgram& g : p.gpus) {
    if (static_cast<int>(g.threadblocks.size()) > o.max_threadblocks_per_rank) {
      return "rank " + std::to_string(g.rank) + " needs " + std::to_string(g.threadblocks.size()) +
             " threadblocks, more than the limit of " + std::to_string(o.max_threadblocks_per_rank);
    }
    for (const Threadblock& tb : g.threadblocks) {
      for (const Step& s : tb.steps) {
        if (s.count > o.max_count) {
          return "a step of rank " + std::to_string(g.rank) + " moves " + std::to_string(s.count) +
                 " chunks, more than the limit of " + std::to_string(o.max_count);
        }
      }
    }
  }
  return "";
}

}  // namespace

int channels_per_instance(const CompileOptions& o) {
  return std::max(o.max_channels / std::max(o.instances, 1), 1);
}

std::string limit_violation(const Program& p, const CompileOptions& o) {
  std::string other = other_violation(p, o);
  return other.empty() ? steps_violation(p, o) : other;
}

bool only_steps_exceeded(const Program& p, const CompileOptions& o) {
  return other_violation(p, o).empty() && !steps_violation(p, o).empty();
}

int longest_threadblock(const Program& p) {
  size_t longest = 0;
  for (const GpuProgram& g : p.gpus) {
    for (const Threadblock& tb : g.threadblocks) longest = std::max(longest, tb.steps.size());
  }
  return static_cast<int>(longest);
}

namespace {

// Steps one (src, dst) pair needs in one instance.
struct PairSteps {
  uint64_t pair;  // pack(src, dst)
  int64_t steps = 0;
};

// Steps each (src, dst) pair of `l` needs in one instance, in (src, dst) order: one per
// transfer, or with `per_chunk` one per chunk (instances > 1 expand cnt). A sorted vector
// instead of a std::map (3.5% of the rfs:8x8x8 allreduce compilation's instructions, callgrind).
std::vector<PairSteps> pair_steps(const Lowered& l, bool per_chunk) {
  std::vector<PairSteps> each;  // one per transfer
  each.reserve(l.transfers.size());
  for (const Transfer& tr : l.transfers) {
    if (!tr.removed) each.push_back({pack(tr.src_rank, tr.dst_rank), per_chunk ? tr.count : 1});
  }
  std::sort(each.begin(), each.end(),
            [](const PairSteps& a, const PairSteps& b) { return a.pair < b.pair; });
  std::vector<PairSteps> out;
  for (const PairSteps& p : each) {
    if (out.empty() || out.back().pair != p.pair) out.push_back({p.pair, 0});
    out.back().steps += p.steps;
  }
  return out;
}

}  // namespace

int64_t busiest_pair_transfers(const Lowered& l) {
  int64_t most = 0;
  for (const PairSteps& p : pair_steps(l, false)) most = std::max(most, p.steps);
  return most;
}

int64_t shortening_capacity(const Program& program, const Lowered& lowered, int capacity,
                            int max_steps) {
  const std::vector<PairSteps> transfers = pair_steps(lowered, false);
  auto share_per_channel = [&](int src, int dst) -> int64_t {
    const uint64_t pair = pack(src, dst);
    const auto it = std::lower_bound(transfers.begin(), transfers.end(), pair,
                                     [](const PairSteps& p, uint64_t key) { return p.pair < key; });
    if (it == transfers.end() || it->pair != pair || capacity < 1) return 0;
    const int64_t channels = (it->steps + capacity - 1) / capacity;
    return (it->steps + channels - 1) / channels;
  };
  int64_t below = capacity;
  for (const GpuProgram& gpu : program.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) {
      if (static_cast<int>(tb.steps.size()) <= max_steps) continue;
      int64_t share = 0;
      if (tb.send_peer >= 0) share = std::max(share, share_per_channel(gpu.rank, tb.send_peer));
      if (tb.recv_peer >= 0) share = std::max(share, share_per_channel(tb.recv_peer, gpu.rank));
      if (share > 0) below = std::min(below, share);
    }
  }
  return below - 1;
}

namespace {

// The sentence of a pair of ranks over what the channels' steps hold; `at_least` when
// `transfers` is a lower bound (counted from the algorithm's steps).
std::string pair_over_capacity(int src, int dst, int64_t transfers, bool at_least,
                               const CompileOptions& o) {
  const int channels = channels_per_instance(o);
  const int64_t needed = (transfers + channels - 1) / channels;
  std::string out = "rank " + std::to_string(src) + " sends " + (at_least ? "at least " : "") +
                    std::to_string(transfers) + " transfers to rank " + std::to_string(dst) +
                    (at_least ? " (in as many different steps)" : "") + ", more than " +
                    std::to_string(channels) + " channels x " +
                    std::to_string(o.max_steps_per_threadblock) +
                    " steps per threadblock hold (it needs at least " + std::to_string(needed) +
                    " steps per threadblock); it fits with a higher step limit (the classic "
                    "dialect allows 256 steps per threadblock)";
  if (o.instances > 1) out += ", with fewer instances";
  return out + ", or with fewer, larger transfers (more chunks per send, or fewer chunks per rank)";
}

int64_t channel_steps(const CompileOptions& o) {
  return static_cast<int64_t>(channels_per_instance(o)) * o.max_steps_per_threadblock;
}

}  // namespace

std::string channel_capacity_shortfall(const Lowered& l, const CompileOptions& o) {
  const std::vector<PairSteps> steps = pair_steps(l, o.instances > 1);
  const int64_t capacity = channel_steps(o);
  auto worst = steps.end();
  for (auto it = steps.begin(); it != steps.end(); ++it) {
    if (it->steps > capacity && (worst == steps.end() || it->steps > worst->steps)) worst = it;
  }
  if (worst == steps.end()) return "";
  return pair_over_capacity(unpack_lo(worst->pair >> 32), unpack_lo(worst->pair), worst->steps,
                            false, o);
}

std::string step_limit_shortfall(const Algorithm& algorithm, const CompileOptions& o) {
  const int64_t capacity = channel_steps(o);
  if (static_cast<int64_t>(algorithm.ops.size()) <= capacity) return "";
  struct Sends {
    int last_step = -1;
    int64_t steps = 0;  // different steps
  };
  std::unordered_map<uint64_t, Sends> pairs;  // pack(src, dst)
  for (const int i : ops_by_step(algorithm)) {
    const ChunkOp& op = algorithm.ops[i];
    Sends& sends = pairs[pack(op.src, op.dst)];
    if (sends.last_step != op.step) ++sends.steps;
    sends.last_step = op.step;
  }
  auto worst = pairs.end();
  for (auto it = pairs.begin(); it != pairs.end(); ++it) {
    const bool more = worst == pairs.end() || it->second.steps > worst->second.steps ||
                      (it->second.steps == worst->second.steps && it->first < worst->first);
    if (it->second.steps > capacity && more) worst = it;
  }
  if (worst == pairs.end()) return "";
  return pair_over_capacity(unpack_lo(worst->first >> 32), unpack_lo(worst->first),
                            worst->second.steps, true, o);
}

}  // namespace ccsynth::compiler
