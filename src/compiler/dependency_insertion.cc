#include "compiler/dependency_insertion.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {

// A slot's last writer and its readers since then: a list through ReaderList's entries (one
// pool per rank instead of a vector per slot).
struct SlotState {
  int last_writer = -1;
  int first_reader = -1;  // entry in the pool, or -1
  int last_reader = -1;
};

// The readers of every slot of a rank, as linked lists in one pool, in the order they read.
class ReaderList {
 public:
  void add(SlotState& s, int instruction) {
    const int at = static_cast<int>(entries_.size());
    entries_.push_back({instruction, -1});
    if (s.last_reader >= 0) {
      entries_[s.last_reader].next = at;
    } else {
      s.first_reader = at;
    }
    s.last_reader = at;
  }
  template <typename F>
  void for_each(const SlotState& s, F&& f) const {
    for (int at = s.first_reader; at >= 0; at = entries_[at].next) f(entries_[at].instruction);
  }
  static void clear(SlotState& s) { s.first_reader = s.last_reader = -1; }

 private:
  struct Entry {
    int instruction;
    int next;
  };
  std::vector<Entry> entries_;
};

// Dense numbers for the buffer slots that a rank's instructions touch: the buffers one after
// the other, each as long as the highest index touched in it.
class SlotNumbers {
 public:
  SlotNumbers(const Lowered& l, const std::vector<int>& order) {
    std::array<int, 3> length{};  // per buffer
    auto touch = [&](BufferRef start, int count) {
      CCSYNTH_CHECK(start.index >= 0) << "instruction reads or writes a negative slot";
      int& n = length[static_cast<int>(start.buffer)];
      n = std::max(n, start.index + count);
    };
    for (const int i : order) {
      const Instruction& in = l.instructions[i];
      if (reads_src(in.type)) touch(in.src, in.count);
      if (writes_dst(in.type) || in.type == StepType::kReduce) touch(in.dst, in.count);
    }
    offset_ = {0, length[0], length[0] + length[1]};
    size_ = length[0] + length[1] + length[2];
  }

  int operator()(BufferRef ref) const { return offset_[static_cast<int>(ref.buffer)] + ref.index; }
  int size() const { return size_; }

 private:
  std::array<int, 3> offset_{};
  int size_ = 0;
};

// The dependencies of each instruction of one rank, one flat list: those of order[k] are
// ids[start[k]] .. ids[start[k + 1] - 1].
struct Dependencies {
  std::vector<int> ids;
  std::vector<int> start;
  std::span<const int> of(size_t k) const {
    return {ids.data() + start[k], static_cast<size_t>(start[k + 1] - start[k])};
  }
};

// Dependencies of every instruction of one rank (instruction ids, at most one per other
// threadblock: its latest), from read/write sets walked in the global order.
Dependencies rank_dependencies(const Lowered& l, const std::vector<int>& order) {
  const SlotNumbers number(l, order);
  std::vector<SlotState> slots(number.size());
  ReaderList readers;
  Dependencies deps;
  deps.start.reserve(order.size() + 1);
  deps.start.push_back(0);
  std::vector<int> found;
  std::vector<std::pair<int, int>> latest;  // (tb, its latest instruction) of one instruction
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    const Instruction& in = l.instructions[i];
    found.clear();
    auto each = [&](BufferRef start, auto&& f) {
      for (int j = 0; j < in.count; ++j) f(slots[number({start.buffer, start.index + j})]);
    };
    const bool reads = reads_src(in.type);
    const bool writes = writes_dst(in.type);
    if (reads) {
      each(in.src, [&](SlotState& s) {
        if (s.last_writer >= 0) found.push_back(s.last_writer);  // read after write
      });
    }
    if (in.type == StepType::kReduce) {
      each(in.dst, [&](SlotState& s) {
        if (s.last_writer >= 0) found.push_back(s.last_writer);
      });
    }
    if (writes) {
      each(in.dst, [&](SlotState& s) {
        if (s.last_writer >= 0) found.push_back(s.last_writer);   // write after write
        readers.for_each(s, [&](int r) { found.push_back(r); });  // write after read
      });
    }
    if (reads) each(in.src, [&](SlotState& s) { readers.add(s, i); });
    if (writes) {
      each(in.dst, [&](SlotState& s) {
        s.last_writer = i;
        ReaderList::clear(s);
      });
    }
    // Keep the latest instruction of every other threadblock, in threadblock order.
    latest.clear();
    for (int d : found) {
      const Instruction& di = l.instructions[d];
      if (di.threadblock == in.threadblock) continue;
      auto it = std::find_if(latest.begin(), latest.end(),
                             [&](const auto& e) { return e.first == di.threadblock; });
      if (it == latest.end()) {
        latest.emplace_back(di.threadblock, d);
      } else if (l.instructions[it->second].key < di.key) {
        it->second = d;
      }
    }
    std::sort(latest.begin(), latest.end());
    for (const auto& [tb, d] : latest) deps.ids.push_back(d);
    deps.start.push_back(static_cast<int>(deps.ids.size()));
  }
  return deps;
}

