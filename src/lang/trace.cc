// Lowering a traced DSL program to an Algorithm (docs/lang.md "Tracing"). The Algorithm IR
// keeps one value of each chunk per rank (core/algorithm.h), while a DSL program may hold
// several partial values of one chunk on a rank (e.g. in a scratch buffer, to reduce them
// locally later). Each rank's Algorithm value is the most complete partial it holds: a remote
// copy of a disjoint partial into a rank that already holds one becomes a remote reduce (the
// local reduction the program does later is then already done), and local copies and
// reductions need no op. Programs whose partials cannot be ordered that way are rejected with
// the operation that breaks it.

#include <algorithm>
#include <map>
#include <numeric>

#include "ccsynth/core/error.h"
#include "ccsynth/lang/program.h"
#include "lang/state.h"

namespace ccsynth::lang {

namespace {

std::string text(int value) { return std::to_string(value); }

bool includes_all(const std::vector<int>& big, const std::vector<int>& small) {
  return std::includes(big.begin(), big.end(), small.begin(), small.end());
}

std::string parts_text(const std::vector<int>& parts) {
  return text(static_cast<int>(parts.size())) + " contributions";
}

/// What the Algorithm holds of one chunk on one rank.
struct Held {
  bool present = false;
  std::vector<int> parts;
};

/// When a rank's sub-chunk was last written and read, in Algorithm steps.
struct StepMarks {
  int written = -1;
  bool written_by_copy = true;
  int read = -1;
};

/// The Algorithm being built, with the state its step numbering needs.
class AlgorithmBuilder {
 public:
  AlgorithmBuilder(const Collective& collective, int factor, InstanceLayout layout)
      : collective_(collective), factor_(factor), layout_(layout) {
    for (int k = 0; k < collective.num_chunks(); ++k) {
      const auto& pre = collective.chunks[k].pre;
      for (int j = 0; j < static_cast<int>(pre.size()); ++j) {
        Held& h = held_[{pre[j].rank, k}];
        h.present = true;
        if (collective.combining) h.parts.push_back(j);
      }
    }
  }

  void add(const Operation& op, const TracedValues& traced) {
    if (!op.remote()) return;
    std::vector<OpKind> kinds;
    for (int o = 0; o < op.count; ++o) kinds.push_back(kind_of(op, traced.src[o]));
    const int step = step_of(op, traced, kinds);
    emit(op, traced, kinds, step);
    for (int o = 0; o < op.count; ++o) update(op, traced.src[o], kinds[o], step);
  }

  std::vector<ChunkOp> take_ops() { return std::move(ops_); }

 private:
  // The Algorithm op for one chunk of a remote DSL operation (see the file comment).
  OpKind kind_of(const Operation& op, const Value& v) {
    if (!collective_.combining) return OpKind::kCopy;
    const Held& src = held_[{op.src_rank, v.chunk}];
    if (src.parts != v.parts) {
      throw UserError(op.where, op_name(op.kind),
                      "rank " + text(op.src_rank) + " sends chunk " + text(v.chunk) + " with " +
                          parts_text(v.parts) + " while it holds a partial with " +
                          parts_text(src.parts) +
                          " elsewhere; the Algorithm IR keeps one value of a chunk per rank, "
                          "so send the most complete partial");
    }
    const Held& dst = held_[{op.dst_rank, v.chunk}];
    if (op.kind == OpKind::kCopy && (!dst.present || includes_all(v.parts, dst.parts))) {
      return OpKind::kCopy;
    }
    if (dst.present && disjoint(v.parts, dst.parts)) return OpKind::kReduce;
    throw UserError(op.where, op_name(op.kind),
                    "rank " + text(op.dst_rank) + " holds chunk " + text(v.chunk) + " with " +
                        parts_text(dst.parts) + ", which overlaps the " + parts_text(v.parts) +
                        " arriving without containing them; the Algorithm IR keeps one value "
                        "of a chunk per rank");
  }

  // Earliest step at which the op reads its source after it was written and writes its
  // destination after every earlier read and write (synchronous steps, core/algorithm.h).
  int step_of(const Operation& op, const TracedValues& traced, const std::vector<OpKind>& kinds) {
    int step = 0;
    for (int o = 0; o < op.count; ++o) {
      for (int j = 0; j < factor_; ++j) {
        const int sub = traced.src[o].chunk * factor_ + j;
        const StepMarks& src = marks_[{op.src_rank, sub}];
        const StepMarks& dst = marks_[{op.dst_rank, sub}];
        step = std::max(step, src.written + 1);
        if (kinds[o] == OpKind::kCopy) {
          step = std::max({step, dst.written + 1, dst.read});
        } else {
          step = std::max(step, dst.written + (dst.written_by_copy ? 1 : 0));
        }
      }
    }
    return step;
  }

