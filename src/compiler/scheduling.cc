#include "compiler/scheduling.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "compiler/channel_assignment.h"
#include "compiler/deadlock_check.h"
#include "compiler/dependency_insertion.h"
#include "compiler/limits.h"
#include "compiler/threadblock_assignment.h"

namespace ccsynth::compiler {

namespace {

// Decisions that remove bounded-FIFO deadlocks: receives not to fuse, connections not to pair.
struct DeadlockFixes {
  std::set<int> no_fuse;
  std::set<Unpaired> unpaired;
  int rounds = 0;
};

// Un-fuses the fused steps stuck in the deadlock (after a few rounds, every fused step of a
// stuck threadblock); failing that, gives stuck receive connections their own threadblock.
// Returns the ranks whose decisions changed (empty: nothing left to fix).
std::vector<int> fix_deadlock(const Lowered& l, const Program& p, const StepOrigins& origins,
                              const std::vector<BlockedStep>& blocked, DeadlockFixes& fixes) {
  constexpr int kPreciseRounds = 8;
  std::vector<int> changed;
  const bool whole_tb = ++fixes.rounds > kPreciseRounds;
  for (const BlockedStep& b : blocked) {
    const auto& steps = origins[b.rank][b.threadblock];
    for (size_t s = whole_tb ? 0 : b.step; s < (whole_tb ? steps.size() : b.step + 1); ++s) {
      const int i = steps[s];
      if (i >= 0 && l.instructions[i].fused_send >= 0 && fixes.no_fuse.insert(i).second) {
        changed.push_back(b.rank);
      }
    }
  }
  if (!changed.empty()) return changed;
  for (const BlockedStep& b : blocked) {
    const Threadblock& tb = p.gpus[b.rank].threadblocks[b.threadblock];
    if (tb.send_peer >= 0 && tb.recv_peer >= 0 &&
        fixes.unpaired.insert({b.rank, tb.recv_peer, tb.channel}).second) {
      changed.push_back(b.rank);
    }
  }
  return changed;
}

// Last resort against a deadlock: stuck receives that wait for another threadblock (e.g. for
// the send that reads their in-place slot) write fresh scratch instead. Returns whether any
// receive was added to `relocations`.
bool relocate_receives(const Lowered& l, const Program& p, const StepOrigins& origins,
                       const std::vector<BlockedStep>& blocked, Relocations& relocations) {
  bool changed = false;
  for (const BlockedStep& b : blocked) {
    const Threadblock& tb = p.gpus[b.rank].threadblocks[b.threadblock];
    size_t s = b.step;
    while (s < tb.steps.size() && tb.steps[s].type == StepType::kNop) ++s;  // nops wait for it
    if (s == tb.steps.size() || tb.steps[s].dep_tb < 0 || !receives(tb.steps[s].type)) continue;
    const Instruction& in = l.instructions[origins[b.rank][b.threadblock][s]];
    changed |= relocations.insert({in.rank, in.key.op}).second;
  }
  return changed;
}

// What channel assignment changes in a transfer, as it was for one that had a hint (the others
// had none: -1 everywhere; TACOS' and NCCL's rings have none, so this is short).
struct ChannelHints {
  int transfer = 0;
  int channel = -1;
  int send_tb = -1;
  int recv_tb = -1;
};

// One capacity's scheduling state: the lowering, channeled, fused and assigned in place with the
// current fixes, and its program, rescheduled rank by rank as the deadlock fixes change ranks.
// The lowering is given back as it came when the schedule ends, also by an exception (a copy of
// it was the largest thing a compilation held at thousands of ranks): the transfers' channel
// hints are kept aside, and what fusion and threadblock assignment changed is undone from what
// they leave behind (restore_rank).
class CapacitySchedule {
 public:
  CapacitySchedule(Lowered& lowered, const SchedulingIndex& index, int capacity,
                   const CompileOptions& o, Rescheduling rescheduling)
      : o_(o),
        rescheduling_(rescheduling),
        index_(index),
        current_(lowered),
        hints_(channel_hints(lowered)),
        threadblocks_before_(std::move(lowered.threadblocks)) {
    const int ranks = current_.collective->num_ranks;
    current_.threadblocks.assign(ranks, {});
    try {
      assign_channels(current_, capacity, channels_per_instance(o));
      program_ = empty_program(current_);
      program_.gpus.resize(ranks);
      origins_.resize(ranks);
      local_.assign(current_.instructions.size(), -1);
      for (int r = 0; r < ranks; ++r) schedule_rank(r, false);
    } catch (...) {
      give_back();
      throw;
    }
  }

