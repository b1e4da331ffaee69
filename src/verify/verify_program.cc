#include "ccsynth/verify/verify_program.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <memory_resource>
#include <tuple>
#include <unordered_map>

#include "ccsynth/core/error.h"
#include "ccsynth/verify/symbolic_value.h"
#include "program_checks.h"

namespace ccsynth::verify {

namespace {

using detail::ViolationSink;

// One access of a cell: step `clock - 1` of threadblock `tb` of the cell's rank.
struct Epoch {
  int tb = -1;
  int clock = 0;
};

// Race-detection state of one chunk cell (FastTrack-style: last write, reads since).
struct CellMeta {
  Epoch write;               // tb -1: the initial value (or never written)
  std::vector<Epoch> reads;  // since the last write, at most one per threadblock
  bool raced = false;        // a race on this cell was reported already
};

// Vector clocks over all threadblocks of the program cost up to O(threadblocks) per message
// and dependency (every message carries one); up to this many threadblocks x steps they are
// used (exact happens-before, including chains of messages through other ranks), above it
// clocks cover each rank's own threadblocks only. verify_program first runs with each rank's
// own clocks (up to O(the rank's threadblocks) per dependency): they order fewer steps, so when
// they find no race the global ones would find none either, and only a program with a race is
// run again with global clocks.
constexpr int64_t kGlobalClockWork = 100'000'000;

// A vector clock kept as its nonzero entries, sorted by slot. A threadblock learns about few
// others: at 512 ranks (TACOS's rfs:8x8x8 allreduce, 435 slots per rank clock) 3.6% of the
// entries of the dense clocks were ever nonzero, and the dense clocks and their snapshots took
// 1.6 GB, zeroed and joined slot by slot. A run's clocks take their storage from one pool
// (Simulator::clock_pool_): half a million small vectors freed one by one were 7% of a
// verification at 512 ranks, most of it at the end. Clocks that join each other (join()'s
// `scratch` swaps storage with the clock) must share a memory resource.
class SparseClock {
 public:
  SparseClock() = default;
  explicit SparseClock(std::pmr::memory_resource* storage) : entries_(storage) {}

  // The entry of `slot` (0 when absent).
  int get(int slot) const {
    const auto it = find(slot);
    return it != entries_.end() && it->first == slot ? it->second : 0;
  }

  // Raises the entry of `slot` to `value`.
  void raise(int slot, int value) {
    const auto it = find(slot);
    if (it != entries_.end() && it->first == slot) {
      it->second = std::max(it->second, value);
    } else {
      entries_.insert(it, {slot, value});
    }
  }

  // Entry-wise maximum with `other`; `scratch` is reused storage.
  void join(const SparseClock& other, SparseClock& scratch) {
    if (other.entries_.empty()) return;
    if (entries_.empty()) {
      entries_ = other.entries_;
      return;
    }
    Entries& out = scratch.entries_;
    out.clear();
    auto a = entries_.cbegin();
    auto b = other.entries_.cbegin();
    while (a != entries_.cend() || b != other.entries_.cend()) {
      if (b == other.entries_.cend() || (a != entries_.cend() && a->first < b->first)) {
        out.push_back(*a++);
      } else if (a == entries_.cend() || b->first < a->first) {
        out.push_back(*b++);
      } else {
        out.push_back({a->first, std::max(a->second, b->second)});
        ++a, ++b;
      }
    }
    entries_.swap(out);
  }

 private:
  using Entries = std::pmr::vector<std::pair<int, int>>;

  Entries::iterator find(int slot) {
    return std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(slot, INT_MIN));
  }
  Entries::const_iterator find(int slot) const {
    return std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(slot, INT_MIN));
  }

  Entries entries_;
};

// A message in flight: the values of `count` chunks, who sent it and (with global clocks)
// the sender's vector clock.
struct Message {
  std::vector<SymbolicValue> values;
  int sender_step = 0;
  SparseClock clock;
};

