// Every baseline (synth/baselines.h) on several topologies and every built-in collective,
// compiled with compiler::compile and executed by the CPU runtime with the reference check, for
// several sizes, slicings, dtypes and reduction operators, out-of-place and in-place, with one
// and two instances.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::runtime {
namespace {

compiler::CompileOptions relaxed(bool inplace, int instances) {
  compiler::CompileOptions o;
  o.inplace = inplace;
  o.instances = instances;
  o.max_steps_per_threadblock = 1 << 14;
  o.max_threadblocks_per_rank = 1 << 14;
  return o;
}

struct Case {
  synth::BaselineKind kind;
  std::string topology;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string name = synth::to_string(info.param.kind) + "_" + info.param.topology;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// gtest prints a case as "baseline topology".
void PrintTo(const Case& c, std::ostream* os) {
  *os << synth::to_string(c.kind) << " " << c.topology;
}

class BaselineRun : public testing::TestWithParam<Case> {};

// The collective of the matrix of kind `kind` with `chunks` chunks per rank on `t`.
Collective matrix_collective(CollectiveKind kind, int chunks, const Topology& t) {
  return make_collective(kind, t.num_ranks, chunks, t.num_ranks > 2 ? 1 : 0);
}

// Runs `program` for a few sizes and returns how many runs were checked.
// With several instances the program's chunks are finer than the collective's: the collective
// is then taken from the program (verify::collective_of).
int check_sizes(const Program& program, const Collective& c, bool inplace, int instances,
                int variant, const std::string& label) {
  const std::vector<DataType> dtypes = all_data_types();
  const std::vector<ReduceOp> ops = all_reduce_ops();
  struct Size {
    int64_t chunk_elems;
    int slices;
    int fifo_slots;
  };
  // One element (no pipelining), a pipelined odd size, and a larger one. FIFOs have the 8 slots
  // the compiler assumes (CompileOptions::fifo_slots).
  const std::vector<Size> sizes = {{1, 0, 8}, {37, 4, 8}, {1000, 3, 8}};
  int runs = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    HarnessOptions o;
    o.check = true;
    o.iters = 0;
    o.inplace = inplace;
    o.collective = instances == 1 ? &c : nullptr;
    o.exec.dtype = dtypes[(variant + i) % dtypes.size()];
    o.exec.op = ops[(variant / 2 + i) % ops.size()];
    o.exec.slices = sizes[i].slices;
    o.exec.fifo_slots = sizes[i].fifo_slots;
    o.exec.timeout_s = 20;
    o.seed = 7 + i;
    const int64_t bytes = sizes[i].chunk_elems * c.input_chunks * instances * size_of(o.exec.dtype);
    const HarnessResult r = run_program(program, bytes, o);
    EXPECT_TRUE(r.ok) << label << " " << to_string(o.exec.dtype) << " " << to_string(o.exec.op)
                      << " chunk_elems=" << sizes[i].chunk_elems << ": " << r.message;
    EXPECT_GT(r.checked_elements, 0) << label;
    ++runs;
  }
  return runs;
}

TEST_P(BaselineRun, EveryCollectiveRunsCorrectly) {
  const Case& param = GetParam();
  const Topology t = topologies::make_builtin(param.topology);
  int runs = 0;
  int variant = 0;
  for (CollectiveKind kind : builtin_collective_kinds()) {
    for (int chunks : {1, 2}) {
      const Collective c = matrix_collective(kind, chunks, t);
      if (!synth::baseline_inapplicable_reason(param.kind, c, t).empty()) continue;
      const Algorithm a = synth::make_baseline(param.kind, c, t);
      for (bool inplace : {false, true}) {
        for (int instances : {1, 2}) {
          if (instances == 2 && (inplace || chunks == 2)) continue;  // keep the matrix small
          const std::string label = to_string(kind) + " C=" + std::to_string(chunks) +
                                    (inplace ? " in-place" : "") +
                                    " instances=" + std::to_string(instances);
          Program p;
          try {
            p = compiler::compile(a, relaxed(inplace, instances));
          } catch (const UserError& e) {
            ADD_FAILURE() << label << ": compile failed: " << e.what();
            continue;
          }
          runs += check_sizes(p, c, inplace, instances, variant++, label);
        }
      }
    }
  }
  EXPECT_GT(runs, 0);
}

// Whether baseline `kind` builds some collective of the matrix on `topology`.
bool builds_some_collective(synth::BaselineKind kind, const std::string& topology) {
  const Topology t = topologies::make_builtin(topology);
  for (CollectiveKind collective : builtin_collective_kinds()) {
    for (int chunks : {1, 2}) {
      const Collective c = matrix_collective(collective, chunks, t);
      if (synth::baseline_inapplicable_reason(kind, c, t).empty()) return true;
    }
  }
  return false;
}

// Every baseline on every topology, except the pairs where the baseline builds no collective.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (synth::BaselineKind kind : synth::all_baseline_kinds()) {
    for (const char* topology : {"ring:4", "uring:3", "dgx1", "mesh2d:2x3", "switch:4",
                                 "hypercube:3", "line:4", "dgx1x2"}) {
      if (builds_some_collective(kind, topology)) out.push_back({kind, topology});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllBaselines, BaselineRun, testing::ValuesIn(cases()), case_name);

// The MSCCLang sec. 7 programs on the clusters they were made for: the hierarchical allreduce
// (both parallelizations), the two-step alltoall on three nodes, and AllToNext with one chunk
// per GPU of a node, cooperative (sec. 7.4) and direct; out-of-place and in-place.
TEST(BaselineRunMultiNode, MsccLangProgramsRunCorrectly) {
  struct Item {
    synth::BaselineKind kind;
    std::string topology;
    Collective collective;
    int parallel = 0;
  };
  const std::vector<Item> items = {
      {synth::BaselineKind::kHier, "ndv4x2", make_collective(CollectiveKind::kAllReduce, 16), 0},
      {synth::BaselineKind::kHier, "ndv4x2", make_collective(CollectiveKind::kAllReduce, 16), 1},
      {synth::BaselineKind::kTwoStep, "ndv4x3", make_collective(CollectiveKind::kAllToAll, 24)},
      {synth::BaselineKind::kCooperative, "ndv4x3", make_alltonext(24, 8)},
      {synth::BaselineKind::kDirect, "ndv4x3", make_alltonext(24, 8)},
  };
  int variant = 0;
  for (const Item& item : items) {
    const Topology t = topologies::make_builtin(item.topology);
    synth::BaselineOptions o;
    o.parallel = item.parallel;
    const Algorithm a = synth::make_baseline(item.kind, item.collective, t, o);
    for (bool inplace : {false, true}) {
      const std::string label = synth::to_string(item.kind) + " " + item.collective.name + " on " +
                                item.topology + (inplace ? " in-place" : "");
      Program p;
      try {
        p = compiler::compile(a, relaxed(inplace, 1));
      } catch (const UserError& e) {
        ADD_FAILURE() << label << ": compile failed: " << e.what();
        continue;
      }
      EXPECT_EQ(check_sizes(p, item.collective, inplace, 1, variant++, label), 3);
    }
  }
}

}  // namespace
}  // namespace ccsynth::runtime
