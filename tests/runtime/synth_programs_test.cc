// Programs from the synthesizers (TACOS, SCCL, TACCL), compiled and executed by the CPU runtime
// with the reference check, and the shipped MSCCL XML files (good ones pass, known-defective ones
// fail cleanly).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/algorithm_json.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/runtime/harness.h"
#include "ccsynth/synth/sccl.h"
#include "ccsynth/synth/sketch.h"
#include "ccsynth/synth/taccl.h"
#include "ccsynth/synth/tacos.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::runtime {
namespace {

compiler::CompileOptions relaxed(bool inplace = false, int instances = 1) {
  compiler::CompileOptions o;
  o.inplace = inplace;
  o.instances = instances;
  o.max_steps_per_threadblock = 1 << 14;
  o.max_threadblocks_per_rank = 1 << 14;
  return o;
}

// Runs with check at a couple of sizes; the collective is the algorithm's own.
void expect_runs(const Algorithm& a, const std::string& label, bool inplace = false,
                 int instances = 1) {
  const Program p = compiler::compile(a, relaxed(inplace, instances));
  const int64_t input_chunks = static_cast<int64_t>(a.collective.input_chunks) * instances;
  int variant = 0;
  for (int64_t chunk_elems : {int64_t{3}, int64_t{200}}) {
    HarnessOptions o;
    o.check = true;
    o.iters = 0;
    o.inplace = inplace;
    o.exec.dtype = variant == 0 ? DataType::kFloat32 : DataType::kInt32;
    o.exec.op = variant == 0 ? ReduceOp::kSum : ReduceOp::kMax;
    o.exec.slices = variant == 0 ? 0 : 3;
    o.exec.timeout_s = 20;
    if (instances == 1) o.collective = &a.collective;
    const HarnessResult r = run_program(p, chunk_elems * input_chunks * 4, o);
    EXPECT_TRUE(r.ok) << label << " chunk_elems=" << chunk_elems << ": " << r.message;
    EXPECT_GT(r.checked_elements, 0);
    ++variant;
  }
}

TEST(SynthPrograms, TacosOnSmallTopologies) {
  for (const char* topology : {"ring:4", "mesh2d:2x3", "dgx1", "switch:4"}) {
    const Topology t = topologies::make_builtin(topology);
    for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                                CollectiveKind::kAllReduce, CollectiveKind::kBroadcast}) {
      const synth::TacosResult r = synth::synthesize_tacos(t, make_collective(kind, t.num_ranks));
      const std::string label = std::string("tacos ") + topology + " " + to_string(kind);
      expect_runs(r.algorithm, label);
      if (kind == CollectiveKind::kAllReduce) expect_runs(r.algorithm, label + " in-place", true);
      if (kind == CollectiveKind::kAllGather) expect_runs(r.algorithm, label + " x2", false, 2);
    }
  }
}

TEST(SynthPrograms, ScclTinyInstances) {
  const Topology ring = topologies::make_builtin("ring:4");
  const synth::BandwidthModel m = synth::bandwidth_model(ring);
  struct Instance {
    CollectiveKind kind;
    int chunks, steps, rounds;
  };
  for (const Instance& in : {Instance{CollectiveKind::kAllGather, 1, 2, 2},
                             Instance{CollectiveKind::kAllGather, 2, 2, 3},
                             Instance{CollectiveKind::kBroadcast, 2, 2, 3},
                             Instance{CollectiveKind::kAllReduce, 4, 4, 4}}) {
    synth::SolveOptions so;
    so.time_limit_s = 10;
    const synth::InstanceResult r =
        synth::synthesize_sccl(in.kind, m, in.chunks, in.steps, in.rounds, 0, so);
    ASSERT_TRUE(r.algorithm.has_value()) << to_string(in.kind);
    expect_runs(*r.algorithm, "sccl " + to_string(in.kind));
  }
  const synth::InstanceResult dgx =
      synth::synthesize_sccl(CollectiveKind::kAllGather,
                             synth::bandwidth_model(topologies::make_builtin("dgx1")), 1, 2, 2);
  ASSERT_TRUE(dgx.algorithm.has_value());
  expect_runs(*dgx.algorithm, "sccl dgx1 (1,2,2) allgather");
}