// The messages in flight on a connection, at most `slots` (a sender waits at a full FIFO): a
// ring whose storage grows as the messages in flight do, up to `slots`. (A std::deque
// allocated a 512-byte node for every connection and another one every 9 messages; TACOS's
// rfs:8x8x8 allreduce has 238 K connections, and in start-time order most carry one or two
// messages, so storage for all slots at the first send was most of what the run allocated.)
class MessageRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const Message& front() const { return ring_[head_]; }
  // Moves the oldest message out.
  Message pop_front() {
    Message out = std::move(ring_[head_]);
    head_ = (head_ + 1) % ring_.size();
    --size_;
    return out;
  }
  void push_back(Message message, int slots) {
    if (size_ == ring_.size())
      grow(std::min(std::max<size_t>(1, 2 * size_), static_cast<size_t>(slots)));
    ring_[(head_ + size_) % ring_.size()] = std::move(message);
    ++size_;
  }

 private:
  // Storage for `capacity` messages, the ones in flight moved to its front in order.
  void grow(size_t capacity) {
    std::vector<Message> grown(std::max(capacity, size_ + 1));
    for (size_t i = 0; i < size_; ++i) grown[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_.swap(grown);
    head_ = 0;
  }

  std::vector<Message> ring_;
  size_t head_ = 0;
  size_t size_ = 0;
};

// A FIFO connection (sender rank, receiver rank, channel) with its two threadblocks (global
// ids, -1 when the program lacks one).
struct Connection {
  int src = 0;
  int dst = 0;
  int channel = 0;
  int sender = -1;
  int receiver = -1;
  MessageRing fifo;
};

enum class Wait { kNone, kDependency, kReceive, kSendSlot };

struct TbState {
  explicit TbState(std::pmr::memory_resource* clocks) : clock(clocks) {}

  int rank = 0;
  int local = 0;      // index on its rank
  int pc = 0;         // next step
  int published = 0;  // semaphore: 1 + the last completed step with hasdep (MSCCLang fig. 5)
  Wait wait = Wait::kNone;
  bool queued = false;
  int in_conn = -1;
  int out_conn = -1;
  const Step* steps = nullptr;  // the threadblock's steps (kept here: one load less per step)
  int num_steps = 0;
  size_t first_step = 0;     // of the threadblock's steps in the per-step tables
  std::vector<int> waiters;  // threadblocks blocked on this one's semaphore
  SparseClock clock;         // vector clock over all or the rank's threadblocks
};

std::string cell_name(Buffer b, int index) { return detail::buffer_range(b, index); }

class Simulator {
 public:
  // Executes `p` with in-place buffer aliasing when `inplace` (core/program.h).
  // With `global_clocks`, vector clocks cover every threadblock of the program when that is
  // affordable (kGlobalClockWork); otherwise each rank's own.
  Simulator(const Program& p, const std::vector<PairedConnection>& connections, const Collective& c,
            bool inplace, int fifo_slots, ViolationSink& sink, bool global_clocks)
      : p_(p),
        c_(c),
        inplace_(inplace),
        slots_(std::max(1, fifo_slots)),
        sink_(sink),
        global_clocks_(global_clocks && global_clocks_affordable(p)) {
    layout();
    connect(connections);
    place_inputs();
  }

  // Runs each ready threadblock until it blocks or finishes; returns false on deadlock.
  bool run() {
    std::deque<int> ready;
    ready_ = &ready;
    for (size_t g = 0; g < tbs_.size(); ++g) wake(static_cast<int>(g));
    while (!ready.empty()) {
      const int g = ready.front();
      ready.pop_front();
      tbs_[g].queued = false;
      while (try_step(g)) {
      }
    }
    return report_stuck();
  }

  // Whether vector clocks over every threadblock stay within kGlobalClockWork.
  static bool global_clocks_affordable(const Program& p) {
    int64_t total_tbs = 0;
    for (const GpuProgram& g : p.gpus) total_tbs += static_cast<int64_t>(g.threadblocks.size());
    return total_tbs * std::max<int64_t>(1, p.total_steps()) <= kGlobalClockWork;
  }

  // Reports the messages left in FIFOs, connection by connection in the order their first end
  // comes in the program (threadblock by threadblock, a threadblock's send before its receive).
  void check_leftovers() {
    std::vector<int> left;  // connections with messages in their FIFO
    for (int k = 0; k < static_cast<int>(conns_.size()); ++k)
      if (!conns_[k].fifo.empty()) left.push_back(k);
    auto first_end = [this](int k) {
      return std::min(2 * int64_t{conns_[k].sender}, 2 * int64_t{conns_[k].receiver} + 1);
    };
    std::sort(left.begin(), left.end(), [&](int a, int b) { return first_end(a) < first_end(b); });
    for (const int k : left) {
      const Connection& conn = conns_[k];
      const TbState& st = tbs_[conn.sender];
      sink_.add(ViolationKind::kStructure, st.rank, st.local, conn.fifo.front().sender_step,
                std::to_string(conn.fifo.size()) + " message(s) sent to rank " +
                    std::to_string(conn.dst) + " on channel " + std::to_string(conn.channel) +
                    " were never received (first sent by this step)");
    }
  }