  ~CapacitySchedule() { give_back(); }
  CapacitySchedule(const CapacitySchedule&) = delete;
  CapacitySchedule& operator=(const CapacitySchedule&) = delete;

  // Runs the program against the FIFOs and fixes it until it runs through.
  std::optional<Program> run(Relocations& relocations) {
    for (;;) {
      set_totals(program_);
      const auto blocked = find_fifo_deadlock(program_, o_.fifo_slots, o_.instances > 1);
      std::vector<int> changed;
      if (blocked.empty()) {
        // A threadblock of one connection over the step limit stays so: the rounds below only
        // split paired ones (and add dependency nops), so this capacity has failed.
        if (has_long_single_connection_threadblock())
          return replicate_instances(std::move(program_), o_.instances);
        changed = unpair_long_threadblocks();
        if (changed.empty()) return replicate_instances(std::move(program_), o_.instances);
        reschedule(std::move(changed));
        continue;
      }
      changed = fix_deadlock(current_, program_, origins_, blocked, fixes_);
      if (changed.empty()) {
        if (relocate_receives(current_, program_, origins_, blocked, relocations)) {
          return std::nullopt;
        }
        const BlockedStep& b = blocked.front();
        throw UserError("", "program",
                        "deadlocks with " + std::to_string(o_.fifo_slots) +
                            " FIFO slots per connection (rank " + std::to_string(b.rank) +
                            " threadblock " + std::to_string(b.threadblock) + " step " +
                            std::to_string(b.step) + " is stuck)");
      }
      reschedule(std::move(changed));
    }
  }

