#pragma once
// Small reference algorithms for the compiler tests (ring, direct, chain), built directly as
// Algorithms the way synthesizers emit them.

#include "ccsynth/core/algorithm.h"

namespace ccsynth::compiler::testing {

inline int mod(int a, int n) { return ((a % n) + n) % n; }

/// Ring allgather: at step s rank r forwards the block of rank r - s to r + 1.
inline Algorithm ring_allgather(int R, int C) {
  Algorithm a;
  a.name = "ring_allgather";
  a.collective = make_collective(CollectiveKind::kAllGather, R, C);
  for (int s = 0; s < R - 1; ++s)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        a.ops.push_back({mod(r - s, R) * C + c, r, mod(r + 1, R), OpKind::kCopy, s});
  return a;
}

/// Ring reducescatter: at step s rank r reduces its partial of block r - s - 1 into r + 1.
inline Algorithm ring_reducescatter(int R, int C, int first_step = 0,
                                    CollectiveKind kind = CollectiveKind::kReduceScatter) {
  Algorithm a;
  a.name = "ring_reducescatter";
  a.collective = make_collective(kind, R, C);
  for (int s = 0; s < R - 1; ++s)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        a.ops.push_back(
            {mod(r - s - 1, R) * C + c, r, mod(r + 1, R), OpKind::kReduce, first_step + s});
  return a;
}

/// Ring allreduce: ring reducescatter, then ring allgather of the reduced blocks.
inline Algorithm ring_allreduce(int R, int C) {
  Algorithm a = ring_reducescatter(R, C, 0, CollectiveKind::kAllReduce);
  a.name = "ring_allreduce";
  for (int s = 0; s < R - 1; ++s)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        a.ops.push_back({mod(r - s, R) * C + c, r, mod(r + 1, R), OpKind::kCopy, R - 1 + s});
  return a;
}

/// Direct allgather: every rank sends its C chunks to every other rank in one step.
inline Algorithm direct_allgather(int R, int C) {
  Algorithm a;
  a.name = "direct_allgather";
  a.collective = make_collective(CollectiveKind::kAllGather, R, C);
  for (int q = 0; q < R; ++q)
    for (int r = 0; r < R; ++r)
      if (r != q) a.ops.push_back({q * C, q, r, OpKind::kCopy, 0, -1, C});
  return a;
}

/// Recursive-doubling allgather (R a power of two): at step k rank r sends everything it holds,
/// the blocks of the 2^k ranks sharing its high bits, to r ^ 2^k, as one op of count C * 2^k
/// (as the rd baseline emits it) or, with `per_chunk`, one op per chunk.
inline Algorithm rd_allgather(int R, int C, bool per_chunk = false) {
  Algorithm a;
  a.name = "rd_allgather";
  a.collective = make_collective(CollectiveKind::kAllGather, R, C);
  for (int k = 0, bit = 1; bit < R; ++k, bit <<= 1)
    for (int r = 0; r < R; ++r) {
      const int first = (r & ~(bit - 1)) * C;
      if (!per_chunk) {
        a.ops.push_back({first, r, r ^ bit, OpKind::kCopy, k, -1, bit * C});
        continue;
      }
      for (int c = first; c < first + bit * C; ++c)
        a.ops.push_back({c, r, r ^ bit, OpKind::kCopy, k});
    }
  return a;
}

/// Direct reducescatter: every rank reduces its partial of each block into the block's owner.
inline Algorithm direct_reducescatter(int R, int C) {
  Algorithm a;
  a.name = "direct_reducescatter";
  a.collective = make_collective(CollectiveKind::kReduceScatter, R, C);
  for (int o = 0; o < R; ++o)
    for (int r = 0; r < R; ++r)
      if (r != o) a.ops.push_back({o * C, r, o, OpKind::kReduce, 0, -1, C});
  return a;
}

/// Direct allreduce: direct reducescatter then direct allgather of the owned blocks.
inline Algorithm direct_allreduce(int R, int C) {
  Algorithm a;
  a.name = "direct_allreduce";
  a.collective = make_collective(CollectiveKind::kAllReduce, R, C);
  for (int o = 0; o < R; ++o)
    for (int r = 0; r < R; ++r)
      if (r != o) a.ops.push_back({o * C, r, o, OpKind::kReduce, 0, -1, C});
  for (int o = 0; o < R; ++o)
    for (int r = 0; r < R; ++r)
      if (r != o) a.ops.push_back({o * C, o, r, OpKind::kCopy, 1, -1, C});
  return a;
}

/// Direct alltoall: one transfer of C chunks per ordered pair, all in step 0.
inline Algorithm direct_alltoall(int R, int C) {
  Algorithm a;
  a.name = "direct_alltoall";
  a.collective = make_collective(CollectiveKind::kAllToAll, R, C);
  for (int s = 0; s < R; ++s)
    for (int d = 0; d < R; ++d)
      if (s != d) a.ops.push_back({(s * R + d) * C, s, d, OpKind::kCopy, 0, -1, C});
  return a;
}

/// Ring alltoall: chunk (s, d) hops along the ring s -> s+1 -> ... -> d, one hop per step.
inline Algorithm ring_alltoall(int R, int C) {
  Algorithm a;
  a.name = "ring_alltoall";
  a.collective = make_collective(CollectiveKind::kAllToAll, R, C);
  for (int s = 0; s < R; ++s)
    for (int d = 0; d < R; ++d)
      for (int h = 0; h < mod(d - s, R); ++h)
        a.ops.push_back(
            {(s * R + d) * C, mod(s + h, R), mod(s + h + 1, R), OpKind::kCopy, h, -1, C});
  return a;
}

/// Pipelined chain broadcast from `root`: chunk c leaves the i-th rank of the chain at step i + c.
inline Algorithm chain_broadcast(int R, int C, int root = 0) {
  Algorithm a;
  a.name = "chain_broadcast";
  a.collective = make_collective(CollectiveKind::kBroadcast, R, C, root);
  for (int i = 0; i + 1 < R; ++i)
    for (int c = 0; c < C; ++c)
      a.ops.push_back({c, mod(root + i, R), mod(root + i + 1, R), OpKind::kCopy, i + c});
  return a;
}

/// Pipelined chain reduce into `root`: the mirror image of chain_broadcast.
inline Algorithm chain_reduce(int R, int C, int root = 0) {
  Algorithm a;
  a.name = "chain_reduce";
  a.collective = make_collective(CollectiveKind::kReduce, R, C, root);
  for (int i = R - 1; i >= 1; --i)
    for (int c = 0; c < C; ++c)
      a.ops.push_back(
          {c, mod(root + i, R), mod(root + i - 1, R), OpKind::kReduce, (R - 1 - i) + c});
  return a;
}

/// Direct gather and scatter through the root.
inline Algorithm direct_gather(int R, int C, int root = 0) {
  Algorithm a;
  a.name = "direct_gather";
  a.collective = make_collective(CollectiveKind::kGather, R, C, root);
  for (int q = 0; q < R; ++q)
    if (q != root) a.ops.push_back({q * C, q, root, OpKind::kCopy, 0, -1, C});
  return a;
}

inline Algorithm direct_scatter(int R, int C, int root = 0) {
  Algorithm a;
  a.name = "direct_scatter";
  a.collective = make_collective(CollectiveKind::kScatter, R, C, root);
  for (int d = 0; d < R; ++d)
    if (d != root) a.ops.push_back({d * C, root, d, OpKind::kCopy, 0, -1, C});
  return a;
}

}  // namespace ccsynth::compiler::testing
