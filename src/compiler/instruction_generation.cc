#include "compiler/instruction_generation.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <string>

#include "ccsynth/core/error.h"
#include "compiler/buffer_allocation.h"

namespace ccsynth::compiler {

namespace {

std::string op_field(size_t index) { return "ops[" + std::to_string(index) + "]"; }

// Checks op `index`; the field is named only when it is wrong (a million ops are checked).
void check_op(const Collective& c, const ChunkOp& op, size_t index) {
  auto fail = [&](const std::string& suffix, const std::string& reason) {
    throw UserError("", op_field(index) + suffix, reason);
  };
  if (op.src < 0 || op.src >= c.num_ranks || op.dst < 0 || op.dst >= c.num_ranks) {
    fail("", "rank outside 0.." + std::to_string(c.num_ranks - 1));
  }
  if (op.src == op.dst) fail("", "sends to itself");
  if (op.count < 1) fail(".count", "must be >= 1");
  if (op.chunk < 0 || op.chunk + op.count > c.num_chunks()) {
    fail(".chunk", "chunks outside 0.." + std::to_string(c.num_chunks() - 1));
  }
  if (op.step < 0) fail(".step", "must be >= 0");
  if (op.send_tb < -1) fail(".send_tb", "must be >= 0 (or -1: any)");
  if (op.recv_tb < -1) fail(".recv_tb", "must be >= 0 (or -1: any)");
  if (op.kind == OpKind::kReduce && !c.combining) {
    fail(".kind", "reduce in the non-combining collective " + c.name);
  }
}

bool follows(BufferRef a, BufferRef b) { return a.buffer == b.buffer && a.index + 1 == b.index; }

// Per-chunk locations of one op, resolved at the op's place in the order.
struct OpLocations {
  std::vector<BufferRef> src;      // at the sender
  std::vector<BufferRef> operand;  // at the receiver, for reduces
  std::vector<BufferRef> dst;      // at the receiver
};

int add_instruction(Lowered& l, Instruction in) {
  l.instructions.push_back(in);
  return static_cast<int>(l.instructions.size()) - 1;
}

// Emits one transfer per contiguous piece of the op.
void emit_pieces(Lowered& l, const ChunkOp& op, int op_index, const OpLocations& at) {
  const bool reduce = op.kind == OpKind::kReduce;
  int piece = 0;
  for (int begin = 0; begin < op.count;) {
    int end = begin + 1;
    while (end < op.count && follows(at.src[end - 1], at.src[end]) &&
           follows(at.dst[end - 1], at.dst[end]) &&
           (!reduce || follows(at.operand[end - 1], at.operand[end]))) {
      ++end;
    }
    const int count = end - begin;
    const int t = static_cast<int>(l.transfers.size());
    Instruction send;
    send.rank = op.src;
    send.type = StepType::kSend;
    send.src = at.src[begin];
    send.dst = at.dst[begin];  // records the remote target, as the XML does
    send.count = count;
    send.key = {op.step, 0, op_index, piece};
    send.send_transfer = t;
    Instruction recv;
    recv.rank = op.dst;
    recv.type = reduce ? StepType::kRecvReduceCopy : StepType::kRecv;
    recv.src = reduce ? at.operand[begin] : at.src[begin];  // r records the remote source
    recv.dst = at.dst[begin];
    recv.count = count;
    recv.key = {op.step, 1, op_index, piece};
    recv.recv_transfer = t;
    Transfer transfer;
    transfer.src_rank = op.src;
    transfer.dst_rank = op.dst;
    transfer.channel = op.channel;
    transfer.count = count;
    transfer.op = op_index;
    transfer.send_tb = op.send_tb;
    transfer.recv_tb = op.recv_tb;
    transfer.sender = add_instruction(l, send);
    transfer.receiver = add_instruction(l, recv);
    l.transfers.push_back(transfer);
    begin = end;
    ++piece;
  }
}

void add_copy(Lowered& l, const FinalCopy& f, const OrderKey& key) {
  Instruction copy;
  copy.rank = f.rank;
  copy.type = StepType::kCopy;
  copy.src = f.src;
  copy.dst = f.dst;
  copy.count = 1;
  copy.key = key;
  add_instruction(l, copy);
}

// Before a step after the first: a rank's own input values that it sends again (e.g. together
// with chunks it received) first move to their output slots, so that those sends read one
// buffer. The copies come before every op of the step in the order (op -1) but depend on
// nothing, so the local threadblock runs them at once.
void move_sent_values_home(Lowered& l, BufferAllocator& alloc, const Algorithm& algorithm, int step,
                           std::span<const int> indices) {
  int piece = 0;
  for (const int i : indices) {
    const ChunkOp& op = algorithm.ops[i];
    for (int k = op.chunk; k < op.chunk + op.count; ++k) {
      if (auto copy = alloc.move_home(op.src, k)) add_copy(l, *copy, {step, 0, -1, piece++});
    }
  }
}

// Input slots of every rank together (pre slots of every chunk).
size_t input_slots(const Collective& c) {
  size_t slots = 0;
  for (const ChunkSpec& chunk : c.chunks) slots += chunk.pre.size();
  return slots;
}

}  // namespace

std::vector<int> ops_by_step(const Algorithm& algorithm) {
  std::vector<int> order(algorithm.ops.size());
  std::iota(order.begin(), order.end(), 0);
  auto earlier = [&](int a, int b) { return algorithm.ops[a].step < algorithm.ops[b].step; };
  if (!std::is_sorted(order.begin(), order.end(), earlier)) {
    std::stable_sort(order.begin(), order.end(), earlier);
  }
  return order;
}

Lowered generate_instructions(const Algorithm& algorithm, bool inplace,
                              const Relocations& relocations) {
  const Collective& c = algorithm.collective;
  for (size_t i = 0; i < algorithm.ops.size(); ++i) check_op(c, algorithm.ops[i], i);
  Lowered l;
  l.collective = &c;
  l.inplace = inplace;
  l.timed =
      !algorithm.ops.empty() && std::all_of(algorithm.ops.begin(), algorithm.ops.end(),
                                            [](const ChunkOp& op) { return op.start_us >= 0; });
  // Usually one transfer (a send and a receive) per op, plus the local copies: about one per
  // input slot (a rank's own chunks moved to its output). Reserved in one piece: growing the
  // vector by doubling held the old and the new one at once, the peak of the 4096-rank mesh
  // allgather's nccl reference (4 GB more); capacity never touched costs no memory.
  l.transfers.reserve(algorithm.ops.size());
  l.instructions.reserve(2 * algorithm.ops.size() + input_slots(c));
  BufferAllocator alloc(algorithm, inplace);
  const std::vector<int> by_step = ops_by_step(algorithm);
  int last_step = -1;
  std::vector<BufferRef> sources;  // reused from step to step
  std::vector<size_t> first;
  OpLocations at;
  for (size_t begin = 0, end = 0; begin < by_step.size(); begin = end) {
    const int step = algorithm.ops[by_step[begin]].step;
    while (end < by_step.size() && algorithm.ops[by_step[end]].step == step) ++end;
    const std::span<const int> indices(by_step.data() + begin, end - begin);
    if (last_step >= 0) move_sent_values_home(l, alloc, algorithm, step, indices);
    // Phase 0: every op reads the value its source holds at the start of the step (kept flat:
    // op j's chunks are sources[first[j]..first[j + 1])).
    sources.clear();
    first.assign(1, 0);
    for (size_t j = 0; j < indices.size(); ++j) {
      const ChunkOp& op = algorithm.ops[indices[j]];
      for (int k = op.chunk; k < op.chunk + op.count; ++k) {
        const auto src = alloc.location(op.src, k);
        if (!src) {
          throw UserError("", op_field(indices[j]),
                          "rank " + std::to_string(op.src) + " does not hold chunk " +
                              std::to_string(k) + " at step " + std::to_string(step));
        }
        sources.push_back(*src);
      }
      first.push_back(sources.size());
    }
    // Phase 1: writes take effect in op order (reduces read the running local value).
    for (size_t j = 0; j < indices.size(); ++j) {
      const ChunkOp& op = algorithm.ops[indices[j]];
      at.src.assign(sources.begin() + static_cast<std::ptrdiff_t>(first[j]),
                    sources.begin() + static_cast<std::ptrdiff_t>(first[j + 1]));
      at.operand.clear();
      at.dst.clear();
      for (int k = op.chunk; k < op.chunk + op.count; ++k) {
        const OrderKey key{step, 1, indices[j], 0};
        if (op.kind == OpKind::kReduce) {
          const auto operand = alloc.location(op.dst, k);
          if (!operand) {
            throw UserError("", op_field(indices[j]),
                            "reduce into rank " + std::to_string(op.dst) +
                                " which does not hold chunk " + std::to_string(k));
          }
          at.operand.push_back(*operand);
        }
        const bool fresh = relocations.count({op.dst, indices[j]}) > 0;
        at.dst.push_back(alloc.place_write(op.dst, k, key, fresh));
      }
      emit_pieces(l, op, indices[j], at);
    }
    last_step = step;
  }
  // Final copies into output slots, after the last step.
  const std::vector<FinalCopy> copies = alloc.final_copies();
  l.instructions.reserve(l.instructions.size() + copies.size());
  int order = 0;
  for (const FinalCopy& f : copies) add_copy(l, f, {last_step + 1, 0, order++, 0});
  l.scratch_chunks.resize(c.num_ranks);
  for (int r = 0; r < c.num_ranks; ++r) l.scratch_chunks[r] = alloc.scratch_chunks(r);
  return l;
}

}  // namespace ccsynth::compiler