 private:
  // Schedules the `changed` ranks again (every rank with Rescheduling::kEveryRank).
  void reschedule(std::vector<int> changed) {
    if (rescheduling_ == Rescheduling::kEveryRank) {
      changed.resize(current_.collective->num_ranks);
      std::iota(changed.begin(), changed.end(), 0);
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (const int r : changed) schedule_rank(r, true);
  }

  // Whether a threadblock with exactly one connection has more steps than the limit.
  bool has_long_single_connection_threadblock() const {
    for (const GpuProgram& gpu : program_.gpus) {
      for (const Threadblock& tb : gpu.threadblocks) {
        const bool single = (tb.send_peer >= 0) != (tb.recv_peer >= 0);
        if (single && static_cast<int>(tb.steps.size()) > o_.max_steps_per_threadblock) return true;
      }
    }
    return false;
  }

  // A threadblock over the step limit that runs a receive and a send connection (paired for
  // their fusion candidates) is split into one threadblock per connection, as long as the
  // rank has threadblocks to spare: each connection alone holds at most `capacity` transfers
  // per channel, so this fits where a smaller capacity would only have made more channels
  // (and, at thousands of ranks, was the difference between fitting the executor's 32
  // channels x 64 steps and not: issue 16). Returns the ranks changed.
  std::vector<int> unpair_long_threadblocks() {
    std::vector<int> changed;
    const int spare_limit = o_.max_threadblocks_per_rank / o_.instances;
    for (const GpuProgram& gpu : program_.gpus) {
      int spare = spare_limit - static_cast<int>(gpu.threadblocks.size());
      for (const Threadblock& tb : gpu.threadblocks) {
        if (spare <= 0) break;
        const bool paired = tb.send_peer >= 0 && tb.recv_peer >= 0;
        if (!paired || static_cast<int>(tb.steps.size()) <= o_.max_steps_per_threadblock) continue;
        if (fixes_.unpaired.insert({gpu.rank, tb.recv_peer, tb.channel}).second) {
          changed.push_back(gpu.rank);
          --spare;
        }
      }
    }
    return changed;
  }

  // Pairing, fusion, threadblocks and dependencies of one rank, with the current fixes; `again`
  // when the rank was scheduled before (its instructions are first restored).
  void schedule_rank(int r, bool again) {
    if (again) restore_rank(r);
    static const std::vector<FusionCandidate> kNone;
    const std::vector<FusionCandidate>& candidates = o_.fuse ? index_.candidates[r] : kNone;
    const RankIndex& ranks = index_.ranks;
    const std::vector<PlannedThreadblock> planned =
        pair_connections(current_, r, ranks, candidates,
                         o_.max_threadblocks_per_rank / o_.instances, fixes_.unpaired);
    if (o_.fuse) {
      fuse_instructions(current_, r, candidates, ranks.transfers[r], planned, fixes_.no_fuse);
    }
    std::vector<int> order;
    order.reserve(ranks.instructions[r].size());
    for (const int i : ranks.instructions[r]) {
      if (!current_.instructions[i].removed) order.push_back(i);
    }
    assign_threadblocks(current_, r, order, planned);
    origins_[r].clear();
    program_.gpus[r] =
        insert_dependencies(current_, r, order, origins_[r], local_, o_.max_steps_per_threadblock);
  }

  // Undoes what fusion and threadblock assignment did to rank r. A lowering assigns no
  // threadblocks; a fused receive (fuse_instructions) was a receive of its kind, and its send,
  // on the same rank, was not removed and sent the transfer the receive took over.
  void restore_rank(int r) {
    for (const int i : index_.ranks.instructions[r]) {
      Instruction& in = current_.instructions[i];
      in.threadblock = -1;
      if (in.fused_send < 0) continue;
      current_.instructions[in.fused_send].removed = false;
      current_.transfers[in.send_transfer].sender = in.fused_send;
      in.type = in.type == StepType::kRecvCopySend ? StepType::kRecv : StepType::kRecvReduceCopy;
      in.send_transfer = -1;
      in.fused_send = -1;
    }
  }

  static std::vector<ChannelHints> channel_hints(const Lowered& l) {
    std::vector<ChannelHints> out;
    for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
      const Transfer& tr = l.transfers[t];
      if (tr.channel >= 0 || tr.send_tb >= 0 || tr.recv_tb >= 0)
        out.push_back({t, tr.channel, tr.send_tb, tr.recv_tb});
    }
    return out;
  }

  // Gives the lowering back as it came.
  void give_back() noexcept {
    for (int r = 0; r < current_.collective->num_ranks; ++r) restore_rank(r);
    for (Transfer& transfer : current_.transfers) {
      transfer.channel = transfer.send_tb = transfer.recv_tb = -1;
    }
    for (const ChannelHints& hints : hints_) {
      Transfer& transfer = current_.transfers[hints.transfer];
      transfer.channel = hints.channel;
      transfer.send_tb = hints.send_tb;
      transfer.recv_tb = hints.recv_tb;
    }
    current_.threadblocks = std::move(threadblocks_before_);
  }

  const CompileOptions& o_;
  Rescheduling rescheduling_;
  const SchedulingIndex& index_;     // of the lowering as it came
  Lowered& current_;                 // the lowering, channeled, fused and assigned with the fixes
  std::vector<ChannelHints> hints_;  // of the hinted transfers, before channel assignment
  std::vector<std::vector<PlannedThreadblock>> threadblocks_before_;
  Program program_;  // of current_, without instances
  StepOrigins origins_;
  DeadlockFixes fixes_;
  std::vector<int> local_;  // insert_dependencies' scratch
};

}  // namespace

SchedulingIndex index_for_scheduling(const Lowered& lowered, bool fuse) {
  SchedulingIndex index;
  index.ranks = index_ranks(lowered);
  if (fuse) add_fusion_candidates(index, lowered);
  return index;
}

void add_fusion_candidates(SchedulingIndex& index, const Lowered& lowered) {
  index.candidates = find_fusion_candidates(lowered, index.ranks.instructions);
}

std::optional<Program> schedule(Lowered& lowered, const SchedulingIndex& index, int capacity,
                                const CompileOptions& options, Relocations& relocations,
                                Rescheduling rescheduling) {
  return CapacitySchedule(lowered, index, capacity, options, rescheduling).run(relocations);
}

}  // namespace ccsynth::compiler