  void check_postcondition() {
    for (int k = 0; k < c_.num_chunks(); ++k) {
      const SymbolicValue expected = expected_value(c_, k);
      for (const Slot& slot : c_.chunks[k].post) {
        if (!sink_.wants(ViolationKind::kPostcondition)) return;
        check_post_slot(k, slot, expected);
      }
    }
  }

 private:
  const Threadblock& tb_of(int g) const {
    return p_.gpus[tbs_[g].rank].threadblocks[tbs_[g].local];
  }
  int global(int rank, int local) const { return tb_base_[rank] + local; }

  size_t cell(int rank, Buffer b, int index) const {
    const GpuProgram& g = p_.gpus[rank];
    size_t offset = cell_base_[rank] + index;
    if (b != Buffer::kInput) offset += g.input_chunks;
    if (b == Buffer::kScratch) offset += g.output_chunks;
    return offset;
  }

  // Assigns global threadblock ids and cell ranges; marks the steps whose clock a dependency
  // needs (the first step with hasdep at or after each depended-on step).
  void layout() {
    if (!global_clocks_) number_rank_clock_slots();
    size_t cells = 0;
    for (const GpuProgram& g : p_.gpus) {
      tb_base_.push_back(static_cast<int>(tbs_.size()));
      cell_base_.push_back(cells);
      cells += static_cast<size_t>(g.input_chunks) + g.output_chunks + g.scratch_chunks;
      for (size_t t = 0; t < g.threadblocks.size(); ++t) {
        TbState st(&clock_pool_);
        st.rank = g.rank;
        st.local = static_cast<int>(t);
        const auto& steps = g.threadblocks[t].steps;
        st.steps = steps.data();
        st.num_steps = static_cast<int>(steps.size());
        st.first_step = next_publish_.size();
        tbs_.push_back(std::move(st));
        next_publish_.resize(next_publish_.size() + steps.size());
        for (int k = static_cast<int>(steps.size()) - 1, n = -1; k >= 0; --k) {
          if (steps[k].has_dep) n = k;
          next_publish_[tbs_.back().first_step + k] = n;
        }
      }
    }
    values_.assign(cells, SymbolicValue{});
    meta_.resize(cells);
    number_snapshots();
  }

  // Gives every publishing step whose clock some dependency joins a slot in snapshots_.
  void number_snapshots() {
    snapshot_of_.assign(next_publish_.size(), -1);
    int count = 0;
    for (const TbState& st : tbs_) {
      for (int k = 0; k < st.num_steps; ++k) {
        const Step& s = st.steps[k];
        if (s.dep_tb < 0) continue;
        const TbState& target = tbs_[global(st.rank, s.dep_tb)];
        const int publisher = publisher_of(target, s.dep_step);
        if (publisher < 0) continue;
        int& slot = snapshot_of_[target.first_step + publisher];
        if (slot < 0) slot = count++;
      }
    }
    snapshots_.reserve(count);
    for (int i = 0; i < count; ++i) snapshots_.emplace_back(&clock_pool_);
  }

  // The first step at or after `step` of `st` with hasdep (whose completion releases a wait
  // for `step`), or -1.
  int publisher_of(const TbState& st, int step) const {
    return next_publish_[st.first_step + step];
  }

  // With each rank's own clocks, a threadblock's progress reaches another one of its rank only
  // through a dependency on it (messages carry no clocks then), so only the threadblocks some
  // step depends on need a slot in the rank's clocks: any other one's entry would stay 0 in
  // every clock but its own (and its own accesses are ordered by program order). At 512 ranks
  // with 931 threadblocks each (TACOS's rfs:8x8x8 allreduce) the full clocks took 1.8 GB.
  void number_rank_clock_slots() {
    rank_clock_size_.assign(p_.gpus.size(), 0);
    for (const GpuProgram& g : p_.gpus) {
      std::vector<int>& slot = rank_clock_slot_.emplace_back(g.threadblocks.size(), -1);
      for (const Threadblock& tb : g.threadblocks) {
        for (const Step& s : tb.steps) {
          if (s.dep_tb < 0 || s.dep_tb >= static_cast<int>(slot.size()) || slot[s.dep_tb] >= 0)
            continue;
          slot[s.dep_tb] = rank_clock_size_[g.rank]++;
        }
      }
    }
  }

