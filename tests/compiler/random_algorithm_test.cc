// Property test: random correct algorithms (random reduction and distribution trees with random
// steps, relays and channel hints) for every built-in collective compile into programs that
// verify, in-place and out-of-place, with instances, tight FIFOs and short threadblocks.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/instances.h"
#include "ccsynth/core/error.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"
#include "compiler/instruction_generation.h"
#include "compiler/scheduling.h"

namespace ccsynth::compiler {
namespace {

class RandomAlgorithm {
 public:
  explicit RandomAlgorithm(unsigned seed) : rng_(seed) {}

  Algorithm make(const Collective& c) {
    Algorithm a;
    a.name = "random";
    a.collective = c;
    for (int k = 0; k < c.num_chunks(); k += count_) {
      // Sometimes two chunks with the same ranks travel together as one op (count 2).
      count_ = k + 1 < c.num_chunks() && c.pre_ranks(k) == c.pre_ranks(k + 1) &&
                       c.post_ranks(k) == c.post_ranks(k + 1) && uniform(0, 2) == 0
                   ? 2
                   : 1;
      if (c.combining) {
        add_combining(a, k);
      } else {
        add_copies(a, k);
      }
    }
    sort_ops(a);
    return a;
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  void add(Algorithm& a, int k, int src, int dst, OpKind kind, int step) {
    ChunkOp op{k, src, dst, kind, step, -1, count_};
    if (uniform(0, 3) == 0) op.channel = uniform(0, 2);
    a.ops.push_back(op);
  }

  // Non-combining: a random tree from the pre rank to every post rank, possibly via relays.
  void add_copies(Algorithm& a, int k) {
    const Collective& c = a.collective;
    std::vector<int> hold(c.num_ranks, -1);  // step from which the rank holds the chunk
    hold[c.chunks[k].pre.front().rank] = 0;
    std::vector<int> targets = c.post_ranks(k);
    std::shuffle(targets.begin(), targets.end(), rng_);
    for (int t : targets) {
      if (hold[t] >= 0) continue;
      if (uniform(0, 2) == 0) {  // through a relay first
        const int relay = uniform(0, c.num_ranks - 1);
        if (hold[relay] < 0) copy_from_holder(a, k, hold, relay);
      }
      if (hold[t] < 0) copy_from_holder(a, k, hold, t);
    }
  }

  void copy_from_holder(Algorithm& a, int k, std::vector<int>& hold, int dst) {
    std::vector<int> holders;
    for (int r = 0; r < static_cast<int>(hold.size()); ++r)
      if (hold[r] >= 0) holders.push_back(r);
    const int src = holders[uniform(0, static_cast<int>(holders.size()) - 1)];
    const int step = hold[src] + uniform(0, 2);
    add(a, k, src, dst, OpKind::kCopy, step);
    hold[dst] = step + 1;
  }

  // Combining: a random reduction tree into one post rank, then copies to the other post ranks.
  void add_combining(Algorithm& a, int k) {
    const Collective& c = a.collective;
    std::vector<int> contributors = c.pre_ranks(k);
    std::vector<int> posts = c.post_ranks(k);
    const int root = posts[uniform(0, static_cast<int>(posts.size()) - 1)];
    std::shuffle(contributors.begin(), contributors.end(), rng_);
    std::iter_swap(contributors.begin(), std::find(contributors.begin(), contributors.end(), root));
    const int n = static_cast<int>(contributors.size());
    std::vector<int> parent(n, -1), ready(n, 0), sent(c.num_ranks, 0);
    for (int i = 1; i < n; ++i) parent[i] = uniform(0, i - 1);
    for (int i = n - 1; i >= 1; --i) {  // children before parents
      const int step = ready[i] + uniform(0, 1);
      add(a, k, contributors[i], contributors[parent[i]], OpKind::kReduce, step);
      sent[contributors[i]] = step;
      ready[parent[i]] = std::max(ready[parent[i]], step + 1);
    }
    std::vector<int> hold(c.num_ranks, -1);
    hold[root] = ready[0];
    std::shuffle(posts.begin(), posts.end(), rng_);
    for (int p : posts) {
      if (hold[p] >= 0) continue;
      std::vector<int> holders;
      for (int r = 0; r < c.num_ranks; ++r)
        if (hold[r] >= 0) holders.push_back(r);
      const int src = holders[uniform(0, static_cast<int>(holders.size()) - 1)];
      // Never overwrite a partial before it was sent on (same step is fine: reads come first).
      const int step = std::max(hold[src], sent[p]) + uniform(0, 1);
      add(a, k, src, p, OpKind::kCopy, step);
      hold[p] = step + 1;
    }
  }

  std::mt19937 rng_;
  int count_ = 1;
};

// Consistent threadblock hints: on every rank, the send to r + d and the receive from r - d on
// channel c share threadblock d + R * c (often more than the rank has, so they are renumbered).
Algorithm with_threadblock_hints(Algorithm a) {
  const int R = a.collective.num_ranks;
  for (ChunkOp& op : a.ops) {
    op.send_tb = op.recv_tb = (op.dst - op.src + R) % R + R * std::max(op.channel, 0);
  }
  return a;
}

class RandomCompile : public ::testing::TestWithParam<int> {};

TEST_P(RandomCompile, CompiledRandomAlgorithmVerifies) {
  const int seed = GetParam();
  RandomAlgorithm gen(seed);
  const auto kinds = builtin_collective_kinds();
  const CollectiveKind kind = kinds[seed % kinds.size()];
  const int R = gen.uniform(2, 6);
  const int C = gen.uniform(1, 3);
  const Collective coll = make_collective(kind, R, C, gen.uniform(0, R - 1));
  Algorithm a = gen.make(coll);
  const auto algo_report = verify::verify_algorithm(a);
  ASSERT_TRUE(algo_report.ok()) << algo_report.summary() << a;

  CompileOptions o;
  o.inplace = gen.uniform(0, 1) == 1;
  o.instances = gen.uniform(1, 2);
  o.fifo_slots = gen.uniform(2, 8);
  o.aggregate = gen.uniform(0, 3) != 0;
  o.fuse = gen.uniform(0, 5) != 0;
  if (gen.uniform(0, 3) == 0) o.max_steps_per_threadblock = gen.uniform(6, 12);
  if (gen.uniform(0, 2) == 0) a = with_threadblock_hints(a);
  Program p;
  try {
    p = compile(a, o);
  } catch (const UserError& e) {
    // Only the limits may refuse a correct algorithm, and only short threadblocks are limited.
    ASSERT_LT(o.max_steps_per_threadblock, 64)
        << e.what() << " fifo=" << o.fifo_slots << " instances=" << o.instances
        << " in-place=" << o.inplace << "\n"
        << a;
    return;
  }
  const Collective fine = replicate_collective(coll, o.instances);
  verify::VerifyProgramOptions vo;
  vo.collective = &fine;
  vo.fifo_slots = o.fifo_slots;
  const auto report = verify::verify_program(p, vo);
  EXPECT_TRUE(report.ok()) << to_string(kind) << " R=" << R << " C=" << C
                           << (o.inplace ? " in-place" : "") << " instances=" << o.instances
                           << " fifo=" << o.fifo_slots << " aggregate=" << o.aggregate
                           << " fuse=" << o.fuse << "\n"
                           << report.summary() << a << p;
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomCompile, ::testing::Range(0, 400),
                         [](const auto& info) { return "Seed" + std::to_string(info.param); });

// A schedule at the executor's step limit, or the reason it failed.
struct Scheduled {
  std::optional<Program> program;
  std::string error;
};

// Whether two lowerings are the same in every field scheduling may change.
bool same_lowering(const Lowered& a, const Lowered& b) {
  return a.instructions == b.instructions && a.transfers == b.transfers &&
         a.threadblocks == b.threadblocks && a.scratch_chunks == b.scratch_chunks;
}

// Schedules `l` in place; checks that it is given back as it came, also after an error.
Scheduled schedule_with(Lowered& l, const SchedulingIndex& index, const CompileOptions& o,
                        Rescheduling rescheduling) {
  const Lowered before = l;
  Relocations relocations;
  Scheduled out;
  try {
    out.program = schedule(l, index, o.max_steps_per_threadblock, o, relocations, rescheduling);
  } catch (const UserError& e) {
    out.error = e.what();
  }
  EXPECT_TRUE(same_lowering(l, before)) << "the lowering was not given back";
  return out;
}

// A deadlock-fix round schedules again only the ranks whose decisions the fixes changed: the
// same programs as scheduling every rank again. Tight FIFOs (1 slot) make the fixes happen;
// the programs must then differ from the ones scheduled with 8 slots in many seeds.
TEST(RandomScheduling, ReschedulingTheChangedRanksMatchesReschedulingEveryRank) {
  int fixed = 0;
  for (int seed = 0; seed < 300; ++seed) {
    RandomAlgorithm gen(seed);
    const auto kinds = builtin_collective_kinds();
    const CollectiveKind kind = kinds[seed % kinds.size()];
    const int R = gen.uniform(3, 8);
    const Collective coll = make_collective(kind, R, gen.uniform(1, 6), gen.uniform(0, R - 1));
    const Algorithm a = gen.make(coll);
    CompileOptions o;
    o.fifo_slots = 1;
    o.fuse = true;
    Lowered l = generate_instructions(a, gen.uniform(0, 1) == 1);
    const SchedulingIndex index = index_for_scheduling(l, o.fuse);
    const Scheduled changed = schedule_with(l, index, o, Rescheduling::kChangedRanks);
    const Scheduled every = schedule_with(l, index, o, Rescheduling::kEveryRank);
    EXPECT_EQ(changed.error, every.error) << "seed " << seed;
    ASSERT_EQ(changed.program.has_value(), every.program.has_value()) << "seed " << seed;
    if (!changed.program) continue;
    EXPECT_TRUE(*changed.program == *every.program) << "seed " << seed;
    o.fifo_slots = 8;
    const Scheduled roomy = schedule_with(l, index, o, Rescheduling::kChangedRanks);
    if (roomy.program && !(*roomy.program == *changed.program)) ++fixed;
  }
  EXPECT_GT(fixed, 10);
}

}  // namespace
}  // namespace ccsynth::compiler
