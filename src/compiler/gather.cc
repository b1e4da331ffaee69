#include "compiler/gather.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/aggregation.h"

namespace ccsynth::compiler {

namespace {

// Gather copies of a step come after its move-home copies (op -1, pieces from 0), before its
// sends (op >= 0).
constexpr int kFirstGatherPiece = 1 << 28;

// The rank whose buffers an instruction's src / dst name: `r` records the sender's source and
// `s` the receiver's destination, every other reference is local.
int src_rank_of(const Lowered& l, const Instruction& in) {
  return in.type == StepType::kRecv && in.recv_transfer >= 0
             ? l.transfers[in.recv_transfer].src_rank
             : in.rank;
}
int dst_rank_of(const Lowered& l, const Instruction& in) {
  return in.type == StepType::kSend && in.send_transfer >= 0
             ? l.transfers[in.send_transfer].dst_rank
             : in.rank;
}

// Where the scratch slots of each rank are named: per rank, the (instruction, operand) pairs
// whose operand lies in that rank's buffers (`src` by src_rank_of, `dst` by dst_rank_of),
// whatever buffer it names now (gathering may point a receive's source into scratch). Built
// once, so a group's trial touches its rank's references only, not every instruction.
struct RankRefs {
  struct Ref {
    int instruction;
    bool dst;  // the dst operand, else the src operand
  };
  std::vector<std::vector<Ref>> refs;       // per rank
  std::vector<std::vector<int>> transfers;  // per rank: transfers it sends or receives, ascending

  explicit RankRefs(const Lowered& l) : refs(l.scratch_chunks.size()), transfers(refs.size()) {
    for (int i = 0; i < static_cast<int>(l.instructions.size()); ++i) add(l, i);
    for (int t = 0; t < static_cast<int>(l.transfers.size()); ++t) {
      const Transfer& tr = l.transfers[t];
      if (tr.removed) continue;
      transfers[tr.src_rank].push_back(t);
      if (tr.dst_rank != tr.src_rank) transfers[tr.dst_rank].push_back(t);
    }
  }
  void add(const Lowered& l, int i) {
    const Instruction& in = l.instructions[i];
    if (in.removed) return;
    refs[src_rank_of(l, in)].push_back({i, false});
    refs[dst_rank_of(l, in)].push_back({i, true});
  }
};

BufferRef& operand(Lowered& l, RankRefs::Ref ref) {
  Instruction& in = l.instructions[ref.instruction];
  return ref.dst ? in.dst : in.src;
}

// Calls f(ref, count) for every reference to a scratch slot of `rank`.
template <class F>
void for_each_scratch_ref(Lowered& l, const RankRefs& index, int rank, F f) {
  for (const RankRefs::Ref r : index.refs[rank]) {
    BufferRef& ref = operand(l, r);
    if (ref.buffer == Buffer::kScratch && ref.index >= 0)
      f(ref, l.instructions[r.instruction].count);
  }
}

// Whether some reference covers both scratch slots p - 1 and p of `rank` (no room fits there).
bool spanned(Lowered& l, const RankRefs& index, int rank, int p) {
  bool out = false;
  for_each_scratch_ref(l, index, rank, [&](const BufferRef& ref, int count) {
    out |= ref.index < p && p < ref.index + count;
  });
  return out;
}

// Makes room for `h` scratch slots at index p of `rank`: every slot from p on moves up by h.
void insert_room(Lowered& l, const RankRefs& index, int rank, int p, int h) {
  for_each_scratch_ref(l, index, rank, [&](BufferRef& ref, int) {
    if (ref.index >= p) ref.index += h;
  });
  l.scratch_chunks[rank] += h;
}

// The operands of `rank`'s references as they are, to undo a trial that did not pay.
struct SavedOperands {
  std::vector<BufferRef> operands;
  int scratch_chunks = 0;