  // The FIFO connections, in (sender, receiver, channel) order, between global threadblock
  // indices.
  void connect(const std::vector<PairedConnection>& connections) {
    conns_.reserve(connections.size());
    for (const PairedConnection& c : connections) {
      const int sender = tb_base_[c.sender] + c.sender_tb;
      const int receiver = tb_base_[c.receiver] + c.receiver_tb;
      tbs_[sender].out_conn = static_cast<int>(conns_.size());
      tbs_[receiver].in_conn = static_cast<int>(conns_.size());
      conns_.push_back({c.sender, c.receiver, c.channel, sender, receiver, {}});
    }
  }

  // Initial values: every pre slot's contribution at its (possibly in-place) location.
  void place_inputs() {
    for (int k = 0; k < c_.num_chunks(); ++k) {
      for (const Slot& s : c_.chunks[k].pre) {
        const BufferRef ref = input_location(c_, s, inplace_);
        const int size = p_.gpus[s.rank].buffer_chunks(ref.buffer);
        if (ref.index >= size) {
          sink_.add(ViolationKind::kStructure, s.rank, -1, -1,
                    "input " + std::to_string(s.index) + " of the collective lives at " +
                        cell_name(ref.buffer, ref.index) + ", outside the " + std::to_string(size) +
                        "-chunk buffer");
          continue;
        }
        values_[cell(s.rank, ref.buffer, ref.index)] = SymbolicValue::contribution(k, s);
      }
    }
  }

  void wake(int g) {
    TbState& st = tbs_[g];
    if (st.queued || st.pc >= st.num_steps) return;
    st.queued = true;
    ready_->push_back(g);
  }

  // Runs the next step of threadblock g if it can; false when blocked or finished.
  bool try_step(int g) {
    TbState& st = tbs_[g];
    if (st.pc >= st.num_steps) return false;
    const Step& s = st.steps[st.pc];
    if (s.dep_tb >= 0) {
      TbState& target = tbs_[global(st.rank, s.dep_tb)];
      if (target.published < s.dep_step + 1) {
        st.wait = Wait::kDependency;
        target.waiters.push_back(g);
        return false;
      }
    }
    if (receives(s.type) && conns_[st.in_conn].fifo.empty()) {
      st.wait = Wait::kReceive;
      return false;
    }
    if (sends(s.type) && static_cast<int>(conns_[st.out_conn].fifo.size()) >= slots_) {
      st.wait = Wait::kSendSlot;
      return false;
    }
    st.wait = Wait::kNone;
    if (s.dep_tb >= 0) join_dependency(st, s);
    if (const int own = clock_index(st, st.local); own >= 0) st.clock.raise(own, st.pc + 1);
    execute(g, s);
    if (s.has_dep) publish(g);
    ++st.pc;
    return true;
  }

  // Happens-before through the semaphore: the waiter learns everything the first publishing
  // step at or after the awaited one had seen.
  void join_dependency(TbState& st, const Step& s) {
    const TbState& target = tbs_[global(st.rank, s.dep_tb)];
    const int publisher = publisher_of(target, s.dep_step);
    if (publisher < 0) return;
    st.clock.join(snapshots_[snapshot_of_[target.first_step + publisher]], join_scratch_);
  }

  void publish(int g) {
    TbState& st = tbs_[g];
    st.published = st.pc + 1;
    if (const int slot = snapshot_of_[st.first_step + st.pc]; slot >= 0)
      snapshots_[slot] = st.clock;
    for (int w : st.waiters) wake(w);  // wake() queues them; it does not wait on st
    st.waiters.clear();
  }