// The instruction whose send `in` must follow, or -1: the previous channel's last send when
// `in` sends the first transfer of a channel its connection spilled into (Lowered::spill_after),
// if that send runs in another threadblock, before `in` in the rank's order.
int spill_predecessor(const Lowered& l, const Instruction& in) {
  if (in.send_transfer < 0 || l.spill_after.empty()) return -1;
  const auto after = l.spill_after.find(in.send_transfer);
  if (after == l.spill_after.end()) return -1;
  const int sender = l.transfers[after->second].sender;
  if (sender < 0) return -1;
  const Instruction& before = l.instructions[sender];
  const bool ordered = !before.removed && before.rank == in.rank && before.key < in.key &&
                       before.threadblock != in.threadblock;
  return ordered ? sender : -1;
}

// Per local index, the spill predecessor that instruction waits for, or -1 (empty: none). A
// timed algorithm's connection split over channels only to fit the step limit sends in order,
// as in one long threadblock: each channel's first send waits for the previous channel's last.
// Without it, the channels' sends ran at once and shared the link, each slower and out of the
// order the synthesizer timed (TACOS on mesh2d:40x40 simulated at 1.116x the bound instead of
// 1.045x). The wait takes the step's dependency slot, or a nop where the step has one already,
// and only where the threadblock stays within `max_steps`: it is never worth failing the limit
// for. (Untimed algorithms keep their channels overlapping: the logical rings of TACOS' Ring
// baseline, whose long routed sends overlap their latencies, ran 2-4% slower in order.)
std::vector<int> spill_waits(const Lowered& l, int rank, const std::vector<int>& order,
                             const Dependencies& deps, const std::vector<int>& local,
                             int max_steps) {
  if (l.spill_after.empty()) return {};  // none
  std::vector<int> waits(order.size(), -1);
  for (const PlannedThreadblock& tb : l.threadblocks[rank]) {
    int steps = 0;
    for (int i : tb.instructions) steps += std::max<int>(deps.of(local[i]).size(), 1);
    for (int i : tb.instructions) {
      const int before = spill_predecessor(l, l.instructions[i]);
      if (before < 0) continue;
      const std::span<const int> ds = deps.of(local[i]);
      const int before_tb = l.instructions[before].threadblock;
      // Already waiting for that threadblock at that send or later.
      const bool covered = std::any_of(ds.begin(), ds.end(), [&](int d) {
        const Instruction& di = l.instructions[d];
        return di.threadblock == before_tb && !(di.key < l.instructions[before].key);
      });
      if (covered) continue;
      const int cost = ds.empty() ? 0 : 1;
      if (steps + cost > max_steps) continue;
      steps += cost;
      waits[local[i]] = before;
    }
  }
  return waits;
}

Step make_step(const Instruction& in) {
  Step s;
  s.type = in.type;
  s.src_buffer = in.src.buffer;
  s.src_offset = in.src.index;
  s.dst_buffer = in.dst.buffer;
  s.dst_offset = in.dst.index;
  s.count = in.count;
  return s;
}

Step nop() {
  Step s;
  s.type = StepType::kNop;
  s.count = 0;
  return s;
}

}  // namespace

