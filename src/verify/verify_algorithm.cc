#include "ccsynth/verify/verify_algorithm.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <sstream>
#include <string>

#include "ccsynth/verify/symbolic_value.h"

namespace ccsynth::verify {

namespace {

// Values held by every rank for every chunk. Non-combining collectives only need to know
// whether a rank holds the chunk (its value is the chunk's single contribution), which keeps
// very large allgathers (10^8 chunk-rank pairs) affordable.
class ChunkState {
 public:
  explicit ChunkState(const Collective& c) : c_(c), ranks_(c.num_ranks) {
    const size_t cells = static_cast<size_t>(c.num_chunks()) * ranks_;
    if (c.combining) {
      values_.assign(cells, SymbolicValue{});
    } else {
      held_.assign(cells, 0);
      expected_.reserve(c.num_chunks());
      for (int k = 0; k < c.num_chunks(); ++k) expected_.push_back(expected_value(c, k));
    }
    for (int k = 0; k < c.num_chunks(); ++k) {
      for (const Slot& s : c.chunks[k].pre) set(k, s.rank, SymbolicValue::contribution(k, s));
    }
  }

  SymbolicValue get(int chunk, int rank) const {
    const size_t i = index(chunk, rank);
    if (c_.combining) return values_[i];
    return held_[i] ? expected_[chunk] : SymbolicValue{};
  }
  bool holds(int chunk, int rank) const {
    const size_t i = index(chunk, rank);
    return c_.combining ? !values_[i].empty() : held_[i] != 0;
  }
  void set(int chunk, int rank, SymbolicValue v) {
    const size_t i = index(chunk, rank);
    if (c_.combining) {
      values_[i] = v;
    } else {
      held_[i] = v.empty() ? 0 : 1;
    }
  }

 private:
  size_t index(int chunk, int rank) const { return static_cast<size_t>(chunk) * ranks_ + rank; }

