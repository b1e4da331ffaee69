#pragma once
// Hand-written MSCCL-IR programs shared by the XML and verifier tests: ring allgather and ring
// allreduce with one threadblock per rank (send to r+1, receive from r-1, channel 0).

#include <string>

#include "ccsynth/core/program.h"

namespace ccsynth::testing {

/// A step with only the fields the ring programs need.
inline Step make_step(StepType type, Buffer src, int src_off, Buffer dst, int dst_off,
                      int count = 1, int dep_tb = -1, int dep_step = -1) {
  Step s;
  s.type = type;
  s.src_buffer = src;
  s.src_offset = src_off;
  s.dst_buffer = dst;
  s.dst_offset = dst_off;
  s.count = count;
  s.dep_tb = dep_tb;
  s.dep_step = dep_step;
  return s;
}

inline int mod(int a, int n) { return ((a % n) + n) % n; }

/// Program skeleton: `n` ranks, one ring threadblock per rank, buffers as given.
inline Program ring_skeleton(const std::string& name, CollectiveKind kind, int n, bool inplace,
                             int input_chunks, int output_chunks) {
  Program p;
  p.name = name;
  p.collective = kind;
  p.num_ranks = n;
  p.inplace = inplace;
  p.outofplace = !inplace;
  p.chunks_per_loop = std::max(input_chunks, output_chunks);
  for (int r = 0; r < n; ++r) {
    GpuProgram g;
    g.rank = r;
    g.input_chunks = input_chunks;
    g.output_chunks = output_chunks;
    Threadblock tb;
    tb.id = 0;
    tb.send_peer = mod(r + 1, n);
    tb.recv_peer = mod(r - 1, n);
    g.threadblocks.push_back(tb);
    p.gpus.push_back(g);
  }
  return p;
}

/// Ring allgather: at time t rank r forwards chunk (r - t) mod n. Out-of-place first copies
/// its input into o[r]; in-place programs use only the output buffer (docs/formats.md `<gpu>`).
inline Program ring_allgather(int n, bool inplace) {
  Program p = ring_skeleton(inplace ? "ring_allgather_inplace" : "ring_allgather",
                            CollectiveKind::kAllGather, n, inplace, inplace ? 0 : 1, n);
  for (int r = 0; r < n; ++r) {
    auto& steps = p.gpus[r].threadblocks[0].steps;
    const Buffer own = inplace ? Buffer::kOutput : Buffer::kInput;
    const int own_off = inplace ? r : 0;
    steps.push_back(make_step(StepType::kSend, own, own_off, Buffer::kOutput, r));
    if (!inplace) {
      steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, r));
    }
    for (int t = 1; t < n; ++t) {
      const int j = mod(r - t, n);
      const StepType type = t == n - 1 ? StepType::kRecv : StepType::kRecvCopySend;
      steps.push_back(make_step(type, Buffer::kOutput, j, Buffer::kOutput, j));
    }
  }
  return p;
}

/// Ring allreduce with n chunks: reduce-scatter (s, rrs..., rrcs) then allgather (rcs..., r);
/// at time t rank r handles chunk (r - t) mod n. Out-of-place copies the input into the output
/// first and works there; in-place works in the input buffer only.
inline Program ring_allreduce(int n, bool inplace) {
  Program p = ring_skeleton(inplace ? "ring_allreduce_inplace" : "ring_allreduce",
                            CollectiveKind::kAllReduce, n, inplace, n, inplace ? 0 : n);
  const Buffer b = inplace ? Buffer::kInput : Buffer::kOutput;
  for (int r = 0; r < n; ++r) {
    auto& steps = p.gpus[r].threadblocks[0].steps;
    if (!inplace) steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, b, 0, n));
    for (int t = 0; t <= 2 * n - 2; ++t) {
      const int j = mod(r - t, n);
      StepType type = StepType::kRecvCopySend;
      if (t == 0)
        type = StepType::kSend;
      else if (t < n - 1)
        type = StepType::kRecvReduceSend;
      else if (t == n - 1)
        type = StepType::kRecvReduceCopySend;
      else if (t == 2 * n - 2)
        type = StepType::kRecv;
      steps.push_back(make_step(type, b, j, b, j));
    }
  }
  return p;
}

}  // namespace ccsynth::testing