  SavedOperands(Lowered& l, const RankRefs& index, int rank)
      : scratch_chunks(l.scratch_chunks[rank]) {
    operands.reserve(index.refs[rank].size());
    for (const RankRefs::Ref r : index.refs[rank]) operands.push_back(operand(l, r));
  }
  void restore(Lowered& l, const RankRefs& index, int rank) const {
    for (size_t k = 0; k < operands.size(); ++k) operand(l, index.refs[rank][k]) = operands[k];
    l.scratch_chunks[rank] = scratch_chunks;
  }
};

bool follows(BufferRef a, int count, BufferRef b) {
  return a.buffer == b.buffer && a.index + count == b.index;
}

// Aggregation's rule for threadblock hints: -1 follows the other, two different ones never merge.
bool hints_agree(const std::vector<int>& hints) {
  int seen = -1;
  for (const int h : hints) {
    if (h < 0) continue;
    if (seen >= 0 && h != seen) return false;
    seen = h;
  }
  return true;
}

// Tries one group of same-step transfers (the members of one aggregation group); applies the
// gathering to `l` when it lowers the rank's aggregated transfer count.
void gather_group(Lowered& l, RankRefs& index, std::vector<int> members, int max_count,
                  const RepeatedWrites& writes, int& piece) {
  if (members.size() < 2) return;
  auto receiver = [&](int t) -> const Instruction& {
    return l.instructions[l.transfers[t].receiver];
  };
  auto sender = [&](int t) -> const Instruction& { return l.instructions[l.transfers[t].sender]; };
  std::sort(members.begin(), members.end(),
            [&](int x, int y) { return receiver(x).dst < receiver(y).dst; });
  int total = 0;
  std::vector<int> send_tbs, recv_tbs;
  for (size_t i = 0; i < members.size(); ++i) {
    const Transfer& t = l.transfers[members[i]];
    const Instruction& r = receiver(members[i]);
    if (writes.touches(r)) return;  // reduces into one slot run in op order: never merged
    if (i > 0) {
      const Instruction& prev = receiver(members[i - 1]);
      if (!follows(prev.dst, prev.count, r.dst)) return;  // destinations must be one run
      if (r.type == StepType::kRecvReduceCopy && !follows(prev.src, prev.count, r.src)) return;
    }
    total += t.count;
    send_tbs.push_back(t.send_tb);
    recv_tbs.push_back(t.recv_tb);
  }
  if (total > max_count || !hints_agree(send_tbs) || !hints_agree(recv_tbs)) return;
  // The longest run (in chunks) of members whose sources follow each other in scratch, skipping
  // the members in between (the strays).
  std::vector<size_t> best;
  int best_chunks = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const Instruction& first = sender(members[i]);
    if (first.src.buffer != Buffer::kScratch) continue;
    std::vector<size_t> run = {i};
    BufferRef end{Buffer::kScratch, first.src.index + first.count};
    int chunks = first.count;
    for (size_t k = i + 1; k < members.size(); ++k) {
      const Instruction& s = sender(members[k]);
      if (s.src == end) {
        run.push_back(k);
        end.index += s.count;
        chunks += s.count;
      }
    }
    if (chunks > best_chunks) {
      best = std::move(run);
      best_chunks = chunks;
    }
  }
  const int strays = total - best_chunks;
  if (best.empty() || strays == 0 || strays * 2 >= total) return;
  // Room before each run member for the strays that precede it, and after the last one.
  std::vector<std::pair<int, int>> rooms;  // (scratch index, slots), ascending
  std::vector<bool> in_run(members.size(), false);
  for (const size_t i : best) in_run[i] = true;
  int pending = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (!in_run[i]) {
      pending += l.transfers[members[i]].count;
    } else if (pending > 0) {
      rooms.emplace_back(sender(members[i]).src.index, pending);
      pending = 0;
    }
  }
  const Instruction& last = sender(members[best.back()]);
  if (pending > 0) rooms.emplace_back(last.src.index + last.count, pending);
  const int rank = sender(members.front()).rank;
  for (const auto& [p, h] : rooms) {
    if (spanned(l, index, rank, p)) return;  // a multi-chunk access holds those slots together
  }
  const std::vector<int>& rank_transfers = index.transfers[rank];
  const int before = aggregated_transfers(l, rank_transfers, max_count);
  const SavedOperands saved(l, index, rank);
  for (auto it = rooms.rbegin(); it != rooms.rend(); ++it)
    insert_room(l, index, rank, it->first, it->second);
  // The block starts where the first run member sits minus the strays before it.
  int offset = 0;
  int base = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i == best.front()) {
      base = sender(members[i]).src.index - offset;
      break;
    }
    offset += l.transfers[members[i]].count;
  }
  offset = 0;
  std::vector<Instruction> copies;
  for (size_t i = 0; i < members.size(); ++i) {
    const Transfer& t = l.transfers[members[i]];
    if (!in_run[i]) {
      Instruction& s = l.instructions[t.sender];
      const BufferRef slot{Buffer::kScratch, base + offset};
      Instruction copy;
      copy.rank = rank;
      copy.type = StepType::kCopy;
      copy.src = s.src;
      copy.dst = slot;
      copy.count = t.count;
      copy.key = {s.key.step, 0, -1, kFirstGatherPiece + piece++};
      s.src = slot;
      Instruction& r = l.instructions[t.receiver];
      if (r.type == StepType::kRecv) r.src = slot;
      copies.push_back(copy);
    }
    offset += t.count;
  }
  if (aggregated_transfers(l, rank_transfers, max_count) >= before) {
    saved.restore(l, index, rank);
    return;
  }
  for (const Instruction& copy : copies) {
    l.instructions.push_back(copy);
    index.add(l, static_cast<int>(l.instructions.size()) - 1);
  }
}

}  // namespace

void gather_strays(Lowered& l, int max_count) {
  const RepeatedWrites writes(l);
  const TransferGroups groups = transfer_groups(l);
  RankRefs index(l);
  int piece = 0;
  for (size_t g = 0; g < groups.size(); ++g)
    gather_group(l, index, groups.group(g), max_count, writes, piece);
}

}  // namespace ccsynth::compiler