  const Collective& c_;
  size_t ranks_;
  std::vector<SymbolicValue> values_;
  std::vector<uint8_t> held_;
  std::vector<SymbolicValue> expected_;  // per chunk, what a holder holds (non-combining)
};

Violation at_op(ViolationKind kind, const ChunkOp& op, size_t index, const std::string& what) {
  std::ostringstream os;
  os << "op #" << index << " (" << op << "): " << what;
  return {kind, op.dst, -1, op.step, os.str()};
}

// The one-hop successors of every rank (Topology::out_neighbors, ascending), computed once so
// that checking an op's connection is a binary search instead of a scan of every link.
using Neighbors = std::vector<std::vector<int>>;

bool connected(const Neighbors& neighbors, int src, int dst) {
  return std::binary_search(neighbors[src].begin(), neighbors[src].end(), dst);
}

// Structural checks of one op; returns false when the op cannot be executed. `neighbors` is
// null without a topology.
bool check_op(const Algorithm& a, const Topology* topology, const Neighbors* neighbors,
              const ChunkOp& op, size_t index, VerifyReport& report) {
  const Collective& c = a.collective;
  auto fail = [&](ViolationKind kind, const std::string& what) {
    report.violations.push_back(at_op(kind, op, index, what));
    return false;
  };
  if (op.src < 0 || op.src >= c.num_ranks || op.dst < 0 || op.dst >= c.num_ranks) {
    return fail(ViolationKind::kBounds, "rank outside 0.." + std::to_string(c.num_ranks - 1));
  }
  if (op.count < 1) return fail(ViolationKind::kStructure, "count must be >= 1");
  if (op.chunk < 0 || op.chunk + op.count > c.num_chunks()) {
    return fail(ViolationKind::kBounds, "chunk outside 0.." + std::to_string(c.num_chunks() - 1));
  }
  if (op.src == op.dst) return fail(ViolationKind::kStructure, "sends to itself");
  if (op.step < 0) return fail(ViolationKind::kStructure, "negative step");
  if (op.kind == OpKind::kReduce && !c.combining) {
    return fail(ViolationKind::kStructure, "reduce in a non-combining collective");
  }
  // A routed algorithm leaves the path to the network (the simulator routes it).
  if (neighbors && !a.routed && !connected(*neighbors, op.src, op.dst)) {
    return fail(ViolationKind::kStructure, "no link or switch connects " + std::to_string(op.src) +
                                               " to " + std::to_string(op.dst) + " in " +
                                               topology->name);
  }
  return true;
}

struct PendingWrite {
  SymbolicValue value;
  bool copy = false;
  int writers = 0;
};

// The writes of one step, reused from step to step: `cells` has one pending write per
// (chunk, dst) written, `cell_of` the cell of each write in op order. Found by one sort of the
// step's writes (a tree of pending writes allocated a node per write: 16.8 M at 4096 ranks).
struct StepWrites {
  struct Cell {
    int chunk = 0;
    int dst = 0;
    PendingWrite write;
  };
  std::vector<std::pair<int64_t, int>> keys;  // ((chunk, dst), write number)
  std::vector<int> cell_of;
  std::vector<Cell> cells;
};

// Numbers the cells the ops of a step write: every chunk an op's sender holds.
void number_cells(const Algorithm& a, std::span<const size_t> op_indices, const ChunkState& state,
                  StepWrites& w) {
  w.keys.clear();
  w.cells.clear();
  for (size_t index : op_indices) {
    const ChunkOp& op = a.ops[index];
    for (int k = op.chunk; k < op.chunk + op.count; ++k) {
      if (!state.holds(k, op.src)) continue;
      w.keys.emplace_back((static_cast<int64_t>(k) << 32) | static_cast<uint32_t>(op.dst),
                          static_cast<int>(w.keys.size()));
    }
  }
  std::sort(w.keys.begin(), w.keys.end());
  w.cell_of.resize(w.keys.size());
  for (size_t i = 0; i < w.keys.size(); ++i) {
    if (i == 0 || w.keys[i].first != w.keys[i - 1].first) {
      w.cells.push_back({static_cast<int>(w.keys[i].first >> 32),
                         static_cast<int>(static_cast<uint32_t>(w.keys[i].first)),
                         {}});
    }
    w.cell_of[w.keys[i].second] = static_cast<int>(w.cells.size()) - 1;
  }
}

// Executes the ops of one step: all read the start-of-step state, writes apply at the end.
void run_step(const Algorithm& a, std::span<const size_t> op_indices, ChunkState& state,
              VerifyReport& report, StepWrites& writes) {
  number_cells(a, op_indices, state, writes);
  int next_write = 0;
  for (size_t index : op_indices) {
    const ChunkOp& op = a.ops[index];
    for (int k = op.chunk; k < op.chunk + op.count; ++k) {
      if (!state.holds(k, op.src)) {
        report.violations.push_back(
            at_op(ViolationKind::kUninitializedRead, op, index,
                  "rank " + std::to_string(op.src) + " does not hold chunk " + std::to_string(k)));
        continue;
      }
      PendingWrite& w = writes.cells[writes.cell_of[next_write++]].write;
      ++w.writers;
      if (op.kind == OpKind::kCopy) {
        if (w.writers > 1) {
          report.violations.push_back(
              at_op(ViolationKind::kRace, op, index,
                    "chunk " + std::to_string(k) + " written by two ops in one step"));
        }
        w.copy = true;
        w.value = state.get(k, op.src);
      } else {
        if (w.copy) {
          report.violations.push_back(
              at_op(ViolationKind::kRace, op, index,
                    "reduce and copy into chunk " + std::to_string(k) + " in one step"));
        }
        if (!state.holds(k, op.dst)) {
          report.violations.push_back(at_op(ViolationKind::kUninitializedRead, op, index,
                                            "reduce into rank " + std::to_string(op.dst) +
                                                " which does not hold chunk " + std::to_string(k)));
          continue;
        }
        w.value = w.value + state.get(k, op.src);
      }
    }
  }
  for (const StepWrites::Cell& cell : writes.cells) {
    const PendingWrite& w = cell.write;
    state.set(cell.chunk, cell.dst, w.copy ? w.value : state.get(cell.chunk, cell.dst) + w.value);
  }
}

void check_postcondition(const Collective& c, const ChunkState& state, VerifyReport& report) {
  constexpr size_t kMaxReported = 64;
  size_t missing = 0;
  for (int k = 0; k < c.num_chunks(); ++k) {
    const SymbolicValue expected = expected_value(c, k);
    for (const Slot& s : c.chunks[k].post) {
      const SymbolicValue got = state.get(k, s.rank);
      if (got == expected) continue;
      if (++missing > kMaxReported) continue;
      std::string what = got.empty()   ? "never arrives"
                         : c.combining ? "holds " + std::to_string(got.count) + " of " +
                                             std::to_string(expected.count) +
                                             " contributions (or the wrong ones)"
                                       : "holds a wrong value";
      report.violations.push_back(
          {ViolationKind::kPostcondition, s.rank, -1, -1,
           "chunk " + std::to_string(k) + " at rank " + std::to_string(s.rank) + " " + what});
    }
  }
  if (missing > kMaxReported) {
    report.violations.push_back(
        {ViolationKind::kPostcondition, -1, -1, -1,
         std::to_string(missing - kMaxReported) + " more postcondition violations not listed"});
  }
}

}  // namespace

VerifyReport verify_algorithm(const Algorithm& a, const Topology* topology) {
  VerifyReport report;
  if (topology && topology->num_ranks != a.collective.num_ranks) {
    report.violations.push_back({ViolationKind::kStructure, -1, -1, -1,
                                 "algorithm has " + std::to_string(a.collective.num_ranks) +
                                     " ranks but topology " + topology->name + " has " +
                                     std::to_string(topology->num_ranks)});
    return report;
  }
  Neighbors neighbors;
  if (topology) neighbors = topology->out_neighbors();
  // The executable ops in step order (ops are sorted by step by convention: then this is
  // their order as it is).
  std::vector<size_t> runnable;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (check_op(a, topology, topology ? &neighbors : nullptr, a.ops[i], i, report))
      runnable.push_back(i);
  }
  auto by_step = [&](size_t x, size_t y) { return a.ops[x].step < a.ops[y].step; };
  if (!std::is_sorted(runnable.begin(), runnable.end(), by_step))
    std::stable_sort(runnable.begin(), runnable.end(), by_step);
  ChunkState state(a.collective);
  StepWrites writes;
  for (size_t begin = 0; begin < runnable.size();) {
    size_t end = begin;
    while (end < runnable.size() && a.ops[runnable[end]].step == a.ops[runnable[begin]].step) ++end;
    run_step(a, std::span<const size_t>(runnable).subspan(begin, end - begin), state, report,
             writes);
    begin = end;
  }
  check_postcondition(a.collective, state, report);
  return report;
}

}  // namespace ccsynth::verify