  void execute(int g, const Step& s) {
    TbState& st = tbs_[g];
    // The values received, then what the step writes and sends. A message's storage is reused
    // once it is received (spare_values_), so sends allocate only while the messages in flight
    // grow; the local operands are read into reused buffers.
    std::vector<SymbolicValue> values;
    if (receives(s.type)) {
      values = std::move(receive(g, s).values);
    } else if (sends(s.type) && !spare_values_.empty()) {
      values = std::move(spare_values_.back());
      spare_values_.pop_back();
    }
    if (reads_src(s.type)) read_all(st, s.src_buffer, s.src_offset, s.count, src_);
    switch (s.type) {
      case StepType::kSend: values.assign(src_.begin(), src_.end()); break;
      case StepType::kRecv:
      case StepType::kRecvCopySend: write_all(st, s, values); break;
      case StepType::kRecvReduceSend: add_into(values, src_); break;
      case StepType::kRecvReduceCopy:
      case StepType::kRecvReduceCopySend: add_into(values, src_), write_all(st, s, values); break;
      case StepType::kCopy: write_all(st, s, src_); break;
      case StepType::kReduce:
        read_all(st, s.dst_buffer, s.dst_offset, s.count, dst_);
        add_into(dst_, src_);
        write_all(st, s, dst_);
        break;
      case StepType::kNop: break;
    }
    if (sends(s.type)) {
      Connection& conn = conns_[st.out_conn];
      conn.fifo.push_back({std::move(values), st.pc, global_clocks_ ? st.clock : SparseClock{}},
                          slots_);
      if (conn.receiver >= 0) wake(conn.receiver);
    } else if (values.capacity() > 0) {
      spare_values_.push_back(std::move(values));
    }
  }

  // Reads `count` cells from `offset` of buffer `b` into `out`.
  void read_all(TbState& st, Buffer b, int offset, int count, std::vector<SymbolicValue>& out) {
    out.clear();
    for (int i = 0; i < count; ++i) out.push_back(read(st, b, offset + i));
  }

  Message receive(int g, const Step& s) {
    TbState& st = tbs_[g];
    Connection& conn = conns_[st.in_conn];
    Message m = conn.fifo.pop_front();
    if (conn.sender >= 0) wake(conn.sender);
    st.clock.join(m.clock, join_scratch_);  // send -> receive edge
    if (static_cast<int>(m.values.size()) != s.count) {
      sink_.add(ViolationKind::kStructure, st.rank, st.local, st.pc,
                "receives cnt=" + std::to_string(s.count) + " but the matching send (rank " +
                    std::to_string(conn.src) + " tb " + std::to_string(tbs_[conn.sender].local) +
                    " step " + std::to_string(m.sender_step) +
                    ") sent cnt=" + std::to_string(m.values.size()));
      m.values.resize(s.count);
    }
    return m;
  }