  void update(const Operation& op, const Value& v, OpKind kind, int step) {
    Held& dst = held_[{op.dst_rank, v.chunk}];
    dst.parts = kind == OpKind::kCopy ? v.parts : merged(dst.parts, v.parts);
    dst.present = true;
    for (int j = 0; j < factor_; ++j) {
      const int sub = v.chunk * factor_ + j;
      StepMarks& d = marks_[{op.dst_rank, sub}];
      d.written = step;
      d.written_by_copy = kind == OpKind::kCopy;
      StepMarks& s = marks_[{op.src_rank, sub}];
      s.read = std::max(s.read, step);
    }
  }

  // One ChunkOp per run of consecutive chunks of one kind and per parallel instance: the run's
  // sub-chunks are consecutive, and instance i takes the i-th contiguous 1/N of them, so each
  // instance still moves one aggregated block (MSCCLang sec. 5.1: every instance operates on
  // 1/N of the data).
  void emit(const Operation& op, const TracedValues& traced, const std::vector<OpKind>& kinds,
            int step) {
    const int instances = op.parallel;
    for (int o = 0; o < op.count;) {
      int run = 1;
      while (o + run < op.count && traced.src[o + run].chunk == traced.src[o].chunk + run &&
             kinds[o + run] == kinds[o]) {
        ++run;
      }
      const int slice = run * factor_ / instances;
      for (int i = 0; i < instances; ++i) {
        ChunkOp c;
        c.src = op.src_rank;
        c.dst = op.dst_rank;
        c.step = step;
        c.kind = kinds[o];
        c.chunk = traced.src[o].chunk * factor_ + i * slice;
        c.count = slice;
        c.channel = layout_.channel(op.directives.channel, instances, i);
        c.send_tb = layout_.threadblock(op.directives.sendtb, instances, i);
        c.recv_tb = layout_.threadblock(op.directives.recvtb, instances, i);
        check_limits(op, c);
        ops_.push_back(c);
      }
      o += run;
    }
  }

  // The instances' channels and threadblocks must stay within the runtime's limits.
  static void check_limits(const Operation& op, const ChunkOp& c) {
    if (c.channel >= kMaxChannels) {
      throw UserError(op.where, op_name(op.kind),
                      "parallelize(" + text(op.parallel) + ") needs channel " + text(c.channel) +
                          ", over the runtime's " + text(kMaxChannels) +
                          " channels (instance i of channel c uses c + i * (largest channel + 1))");
    }
    if (std::max(c.send_tb, c.recv_tb) >= kMaxThreadblocks) {
      throw UserError(op.where, op_name(op.kind),
                      "parallelize(" + text(op.parallel) + ") needs threadblock " +
                          text(std::max(c.send_tb, c.recv_tb)) + ", over the runtime's " +
                          text(kMaxThreadblocks));
    }
  }

  const Collective& collective_;
  int factor_;
  InstanceLayout layout_;
  std::map<std::pair<int, int>, Held> held_;        // (rank, chunk)
  std::map<std::pair<int, int>, StepMarks> marks_;  // (rank, sub-chunk)
  std::vector<ChunkOp> ops_;
};

}  // namespace

Collective refine(const Collective& collective, int factor) {
  if (factor == 1) return collective;
  Collective out = collective;
  out.chunks_per_rank *= factor;
  out.input_chunks *= factor;
  out.output_chunks *= factor;
  out.chunks.clear();
  for (const ChunkSpec& spec : collective.chunks) {
    for (int j = 0; j < factor; ++j) {
      ChunkSpec sub;
      for (const Slot& s : spec.pre) sub.pre.push_back({s.rank, s.index * factor + j});
      for (const Slot& s : spec.post) sub.post.push_back({s.rank, s.index * factor + j});
      out.chunks.push_back(std::move(sub));
    }
  }
  return out;
}

Algorithm DslProgram::to_algorithm() const {
  check();
  int factor = 1;
  for (const Operation& op : operations_) factor = std::lcm(factor, op.parallel);
  InstanceLayout layout;
  for (const Operation& op : operations_) {
    layout.channel_stride = std::max(layout.channel_stride, op.directives.channel + 1);
    layout.threadblock_stride =
        std::max({layout.threadblock_stride, op.directives.sendtb + 1, op.directives.recvtb + 1});
  }
  AlgorithmBuilder builder(collective_, factor, layout);
  for (size_t n = 0; n < operations_.size(); ++n) builder.add(operations_[n], state_->traced[n]);
  Algorithm algorithm;
  algorithm.name = options_.name;
  algorithm.topology = options_.topology;
  algorithm.collective = refine(collective_, factor);
  algorithm.ops = builder.take_ops();
  // Steps ascending; within a step the program's order, which the compiler's buffer layout
  // and aggregation follow.
  std::stable_sort(algorithm.ops.begin(), algorithm.ops.end(),
                   [](const ChunkOp& a, const ChunkOp& b) { return a.step < b.step; });
  return algorithm;
}

}  // namespace ccsynth::lang