GpuProgram insert_dependencies(const Lowered& l, int rank, const std::vector<int>& order,
                               std::vector<std::vector<int>>& origins, std::vector<int>& local,
                               int max_steps) {
  const auto deps = rank_dependencies(l, order);
  for (size_t k = 0; k < order.size(); ++k) local[order[k]] = static_cast<int>(k);
  const std::vector<int> waits = spill_waits(l, rank, order, deps, local, max_steps);
  std::vector<int> with_wait;  // an instruction's dependencies and its spill wait
  auto dependencies_of = [&](int i) -> std::span<const int> {
    const std::span<const int> ds = deps.of(local[i]);
    if (waits.empty() || waits[local[i]] < 0) return ds;
    with_wait.assign(ds.begin(), ds.end());
    with_wait.push_back(waits[local[i]]);
    return with_wait;
  };
  const auto& planned = l.threadblocks[rank];
  GpuProgram gpu;
  gpu.rank = rank;
  const Collective& c = *l.collective;
  gpu.input_chunks = c.input_chunks;
  gpu.output_chunks = c.output_chunks;
  if (l.inplace) {
    // In-place programs use one buffer, the larger one (docs/formats.md `<gpu>`).
    if (c.output_chunks > c.input_chunks) {
      gpu.input_chunks = 0;
    } else {
      gpu.output_chunks = 0;
    }
  }
  gpu.scratch_chunks = l.scratch_chunks[rank];
  // Layout: the extra dependencies of a step become nops just before it.
  std::vector<int> position(order.size(), -1);  // local index -> step index in its threadblock
  for (const auto& tb : planned) {
    int next = 0;
    for (int i : tb.instructions) {
      const int n = static_cast<int>(dependencies_of(i).size());
      next += std::max(n - 1, 0);
      position[local[i]] = next++;
    }
  }
  for (int t = 0; t < static_cast<int>(planned.size()); ++t) {
    Threadblock tb;
    origins.emplace_back();
    tb.id = t;
    tb.send_peer = planned[t].send_peer;
    tb.recv_peer = planned[t].recv_peer;
    tb.channel = planned[t].channel;
    if (!planned[t].instructions.empty()) {
      const size_t steps = position[local[planned[t].instructions.back()]] + 1;
      tb.steps.reserve(steps);
      origins.back().reserve(steps);
    }
    for (int i : planned[t].instructions) {
      const std::span<const int> ds = dependencies_of(i);
      auto wait_on = [&](Step& s, int d) {
        s.dep_tb = l.instructions[d].threadblock;
        s.dep_step = position[local[d]];
      };
      for (size_t k = 1; k < ds.size(); ++k) {
        Step n = nop();
        wait_on(n, ds[k]);
        tb.steps.push_back(n);
        origins.back().push_back(-1);
      }
      Step s = make_step(l.instructions[i]);
      if (!ds.empty()) wait_on(s, ds[0]);
      CCSYNTH_CHECK(static_cast<int>(tb.steps.size()) == position[local[i]]) << "step layout";
      tb.steps.push_back(s);
      origins.back().push_back(i);
    }
    gpu.threadblocks.push_back(std::move(tb));
  }
  for (Threadblock& tb : gpu.threadblocks) {
    for (Step& s : tb.steps) {
      if (s.dep_tb >= 0) gpu.threadblocks[s.dep_tb].steps[s.dep_step].has_dep = true;
    }
  }
  return gpu;
}

Program empty_program(const Lowered& l) {
  Program p;
  const Collective& c = *l.collective;
  p.collective = c.kind;
  p.root = c.root;
  p.num_ranks = c.num_ranks;
  p.inplace = l.inplace;
  p.outofplace = !l.inplace;
  return p;
}

void set_totals(Program& p) {
  int max_channel = 0;
  p.chunks_per_loop = Program{}.chunks_per_loop;
  for (const GpuProgram& g : p.gpus) {
    p.chunks_per_loop = std::max({p.chunks_per_loop, g.input_chunks, g.output_chunks});
    for (const Threadblock& tb : g.threadblocks) max_channel = std::max(max_channel, tb.channel);
  }
  p.num_channels = max_channel + 1;
}

}  // namespace ccsynth::compiler
