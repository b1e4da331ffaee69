#include "ccsynth/compiler/instances.h"

#include <algorithm>
#include <vector>

namespace ccsynth::compiler {

namespace {

// Subchunk `j` (of a cnt-long step) of instance `i`: coarse chunk c becomes c*N + i.
int fine(int offset, int j, int instances, int instance) {
  return offset < 0 ? offset : (offset + j) * instances + instance;
}

// Expands one threadblock for `instance`; `first`/`last` map old step indices to new ones.
Threadblock expand(const Threadblock& tb, int instances, int instance, int num_tbs,
                   int num_channels, std::vector<int>& first, std::vector<int>& last) {
  Threadblock out;
  out.id = instance * num_tbs + tb.id;
  out.send_peer = tb.send_peer;
  out.recv_peer = tb.recv_peer;
  const bool local = tb.send_peer < 0 && tb.recv_peer < 0;
  out.channel = local ? tb.channel : tb.channel + instance * num_channels;
  for (const Step& s : tb.steps) {
    first.push_back(static_cast<int>(out.steps.size()));
    const int pieces = s.type == StepType::kNop ? 1 : std::max(s.count, 1);
    for (int j = 0; j < pieces; ++j) {
      Step e = s;
      if (s.type != StepType::kNop) {
        e.count = 1;
        e.src_offset = fine(s.src_offset, j, instances, instance);
        e.dst_offset = fine(s.dst_offset, j, instances, instance);
      }
      if (j > 0) e.dep_tb = e.dep_step = -1;  // the first piece waits for the dependency
      e.has_dep = false;
      out.steps.push_back(e);
    }
    last.push_back(static_cast<int>(out.steps.size()) - 1);
  }
  return out;
}

}  // namespace

Program replicate_instances(Program program, int instances) {
  if (instances <= 1) return program;  // moved out: one copy less of a million-step program
  Program out = program;
  out.num_channels = program.num_channels * instances;
  out.chunks_per_loop = program.chunks_per_loop * instances;
  for (GpuProgram& gpu : out.gpus) {
    const GpuProgram& src = program.gpus[gpu.rank];
    gpu.input_chunks *= instances;
    gpu.output_chunks *= instances;
    gpu.scratch_chunks *= instances;
    gpu.threadblocks.clear();
    const int num_tbs = static_cast<int>(src.threadblocks.size());
    for (int i = 0; i < instances; ++i) {
      std::vector<std::vector<int>> first(num_tbs), last(num_tbs);
      for (const Threadblock& tb : src.threadblocks) {
        gpu.threadblocks.push_back(
            expand(tb, instances, i, num_tbs, program.num_channels, first[tb.id], last[tb.id]));
      }
      // Dependencies point into the same instance, at the last piece of the old step.
      for (int t = 0; t < num_tbs; ++t) {
        for (Step& s : gpu.threadblocks[i * num_tbs + t].steps) {
          if (s.dep_tb < 0) continue;
          const int old_tb = s.dep_tb;
          s.dep_step = last[old_tb][s.dep_step];
          s.dep_tb = i * num_tbs + old_tb;
          gpu.threadblocks[s.dep_tb].steps[s.dep_step].has_dep = true;
        }
      }
    }
  }
  return out;
}

Collective replicate_collective(const Collective& c, int instances) {
  if (instances <= 1) return c;
  Collective out = c;
  out.chunks_per_rank = c.chunks_per_rank * instances;
  out.input_chunks = c.input_chunks * instances;
  out.output_chunks = c.output_chunks * instances;
  out.chunks.clear();
  auto scale = [&](const std::vector<Slot>& slots, int i) {
    std::vector<Slot> fine;
    for (const Slot& s : slots) fine.push_back({s.rank, s.index * instances + i});
    return fine;
  };
  // Fine chunk k*N + i is subchunk i of chunk k (the order make_collective numbers them in).
  for (const ChunkSpec& spec : c.chunks) {
    for (int i = 0; i < instances; ++i)
      out.chunks.push_back({scale(spec.pre, i), scale(spec.post, i)});
  }
  return out;
}

}  // namespace ccsynth::compiler
