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

// Calls f(ref, count) for every reference to a scratch slot of `rank`.
template <class F>
void for_each_scratch_ref(Lowered& l, int rank, F f) {
  for (Instruction& in : l.instructions) {
    if (in.removed) continue;
    if (in.src.buffer == Buffer::kScratch && in.src.index >= 0 && src_rank_of(l, in) == rank) {
      f(in.src, in.count);
    }
    if (in.dst.buffer == Buffer::kScratch && in.dst.index >= 0 && dst_rank_of(l, in) == rank) {
      f(in.dst, in.count);
    }
  }
}

// Whether some reference covers both scratch slots p - 1 and p of `rank` (no room fits there).
bool spanned(Lowered& l, int rank, int p) {
  bool out = false;
  for_each_scratch_ref(l, rank, [&](const BufferRef& ref, int count) {
    out |= ref.index < p && p < ref.index + count;
  });
  return out;
}

// Makes room for `h` scratch slots at index p of `rank`: every slot from p on moves up by h.
void insert_room(Lowered& l, int rank, int p, int h) {
  for_each_scratch_ref(l, rank, [&](BufferRef& ref, int) {
    if (ref.index >= p) ref.index += h;
  });
  l.scratch_chunks[rank] += h;
}

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
void gather_group(Lowered& l, std::vector<int> members, int max_count, const RepeatedWrites& writes,
                  int& piece) {
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
    if (spanned(l, rank, p)) return;  // a multi-chunk access holds those slots together
  }
  Lowered trial = l;
  for (auto it = rooms.rbegin(); it != rooms.rend(); ++it)
    insert_room(trial, rank, it->first, it->second);
  // The block starts where the first run member sits minus the strays before it.
  int offset = 0;
  int base = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i == best.front()) {
      base = trial.instructions[trial.transfers[members[i]].sender].src.index - offset;
      break;
    }
    offset += l.transfers[members[i]].count;
  }
  offset = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    Transfer& t = trial.transfers[members[i]];
    if (!in_run[i]) {
      Instruction& s = trial.instructions[t.sender];
      const BufferRef slot{Buffer::kScratch, base + offset};
      Instruction copy;
      copy.rank = rank;
      copy.type = StepType::kCopy;
      copy.src = s.src;
      copy.dst = slot;
      copy.count = t.count;
      copy.key = {s.key.step, 0, -1, kFirstGatherPiece + piece++};
      s.src = slot;
      Instruction& r = trial.instructions[t.receiver];
      if (r.type == StepType::kRecv) r.src = slot;
      trial.instructions.push_back(copy);
    }
    offset += t.count;
  }
  if (aggregated_transfers(trial, rank, max_count) < aggregated_transfers(l, rank, max_count)) {
    l = std::move(trial);
  }
}

}  // namespace

void gather_strays(Lowered& l, int max_count) {
  const RepeatedWrites writes(l);
  const TransferGroups groups = transfer_groups(l);
  int piece = 0;
  for (size_t g = 0; g < groups.size(); ++g)
    gather_group(l, groups.group(g), max_count, writes, piece);
}

}  // namespace ccsynth::compiler