  // Reduction of `b` into `a`, element by element (as far as both reach).
  static void add_into(std::vector<SymbolicValue>& a, const std::vector<SymbolicValue>& b) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] = a[i] + b[i];
  }

  // Happens-before of an earlier access `e` to the current step of `st` (same rank).
  bool ordered(const TbState& st, const Epoch& e) const {
    if (e.tb < 0 || e.tb == st.local) return true;
    const int at = clock_index(st, e.tb);
    return at >= 0 && st.clock.get(at) >= e.clock;
  }

  // Position of threadblock `local` of st's rank in st's vector clock, or -1 when no step of
  // the rank depends on it (rank clocks: number_rank_clock_slots()).
  int clock_index(const TbState& st, int local) const {
    return global_clocks_ ? tb_base_[st.rank] + local : rank_clock_slot_[st.rank][local];
  }

  void race(const TbState& st, CellMeta& m, Buffer b, int index, const Epoch& other,
            const char* what) {
    if (m.raced) return;
    m.raced = true;
    sink_.add(ViolationKind::kRace, st.rank, st.local, st.pc,
              std::string(what) + " " + cell_name(b, index) + " while tb " +
                  std::to_string(other.tb) + " step " + std::to_string(other.clock - 1) +
                  " also accesses it with no ordering between them (same threadblock, "
                  "dependency or send/receive)");
  }

  SymbolicValue read(TbState& st, Buffer b, int index) {
    const size_t c = cell(st.rank, b, index);
    CellMeta& m = meta_[c];
    if (!ordered(st, m.write)) race(st, m, b, index, m.write, "reads");
    const Epoch now{st.local, st.pc + 1};
    bool found = false;
    for (Epoch& e : m.reads) {
      if (e.tb == st.local) e = now, found = true;
    }
    if (!found) m.reads.push_back(now);
    const SymbolicValue v = values_[c];
    if (v.empty()) {
      sink_.add(ViolationKind::kUninitializedRead, st.rank, st.local, st.pc,
                detail::quoted(st.steps[st.pc].type) + " reads " + cell_name(b, index) +
                    ", which holds no value yet");
    }
    return v;
  }

  void write(TbState& st, Buffer b, int index, const SymbolicValue& v) {
    const size_t c = cell(st.rank, b, index);
    CellMeta& m = meta_[c];
    if (!ordered(st, m.write)) race(st, m, b, index, m.write, "writes");
    for (const Epoch& e : m.reads) {
      if (!ordered(st, e)) race(st, m, b, index, e, "writes");
    }
    m.reads.clear();
    m.write = {st.local, st.pc + 1};
    values_[c] = v;
  }

  void write_all(TbState& st, const Step& s, const std::vector<SymbolicValue>& values) {
    for (int i = 0; i < s.count; ++i) {
      write(st, s.dst_buffer, s.dst_offset + i,
            i < static_cast<int>(values.size()) ? values[i] : SymbolicValue{});
    }
  }

  // Reports every unfinished threadblock with what its step waits for; true if none.
  bool report_stuck() {
    bool all_done = true;
    for (size_t g = 0; g < tbs_.size(); ++g) {
      const TbState& st = tbs_[g];
      if (st.pc >= st.num_steps) continue;
      all_done = false;
      if (!sink_.wants(ViolationKind::kDeadlock)) {
        sink_.add(ViolationKind::kDeadlock, st.rank, st.local, st.pc, "");
        continue;
      }
      sink_.add(ViolationKind::kDeadlock, st.rank, st.local, st.pc, stuck_reason(st));
    }
    return all_done;
  }

  // "at step 4 (rank 2 tb 0)" or "finished" for a threadblock `g`.
  std::string where(int g) const {
    const TbState& st = tbs_[g];
    const std::string who = "rank " + std::to_string(st.rank) + " tb " + std::to_string(st.local);
    if (st.pc >= st.num_steps) return who + " (finished)";
    return who + " (stuck at step " + std::to_string(st.pc) + ")";
  }

  std::string stuck_reason(const TbState& st) const {
    const Step& s = p_.gpus[st.rank].threadblocks[st.local].steps[st.pc];
    const std::string type = detail::quoted(s.type) + " ";
    switch (st.wait) {
      case Wait::kDependency: {
        const int u = global(st.rank, s.dep_tb);
        std::string out = type + "waits for tb " + std::to_string(s.dep_tb) + " step " +
                          std::to_string(s.dep_step) + ", ";
        if (publisher_of(tbs_[u], s.dep_step) < 0) {
          return out +
                 "but no step of that threadblock from there on has hasdep=1, so its "
                 "semaphore never reaches it";
        }
        return out + "which has not run: " + where(u);
      }
      case Wait::kReceive: {
        const Connection& conn = conns_[st.in_conn];
        std::string out = type + "receive from rank " + std::to_string(conn.src) + " channel " +
                          std::to_string(conn.channel) + " never matched";
        if (conn.sender < 0) {
          return out + ": no threadblock of rank " + std::to_string(conn.src) +
                 " sends to this rank on that channel";
        }
        return out + "; sender " + where(conn.sender);
      }
      case Wait::kSendSlot: {
        const Connection& conn = conns_[st.out_conn];
        std::string out = type + "send to rank " + std::to_string(conn.dst) + " channel " +
                          std::to_string(conn.channel) + " blocked: all " + std::to_string(slots_) +
                          " FIFO slots are full";
        if (conn.receiver < 0) {
          return out + " and no threadblock of rank " + std::to_string(conn.dst) +
                 " receives from this rank on that channel";
        }
        return out + "; receiver " + where(conn.receiver);
      }
      case Wait::kNone: break;
    }
    return type + "never became ready";
  }

  // Names an unexpected value: which chunk/slot a single contribution is, if any.
  std::string describe(const SymbolicValue& v) {
    if (v.empty()) return "no value";
    if (v.count == 1) {
      if (contributions_.empty()) {
        for (int k = 0; k < c_.num_chunks(); ++k) {
          for (const Slot& s : c_.chunks[k].pre) {
            contributions_.emplace(SymbolicValue::contribution(k, s).tag_sum, std::make_pair(k, s));
          }
        }
      }
      const auto it = contributions_.find(v.tag_sum);
      if (it != contributions_.end()) {
        return "chunk " + std::to_string(it->second.first) + " as input by rank " +
               std::to_string(it->second.second.rank);
      }
    }
    return "a reduction of " + std::to_string(v.count) + " contribution(s)";
  }

  void check_post_slot(int k, const Slot& slot, const SymbolicValue& expected) {
    const BufferRef ref = output_location(c_, slot, inplace_);
    const int size = p_.gpus[slot.rank].buffer_chunks(ref.buffer);
    const std::string where = cell_name(ref.buffer, ref.index);
    if (ref.index >= size) {
      sink_.add(ViolationKind::kPostcondition, slot.rank, -1, -1,
                "chunk " + std::to_string(k) + " must end at " + where + ", outside the " +
                    std::to_string(size) + "-chunk buffer");
      return;
    }
    const SymbolicValue v = values_[cell(slot.rank, ref.buffer, ref.index)];
    if (v == expected) return;
    std::string want = "chunk " + std::to_string(k);
    if (c_.combining) want += " reduced over " + std::to_string(expected.count) + " contributions";
    sink_.add(ViolationKind::kPostcondition, slot.rank, -1, -1,
              where + " holds " + describe(v) + "; expected " + want);
  }

  const Program& p_;
  const Collective& c_;
  const bool inplace_;
  const int slots_;
  ViolationSink& sink_;
  const bool global_clocks_;
  std::deque<int>* ready_ = nullptr;
  std::pmr::unsynchronized_pool_resource clock_pool_;  // before every clock that uses it
  std::vector<TbState> tbs_;
  std::vector<int> tb_base_;
  std::vector<std::vector<int>> rank_clock_slot_;  // rank clocks: [rank][local tb] -> slot or -1
  std::vector<int> rank_clock_size_;               // rank clocks: slots per rank
  std::vector<size_t> cell_base_;
  // Per step (from each TbState::first_step): publisher_of(), and the step's slot in snapshots_
  // when its clock is joined by some dependency (else -1).
  std::vector<int> next_publish_;
  std::vector<int> snapshot_of_;
  std::vector<SparseClock> snapshots_;      // a publishing step's clock, once it ran
  SparseClock join_scratch_{&clock_pool_};  // storage SparseClock::join reuses
  std::vector<Connection> conns_;
  std::vector<SymbolicValue> values_;
  std::vector<CellMeta> meta_;
  std::vector<SymbolicValue> src_, dst_;  // a step's local operands (execute())
  // Storage of received messages' values, for the next sends (execute()).
  std::vector<std::vector<SymbolicValue>> spare_values_;
  std::unordered_map<uint64_t, std::pair<int, Slot>> contributions_;
};

