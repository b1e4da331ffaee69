#include "compiler/deadlock_check.h"

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccsynth::compiler {

namespace {

// A connection (sender, receiver, channel), or a threadblock (rank, tb, 0) whose semaphore
// steps wait for, as one hashable number.
using Connection = int64_t;
Connection connection(int sender, int receiver, int channel) {
  return (static_cast<int64_t>(sender) << 40) | (static_cast<int64_t>(receiver + 1) << 16) |
         static_cast<int64_t>(channel);
}
using Waiting = std::unordered_map<Connection, std::vector<std::pair<int, int>>>;

struct TbState {
  int step = 0;
  int piece = 0;
  bool queued = false;
};

class FifoRun {
 public:
  FifoRun(const Program& p, int slots, bool per_chunk)
      : p_(p), slots_(slots), per_chunk_(per_chunk) {
    for (const GpuProgram& g : p.gpus) {
      state_.emplace_back(g.threadblocks.size());
      for (size_t t = 0; t < g.threadblocks.size(); ++t) wake(g.rank, static_cast<int>(t));
    }
  }

  std::vector<BlockedStep> run() {
    while (!ready_.empty()) {
      const auto [rank, tb] = ready_.front();
      ready_.pop_front();
      state_[rank][tb].queued = false;
      advance(rank, tb);
    }
    std::vector<BlockedStep> blocked;
    for (const GpuProgram& g : p_.gpus) {
      for (size_t t = 0; t < g.threadblocks.size(); ++t) {
        const TbState& s = state_[g.rank][t];
        const Threadblock& tb = g.threadblocks[t];
        if (s.step >= static_cast<int>(tb.steps.size())) continue;
        const Step& step = tb.steps[s.step];
        const bool on_send = sends(step.type) && queue(out(g.rank, tb)) >= slots_;
        blocked.push_back({g.rank, static_cast<int>(t), s.step, on_send});
      }
    }
    return blocked;
  }

 private:
  Connection out(int rank, const Threadblock& tb) const {
    return connection(rank, tb.send_peer, tb.channel);
  }
  Connection in(int rank, const Threadblock& tb) const {
    return connection(tb.recv_peer, rank, tb.channel);
  }
  int& queue(const Connection& c) { return queues_[c]; }

  void wake(int rank, int tb) {
    TbState& s = state_[rank][tb];
    if (s.queued) return;
    s.queued = true;
    ready_.push_back({rank, tb});
  }
  void wake_all(Waiting& waiting, const Connection& c) {
    const auto it = waiting.find(c);
    if (it == waiting.end()) return;
    for (const auto& [rank, tb] : it->second) wake(rank, tb);
    waiting.erase(it);
  }

  // Runs the threadblock until it blocks or finishes.
  void advance(int rank, int t) {
    const Threadblock& tb = p_.gpus[rank].threadblocks[t];
    TbState& s = state_[rank][t];
    while (s.step < static_cast<int>(tb.steps.size())) {
      const Step& step = tb.steps[s.step];
      if (s.piece == 0 && step.dep_tb >= 0 && state_[rank][step.dep_tb].step <= step.dep_step) {
        dep_waiting_[connection(rank, step.dep_tb, 0)].push_back({rank, t});
        return;
      }
      const bool rx = receives(step.type), tx = sends(step.type);
      if (rx && queue(in(rank, tb)) == 0) {
        recv_waiting_[in(rank, tb)].push_back({rank, t});
        return;
      }
      if (tx && queue(out(rank, tb)) >= slots_) {
        send_waiting_[out(rank, tb)].push_back({rank, t});
        return;
      }
      if (rx) {
        --queue(in(rank, tb));
        wake_all(send_waiting_, in(rank, tb));
      }
      if (tx) {
        ++queue(out(rank, tb));
        wake_all(recv_waiting_, out(rank, tb));
      }
      const int pieces = step.type == StepType::kNop || !per_chunk_ ? 1 : std::max(step.count, 1);
      if (++s.piece < pieces) continue;
      s.piece = 0;
      ++s.step;
      if (step.has_dep) wake_all(dep_waiting_, connection(rank, t, 0));
    }
  }

  const Program& p_;
  int slots_;
  bool per_chunk_;
  std::vector<std::vector<TbState>> state_;
  std::deque<std::pair<int, int>> ready_;
  std::unordered_map<Connection, int> queues_;
  Waiting recv_waiting_, send_waiting_, dep_waiting_;
};

}  // namespace

std::vector<BlockedStep> find_fifo_deadlock(const Program& program, int fifo_slots,
                                            bool pieces_per_chunk) {
  return FifoRun(program, fifo_slots, pieces_per_chunk).run();
}

}  // namespace ccsynth::compiler