TEST(SynthPrograms, TacclAllgatherFromTheShippedSketch) {
  const Topology t = topologies::make_builtin("ndv2x2");
  const synth::Sketch sketch = synth::read_sketch_file(std::string(CCSYNTH_SOURCE_DIR) +
                                                       "/examples/sketches/ndv2-sk-1.json");
  synth::TacclOptions o;
  o.time_limit_s = 1;
  const synth::TacclResult r = synth::synthesize_taccl(t, sketch, CollectiveKind::kAllGather, o);
  ASSERT_TRUE(r.algorithm.has_value());
  expect_runs(*r.algorithm, "taccl ndv2-sk-1 allgather");
}

TEST(SynthPrograms, ShippedAlgorithmsIncludingACustomCollective) {
  // examples/algorithms: ring allgather/allreduce, a direct alltoall and AllToNext (a custom
  // collective checked through its ChunkSpec pre/post relation).
  const std::filesystem::path dir = std::string(CCSYNTH_SOURCE_DIR) + "/examples/algorithms";
  int custom = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const Algorithm a = formats::read_algorithm_file(entry.path().string());
    custom += a.collective.kind == CollectiveKind::kCustom;
    expect_runs(a, entry.path().filename().string());
  }
  EXPECT_GE(custom, 1);
}

TEST(SynthPrograms, CustomCollectiveWithoutRelationCannotBeChecked) {
  const Algorithm a = formats::read_algorithm_file(std::string(CCSYNTH_SOURCE_DIR) +
                                                   "/examples/algorithms/alltonext_4.json");
  const Program p = compiler::compile(a, relaxed());
  HarnessOptions o;
  o.check = true;
  EXPECT_THROW(run_program(p, 64, o), UserError);
  o.check = false;  // unchecked runs size the buffers from the program
  EXPECT_TRUE(run_program(p, 64, o).ok);
  // A wrong relation (everything to the previous rank instead) fails the check.
  Collective wrong = a.collective;
  for (ChunkSpec& spec : wrong.chunks) {
    for (Slot& s : spec.post) s.rank = (s.rank + 2) % 4;
  }
  o.check = true;
  o.collective = &wrong;
  const HarnessResult r = run_program(p, 64, o);
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.mismatches, 0);
}

// ---- shipped XML files ----------------------------------------------------------------------

HarnessResult run_xml(const std::string& path, bool inplace) {
  const Program p = formats::read_msccl_xml_file(path);
  HarnessOptions o;
  o.check = true;
  o.iters = 1;
  o.inplace = inplace;
  o.exec.slices = 2;
  o.exec.timeout_s = 20;
  int chunks = 0;
  for (const GpuProgram& g : p.gpus)
    chunks = std::max(chunks, std::max(g.input_chunks, g.output_chunks));
  return run_program(p, 4 * 16 * chunks, o);
}

TEST(ShippedXml, GoodFilesPassTheCheck) {
  const std::string dir = std::string(CCSYNTH_SOURCE_DIR) + "/tests/golden/xml/";
  EXPECT_TRUE(run_xml(dir + "ring_allgather_4.executor.xml", false).ok);
  const HarnessResult inplace = run_xml(dir + "ring_allreduce_4_inplace.classic.xml", true);
  EXPECT_TRUE(inplace.ok) << inplace.message;
  const HarnessResult hier = run_xml(dir + "hier_allreduce_ndv2x2.executor.xml", false);
  EXPECT_TRUE(hier.ok) << hier.message;
  // examples/ may ship XML programs too: every one must run and pass.
  const std::filesystem::path examples = std::string(CCSYNTH_SOURCE_DIR) + "/examples";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(examples)) {
    if (entry.path().extension() != ".xml") continue;
    const Program p = formats::read_msccl_xml_file(entry.path().string());
    const HarnessResult r = run_xml(entry.path().string(), !p.outofplace);
    EXPECT_TRUE(r.ok) << entry.path() << ": " << r.message;
  }
}

TEST(ShippedXml, DefectiveFilesFailTheCheckCleanly) {
  const std::string dir = std::string(CCSYNTH_SOURCE_DIR) + "/tests/golden/xml/";
  for (const char* file :
       {"defect_rs_ag_scratch_uninit.executor.xml", "defect_hier_allreduce_dgx1x2.executor.xml"}) {
    const HarnessResult r = run_xml(dir + file, false);
    EXPECT_FALSE(r.ok) << file;
    EXPECT_GT(r.mismatches, 0) << file;
    EXPECT_NE(r.message.find("check failed"), std::string::npos) << file << ": " << r.message;
  }
}

}  // namespace
}  // namespace ccsynth::runtime