// One symbolic execution in one buffer mode, with its checks, into `sink`.
void run_once(const Program& program, const std::vector<PairedConnection>& connections,
              const Collective& collective, bool inplace, int fifo_slots, ViolationSink& sink,
              bool global_clocks) {
  Simulator sim(program, connections, collective, inplace, fifo_slots, sink, global_clocks);
  if (sim.run()) {
    sim.check_leftovers();
    sim.check_postcondition();
  }
}

}  // namespace

VerifyReport verify_program(const Program& program, const VerifyProgramOptions& options) {
  Collective owned;
  const Collective* collective = options.collective;
  if (collective == nullptr) {
    owned = collective_of(program);
    collective = &owned;
  }
  ViolationSink sink;
  std::vector<PairedConnection> connections;
  if (!detail::check_structure(program, *collective, sink, connections)) return sink.finish();
  // A file valid for both call types (executor inplace="1" outofplace="1") runs both ways.
  const bool both = program.inplace && program.outofplace;
  for (const bool inplace : {true, false}) {
    if (inplace != program.inplace && !both) continue;
    if (both) sink.set_prefix(inplace ? "in-place run: " : "out-of-place run: ");
    ViolationSink with_rank_clocks = sink;
    run_once(program, connections, *collective, inplace, options.fifo_slots, with_rank_clocks,
             false);
    const bool raced =
        with_rank_clocks.count(ViolationKind::kRace) > sink.count(ViolationKind::kRace);
    if (raced && Simulator::global_clocks_affordable(program)) {
      // Exact races.
      run_once(program, connections, *collective, inplace, options.fifo_slots, sink, true);
    } else {
      sink = std::move(with_rank_clocks);
    }
  }
  return sink.finish();
}

}  // namespace ccsynth::verify
