#include "compiler/deadlock_check.h"

#include <deque>
#include <map>
#include <tuple>

namespace ccsynth::compiler {

namespace {

using Connection = std::tuple<int, int, int>;  // (sender, receiver, channel)

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
  Connection out(int rank, const Threadblock& tb) const { return {rank, tb.send_peer, tb.channel}; }
  Connection in(int rank, const Threadblock& tb) const { return {tb.recv_peer, rank, tb.channel}; }
  int& queue(const Connection& c) { return queues_[c]; }

  void wake(int rank, int tb) {
    TbState& s = state_[rank][tb];
    if (s.queued) return;
    s.queued = true;
    ready_.push_back({rank, tb});
  }
  void wake_all(std::multimap<Connection, std::pair<int, int>>& waiting, const Connection& c) {
    auto range = waiting.equal_range(c);
    for (auto it = range.first; it != range.second; ++it) wake(it->second.first, it->second.second);
    waiting.erase(range.first, range.second);
  }

  // Runs the threadblock until it blocks or finishes.
  void advance(int rank, int t) {
    const Threadblock& tb = p_.gpus[rank].threadblocks[t];
    TbState& s = state_[rank][t];
    while (s.step < static_cast<int>(tb.steps.size())) {
      const Step& step = tb.steps[s.step];
      if (s.piece == 0 && step.dep_tb >= 0 && state_[rank][step.dep_tb].step <= step.dep_step) {
        dep_waiting_.insert({{rank, step.dep_tb, 0}, {rank, t}});
        return;
      }
      const bool rx = receives(step.type), tx = sends(step.type);
      if (rx && queue(in(rank, tb)) == 0) {
        recv_waiting_.insert({in(rank, tb), {rank, t}});
        return;
      }
      if (tx && queue(out(rank, tb)) >= slots_) {
        send_waiting_.insert({out(rank, tb), {rank, t}});
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
      if (step.has_dep) wake_all(dep_waiting_, {rank, t, 0});
    }
  }

  const Program& p_;
  int slots_;
  bool per_chunk_;
  std::vector<std::vector<TbState>> state_;
  std::deque<std::pair<int, int>> ready_;
  std::map<Connection, int> queues_;
  std::multimap<Connection, std::pair<int, int>> recv_waiting_, send_waiting_, dep_waiting_;
};

}  // namespace

std::vector<BlockedStep> find_fifo_deadlock(const Program& program, int fifo_slots,
                                            bool pieces_per_chunk) {
  return FifoRun(program, fifo_slots, pieces_per_chunk).run();
}

}  // namespace ccsynth::compiler
