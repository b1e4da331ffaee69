#include "compiler/deadlock_check.h"

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccsynth::compiler {

namespace {

// A connection (sender, receiver, channel) as one hashable number; used only to number the
// connections densely before the run.
int64_t connection_key(int sender, int receiver, int channel) {
  return (static_cast<int64_t>(sender) << 40) | (static_cast<int64_t>(receiver + 1) << 16) |
         static_cast<int64_t>(channel);
}

// A threadblock's progress, with its steps at hand (one load less per step than through the
// Threadblock: the run is bound by cache misses at 1024 ranks).
struct TbState {
  const Step* steps = nullptr;
  int num_steps = 0;
  int step = 0;
  int piece = 0;
  bool queued = false;
  int next_waiting = -1;  // the threadblock after this one in the list it waits in
};

// Threadblocks waiting for one thing (a message, a FIFO slot, another threadblock's step), in
// the order they started waiting: a list through TbState::next_waiting, since a threadblock
// waits for one thing at a time. (A vector per connection and threadblock cost an allocation
// per first wait, 477 K threadblocks in TACOS's rfs:8x8x8 allreduce.)
struct WaitList {
  int head = -1;
  int tail = -1;
};

// Runs the threadblocks against bounded FIFOs. Threadblocks and connections are numbered
// densely up front, so every step costs O(1) (no map lookups in the run).
class FifoRun {
 public:
  FifoRun(const Program& p, int slots, bool per_chunk)
      : p_(p), slots_(slots), per_chunk_(per_chunk) {
    number_threadblocks();
    number_connections();
    for (int g = 0; g < static_cast<int>(tbs_.size()); ++g) wake(g);
  }

  std::vector<BlockedStep> run() {
    while (!ready_.empty()) {
      const int g = ready_.front();
      ready_.pop_front();
      state_[g].queued = false;
      advance(g);
    }
    std::vector<BlockedStep> blocked;
    for (int g = 0; g < static_cast<int>(tbs_.size()); ++g) {
      const TbState& s = state_[g];
      if (s.step >= s.num_steps) continue;
      const bool on_send = sends(s.steps[s.step].type) && queue_[send_conn_[g]] >= slots_;
      blocked.push_back({rank_[g], g - first_tb_[rank_[g]], s.step, on_send});
    }
    return blocked;
  }

 private:
  void number_threadblocks() {
    for (const GpuProgram& gpu : p_.gpus) {
      first_tb_.push_back(static_cast<int>(tbs_.size()));
      for (const Threadblock& tb : gpu.threadblocks) {
        tbs_.push_back(&tb);
        rank_.push_back(gpu.rank);
      }
    }
    state_.resize(tbs_.size());
    for (size_t g = 0; g < tbs_.size(); ++g) {
      state_[g].steps = tbs_[g]->steps.data();
      state_[g].num_steps = static_cast<int>(tbs_[g]->steps.size());
    }
    dep_waiting_.resize(tbs_.size());
  }

  void number_connections() {
    std::unordered_map<int64_t, int> ids;
    auto id_of = [&](int64_t key) {
      const auto [it, fresh] = ids.emplace(key, static_cast<int>(ids.size()));
      return it->second;
    };
    send_conn_.assign(tbs_.size(), -1);
    recv_conn_.assign(tbs_.size(), -1);
    for (size_t g = 0; g < tbs_.size(); ++g) {
      const Threadblock& tb = *tbs_[g];
      if (tb.send_peer >= 0)
        send_conn_[g] = id_of(connection_key(rank_[g], tb.send_peer, tb.channel));
      if (tb.recv_peer >= 0)
        recv_conn_[g] = id_of(connection_key(tb.recv_peer, rank_[g], tb.channel));
    }
    queue_.assign(ids.size(), 0);
    recv_waiting_.resize(ids.size());
    send_waiting_.resize(ids.size());
  }

  void wake(int g) {
    TbState& s = state_[g];
    if (s.queued) return;
    s.queued = true;
    ready_.push_back(g);
  }
  void wait_in(WaitList& list, int g) {
    state_[g].next_waiting = -1;
    if (list.tail < 0) {
      list.head = g;
    } else {
      state_[list.tail].next_waiting = g;
    }
    list.tail = g;
  }
  // Wakes every threadblock of `list` in the order they started waiting, and empties it.
  void wake_all(WaitList& list) {
    for (int g = std::exchange(list.head, -1); g >= 0; g = state_[g].next_waiting) wake(g);
    list.tail = -1;
  }

  // Runs the threadblock until it blocks or finishes.
  void advance(int g) {
    const int first = first_tb_[rank_[g]];
    TbState& s = state_[g];
    while (s.step < s.num_steps) {
      const Step& step = s.steps[s.step];
      if (s.piece == 0 && step.dep_tb >= 0 && state_[first + step.dep_tb].step <= step.dep_step) {
        wait_in(dep_waiting_[first + step.dep_tb], g);
        return;
      }
      const bool rx = receives(step.type), tx = sends(step.type);
      if (rx && queue_[recv_conn_[g]] == 0) {
        wait_in(recv_waiting_[recv_conn_[g]], g);
        return;
      }
      if (tx && queue_[send_conn_[g]] >= slots_) {
        wait_in(send_waiting_[send_conn_[g]], g);
        return;
      }
      if (rx) {
        --queue_[recv_conn_[g]];
        wake_all(send_waiting_[recv_conn_[g]]);
      }
      if (tx) {
        ++queue_[send_conn_[g]];
        wake_all(recv_waiting_[send_conn_[g]]);
      }
      const int pieces = step.type == StepType::kNop || !per_chunk_ ? 1 : std::max(step.count, 1);
      if (++s.piece < pieces) continue;
      s.piece = 0;
      ++s.step;
      if (step.has_dep) wake_all(dep_waiting_[g]);
    }
  }

  const Program& p_;
  int slots_;
  bool per_chunk_;
  std::vector<const Threadblock*> tbs_;     // every threadblock, rank after rank
  std::vector<int> rank_;                   // per threadblock
  std::vector<int> first_tb_;               // per rank: its first threadblock's number
  std::vector<int> send_conn_, recv_conn_;  // per threadblock: connection number or -1
  std::vector<TbState> state_;
  std::deque<int> ready_;
  std::vector<int> queue_;                             // per connection: messages in its FIFO
  std::vector<WaitList> recv_waiting_, send_waiting_;  // per connection
  std::vector<WaitList> dep_waiting_;                  // per threadblock waited for
};

}  // namespace

std::vector<BlockedStep> find_fifo_deadlock(const Program& program, int fifo_slots,
                                            bool pieces_per_chunk) {
  return FifoRun(program, fifo_slots, pieces_per_chunk).run();
}

}  // namespace ccsynth::compiler
