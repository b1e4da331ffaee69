// End-to-end tests of the `ccsynth` executable: each runs the real binary, checks its exit code
// and parses its --json output; every XML it writes is checked again with `ccsynth verify`.

#include "cli_fixture.h"

namespace {

using namespace cli_test;
namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(Cli, HelpListsEveryVerb) {
  const CliRun r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* verb : {"demo", "topo", "synth", "verify", "simulate", "bounds", "compile",
                           "baseline", "pareto", "run", "tune"}) {
    EXPECT_NE(r.out.find(std::string("  ") + verb + " "), std::string::npos) << verb;
  }
}

TEST_F(Cli, NoVerbAndUnknownFlagAreBadInput) {
  EXPECT_EQ(run("").exit_code, 2);
  EXPECT_EQ(run("synth --method tacos -t dgx1 --no-such-flag").exit_code, 2);
  const CliRun zero = run("synth --method tacos -t dgx1 --instances 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--instances: must be > 0, got '0'"), std::string::npos) << zero.err;
}

// A flag of another method is an error naming the flag and its owner, never silently ignored.
TEST_F(Cli, FlagsOfAnotherMethodAreBadInput) {
  const CliRun steps = run("synth --method tacos -t dgx1 --steps 5");
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_NE(steps.err.find("--steps: is a flag of sccl, not of tacos"), std::string::npos)
      << steps.err;
  const CliRun sketch = run("synth --method sccl -t dgx1 --sketch x.json");
  EXPECT_EQ(sketch.exit_code, 2);
  EXPECT_NE(sketch.err.find("taccl"), std::string::npos) << sketch.err;
  const CliRun limit = run("synth --method tacos -t dgx1 --time-limit 5");
  EXPECT_EQ(limit.exit_code, 2);
  EXPECT_NE(limit.err.find("--time-limit"), std::string::npos) << limit.err;
  const CliRun pipeline = run("baseline --algo ring -c allgather -t ring:4 -o x.xml --pipeline 2");
  EXPECT_EQ(pipeline.exit_code, 2);
  EXPECT_NE(pipeline.err.find("--pipeline: is a flag of dbt, chain, tree, not of ring"),
            std::string::npos)
      << pipeline.err;
  const CliRun type = run("synth --method tacos -t dgx1 --trials many");
  EXPECT_EQ(type.exit_code, 2);
  EXPECT_NE(type.err.find("--trials"), std::string::npos) << type.err;
}

// One spelling per concept: the old spellings are gone everywhere.
// A program over the runtime's limits is bad input that names what was over and what may fit.
TEST_F(Cli, OverTheRuntimeLimitsNamesWhatMayFit) {
  const CliRun r =
      run("baseline --algo ring -c allgather -t ring:4 --chunks 32 --instances 32 -o x.xml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("transfers 0 -> 3 need more than 1 channels of at most 64 steps each"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: over the runtime's limits"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--xml-dialect classic"), std::string::npos) << r.err;
  const CliRun other = run("synth --method tacos -t dgx1 --instances 0");
  EXPECT_EQ(other.err.find("hint:"), std::string::npos) << other.err;  // only where it applies
}

TEST_F(Cli, OneSpellingPerConcept) {
  EXPECT_EQ(run("bounds -t dgx1 -c allgather --size 1M --protocol LL").exit_code, 2);
  EXPECT_EQ(run("bounds -t dgx1 -c allgather --size 1M --proto LL --json").exit_code, 0);
  EXPECT_EQ(run("synth --method tacos -t dgx1 --chunks-per-rank 2").exit_code, 2);
  const std::string algo = kSource + "/examples/algorithms/ring_allgather_4.json";
  EXPECT_EQ(run("compile " + algo + " -o " + path("a.xml") + " --max-steps 4").exit_code, 2);
  const CliRun limit =
      run("compile " + algo + " -o " + path("a.xml") + " --max-threadblocks-per-rank 1");
  EXPECT_EQ(limit.exit_code, 2) << "a ring needs a send and a receive threadblock";
  EXPECT_NE(limit.err.find("threadblocks"), std::string::npos) << limit.err;
}

// `baseline --algo ring` without flags is NCCL's ring: every edge-disjoint ring, the data split
// over them, both directions where the links allow (one ring with one chunk used to be 2.1x
// the bound on ring:16 and 4.2x on torus2d:4x4 at 64 MB).
TEST_F(Cli, RingBaselineDefaultsToEveryRingInBothDirections) {
  for (const std::string topology : {"ring:16", "torus2d:4x4"}) {
    const std::string xml = path("nccl_ring.xml");
    const CliRun b = run("baseline --algo ring -c allgather -t " + topology + " --json -o " + xml);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_GE(b.doc()["chunks_per_rank"].get<int>(), 2) << topology;
    const CliRun s = run("simulate " + xml + " -t " + topology + " --size 64M --json");
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json r = s.doc()["results"][0];
    EXPECT_LT(r["time_us"].get<double>(), 1.1 * r["lower_bound_us"].get<double>()) << topology;
    const CliRun one_way =
        run("baseline --algo ring -c allgather -t " + topology + " --one-way --json -o " + xml);
    ASSERT_EQ(one_way.exit_code, 0) << one_way.err;
  }
  const CliRun both =
      run("baseline --algo ring -c allgather -t ring:8 --bidirectional --one-way "
          "-o " +
          path("x.xml"));
  EXPECT_EQ(both.exit_code, 2);
}

TEST_F(Cli, BaselineVerifySimulateChain) {
  const std::string xml = path("ring.xml");
  const CliRun b = run("baseline --algo ring -c allgather -t dgx1 --chunks 6 -o " + xml);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  expect_verified(xml);
  const CliRun s = run("simulate " + xml + " -t dgx1 --size 1K,1G --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const json results = s.doc()["results"];
  ASSERT_EQ(results.size(), 2u);
  for (const json& r : results) {
    EXPECT_GE(r["time_us"].get<double>(), r["lower_bound_us"].get<double>() * 0.999) << r;
  }
  // Six rings on DGX-1's six lanes per GPU come within 10% of the bandwidth bound at 1 GB.
  EXPECT_LT(results[1]["time_us"].get<double>(), 1.1 * results[1]["lower_bound_us"].get<double>());
}

// Custom collectives reach the baseline verb by name or file: the cooperative AllToNext of
// MSCCLang sec. 7.4 (one chunk per GPU of a node by default) and the direct one.
TEST_F(Cli, BaselineBuildsTheCooperativeAllToNext) {
  const std::string xml = path("a2n.xml");
  const CliRun c = run(
      "baseline --algo cooperative -c alltonext -t ndv4x2 --xml-dialect classic --json -o " + xml);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.doc()["chunks_per_rank"], 8) << c.out;
  const CliRun d = run("baseline --algo direct -c alltonext -t ndv4x2 --xml-dialect classic -o " +
                       path("d.xml"));
  EXPECT_EQ(d.exit_code, 0) << d.err;
  const CliRun a2a = run("baseline --algo cooperative -c alltoall -t ndv4x2 -o " + path("x.xml"));
  EXPECT_EQ(a2a.exit_code, 2);
  EXPECT_NE(a2a.err.find("does not build"), std::string::npos) << a2a.err;
}

TEST_F(Cli, BoundsMatchTheClosedForm) {
  const CliRun r = run("bounds -t dgx1 -c allgather --size 1M --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 7 MB into each GPU over 6 NVLink lanes of 46 us/MB, each lane paying an alpha of 0.7 us per
  // runtime call of at most a 512 KiB FIFO slot (docs/bounds.md "Alpha per runtime call"):
  // 7 x (46 + 0.7 x 2) / 6, above one alpha plus the bytes, 7 x 46 / 6 + 0.7.
  EXPECT_NEAR(r.doc()["bandwidth_bound_us"].get<double>(), 7.0 * (46 + 0.7 * 2) / 6, 0.05);
  // At 64 KiB the one alpha of the last transfer weighs more than the calls' alphas.
  const CliRun small = run("bounds -t dgx1 -c allgather --size 64K --json");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_NEAR(small.doc()["bandwidth_bound_us"].get<double>(), 7.0 * 46 / 16 / 6 + 0.7, 0.01);
}

TEST_F(Cli, BoundsReportTheNodeTrafficBound) {
  // ndv2x4 allreduce of 1 GiB: 2(4-1) NIC crossings per byte over 4 NIC ports of 106 us/MiB.
  const CliRun r = run("bounds -t ndv2x4 -c allreduce --size 1G --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(r.doc()["extra"]["node_traffic_bound_us"].get<double>(), 1.7 + 1.5 * 1024 * 106,
              1e-6);
  EXPECT_NEAR(r.doc()["bandwidth_bound_us"].get<double>(), 1.7 + 1.5 * 1024 * 106, 1e-6);
  const CliRun text = run("bounds -t ndv2x4 -c allreduce --size 1G");
  EXPECT_NE(text.out.find("node-traffic bound"), std::string::npos) << text.out;
}

TEST_F(Cli, CompileWritesAVerifiedProgram) {
  const std::string xml = path("c.xml");
  const CliRun r = run("compile " + kSource + "/examples/algorithms/ring_allgather_4.json -o " +
                       xml + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.doc()["collective"], "allgather");
  expect_verified(xml);
}

TEST_F(Cli, VerifyReportsADefectWithExitOne) {
  const CliRun r = run("verify " + kSource +
                       "/tests/golden/xml/defect_rs_ag_scratch_uninit.executor.xml --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.doc()["ok"].get<bool>());
  EXPECT_FALSE(r.doc()["violations"].empty());
}

TEST_F(Cli, VerifyFindsAStepRemovedFromAGoodProgram) {
  const CliRun r = run("verify " + write_broken_ring());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
}

TEST_F(Cli, RunChecksABaselineWithEveryDataType) {
  const std::string xml = path("ar.xml");
  ASSERT_EQ(run("baseline --algo ring -c allreduce -t ring:4 -o " + xml).exit_code, 0);
  for (const char* dtype :
       {"float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"}) {
    for (const char* op : {"sum", "max"}) {
      const CliRun r = run("run " + xml + " --size 64K --dtype " + dtype + " --op " + op +
                           " --iters 1 --check --json");
      ASSERT_EQ(r.exit_code, 0) << dtype << " " << op << "\n" << r.out << r.err;
      const json doc = r.doc();
      EXPECT_TRUE(doc["ok"].get<bool>()) << doc;
      EXPECT_TRUE(doc["checked"].get<bool>()) << doc;
      EXPECT_EQ(doc["mismatches"], 0) << doc;
      EXPECT_GT(doc["busbw_gbps"].get<double>(), 0) << doc;
    }
  }
}

TEST_F(Cli, RunNamesTheWaitingStepOfADeadlock) {
  const CliRun r = run("run " + write_broken_ring() + " --size 4K --check --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(r.doc()["ok"].get<bool>());
  const std::string message = r.doc()["message"];
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("gpu[1]/tb[0]"), std::string::npos) << message;
}

TEST_F(Cli, RunRejectsASizeThatDoesNotSplitIntoChunks) {
  const std::string xml = path("ar.xml");
  ASSERT_EQ(run("baseline --algo ring -c allreduce -t ring:4 -o " + xml).exit_code, 0);
  const CliRun r = run("run " + xml + " --size 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--size"), std::string::npos) << r.err;
}

TEST_F(Cli, MalformedXmlIsBadInputNamingTheFile) {
  write("bad.xml", "<algo name='x' ngpus='2'><gpu id='0'>");
  const CliRun r = run("verify " + path("bad.xml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.xml"), std::string::npos) << r.err;
}

TEST_F(Cli, MalformedTopologyJsonIsBadInputNamingTheFile) {
  write("topo.json", "{\"format\": \"ccsynth-topology\", \"ranks\": ");
  const CliRun r = run("synth --method tacos -t " + path("topo.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("topo.json"), std::string::npos) << r.err;
}

TEST_F(Cli, UnknownTopologyMethodAndSizeAreBadInput) {
  const CliRun topo = run("synth --method tacos -t nosuch");
  EXPECT_EQ(topo.exit_code, 2);
  EXPECT_NE(topo.err.find("dgx1"), std::string::npos) << "lists the known names: " << topo.err;
  const CliRun method = run("synth --method magic -t dgx1");
  EXPECT_EQ(method.exit_code, 2);
  EXPECT_NE(method.err.find("--method"), std::string::npos) << method.err;
  const CliRun size = run("synth --method tacos -t dgx1 --size lots");
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_NE(size.err.find("--size"), std::string::npos) << size.err;
}

TEST_F(Cli, SynthTacosAllreduceOnMesh) {
  const std::string xml = path("tacos.xml");
  const CliRun r = synth_verified("--method tacos -t mesh2d:4x4 -c allreduce --size 64K", xml);
  // The size of the file written is reported (issue 16), in JSON and in the text.
  EXPECT_EQ(r.doc()["output_bytes"].get<int64_t>(), static_cast<int64_t>(fs::file_size(xml)));
  const CliRun text = run("synth --method tacos -t mesh2d:4x4 -c allreduce --size 64K -o " + xml);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("wrote " + xml + " (" + std::to_string(fs::file_size(xml)) +
                          " bytes, executor dialect)"),
            std::string::npos)
      << text.out;
}

TEST_F(Cli, SynthTreesReducescatterOnDgx1) {
  const std::string xml = path("trees.xml");
  const CliRun r = synth_verified(
      "--method trees -t dgx1 -c reducescatter --chunks 6 --trees 6 --size 64M", xml);
  EXPECT_EQ(r.doc()["details"]["trees_per_root"], 6);
}

// The dimension-order split with the slowest dimension first writes a verified program; the
// flag without that split is bad input naming it.
TEST_F(Cli, SynthTreesSlowestDimensionFirst) {
  const std::string xml = path("slowest.xml");
  const CliRun r = synth_verified(
      "--method trees -t rfs:2x4x2 -c allreduce --split 3 --slowest-first --chunks 3 --size 1M",
      xml);
  EXPECT_EQ(r.doc()["details"]["split"], "dims");
  const CliRun bad =
      run("synth --method trees -t rfs:2x4x2 -c allreduce --slowest-first -o " + xml);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--slowest-first"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("split 3"), std::string::npos) << bad.err;
}

// The tuner writes a table whose files verify; bad sizes are bad input.
TEST_F(Cli, TuneWritesVerifiedRangesAndTuningJson) {
  const std::string dir = path("tuned");
  const CliRun r =
      run("tune -t ring:4 -c allgather --sizes 1K:1M --factor 32 --skip tacos "
          "--skip sccl --json -o " +
          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = r.doc();
  EXPECT_EQ(doc["format"], "ccsynth-tuning");
  EXPECT_EQ(doc["sizes"].size(), 3u);
  ASSERT_FALSE(doc["entries"].empty());
  EXPECT_EQ(doc["entries"].front()["min_bytes"], 0);
  EXPECT_EQ(doc["entries"].back()["max_bytes"], 0);
  for (const json& e : doc["entries"]) expect_verified(dir + "/" + e["file"].get<std::string>());
  EXPECT_TRUE(fs::exists(dir + "/tuning.json"));
  const CliRun bad = run("tune -t ring:4 --sizes 1M:1K -o " + dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--sizes"), std::string::npos) << bad.err;
}

TEST_F(Cli, SynthScclAllgatherOnDgx1) {
  const std::string xml = path("sccl.xml");
  const CliRun r = synth_verified("--method sccl -t dgx1 --chunks 2 --steps 2 --rounds 3", xml);
  EXPECT_EQ(r.doc()["program"]["steps"], 2);
}

// --memory only decides what runs at once and what is held: a budget for one evaluation at a
// time writes the same program and reports the same nccl reference.
TEST_F(Cli, SynthMemoryBudgetDoesNotChangeTheOutput) {
  const std::string roomy = path("roomy.xml"), tight = path("tight.xml");
  const CliRun a = run("synth --method tacos -t mesh2d:3x3 --json -o " + roomy);
  const CliRun b = run("synth --method tacos -t mesh2d:3x3 --memory 0.000001 --json -o " + tight);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(read_file(tight), read_file(roomy));
  EXPECT_EQ(b.doc()["nccl"], a.doc()["nccl"]);
  const CliRun zero = run("synth --method tacos -t mesh2d:3x3 --memory 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--memory"), std::string::npos) << zero.err;
}

TEST_F(Cli, SavedAlgorithmCompilesToTheSameProgram) {
  const std::string xml = path("tacos.xml"), algo = path("tacos.json"), again = path("again.xml");
  const CliRun synth =
      run("synth --method tacos -t torus2d:3x3 --json -o " + xml + " --save-algorithm " + algo);
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  // synth writes the fastest compilation (fused or not, in step or start-time order); it says
  // which.
  const auto doc = synth.doc();
  const auto& chosen = doc["program"]["results"][0];
  const bool fused = chosen["fused"].get<bool>();
  const bool ordered = chosen["schedule_order"].get<bool>();
  const CliRun c = run("compile " + algo + " -t torus2d:3x3 -o " + again +
                       (fused ? "" : " --no-fuse") + (ordered ? " --schedule-order" : ""));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(read_file(again), read_file(xml));
}

TEST_F(Cli, SynthScclReportsUnsatisfiableWithExitOne) {
  // One step cannot reach DGX-1's second-hop neighbours.
  const CliRun r = run("synth --method sccl -t dgx1 --steps 1 --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(r.doc()["ok"].get<bool>());
  EXPECT_EQ(r.doc()["status"], "infeasible");
}

TEST_F(Cli, SynthTacclWithShippedSketch) {
  const std::string xml = path("taccl.xml");
  synth_verified("--method taccl -t ndv2x2 --sketch " + kSource +
                     "/examples/sketches/ndv2-sk-1.json --time-limit 20",
                 xml);
}

TEST_F(Cli, SynthTacclWithoutSketchIsBadInput) {
  const CliRun r = run("synth --method taccl -t ndv2x2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sketch"), std::string::npos) << r.err;
}

TEST_F(Cli, SynthWithInstancesVerifiesAgainstTheSplitCollective) {
  const std::string xml = path("inst.xml");
  synth_verified("--method tacos -t ring:4 --instances 2", xml);
}

TEST_F(Cli, DemoFindsTheBestPerSizeAndNeverBeatsTheBound) {
  const std::string dir = path("programs");
  const CliRun r = run("demo -t ring:4 --size 1K,64M --instances 1,2 --json --output-dir " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json doc = r.doc();
  EXPECT_TRUE(doc["ok"].get<bool>());
  for (const json& candidate : doc["candidates"]) {
    if (candidate.contains("skipped")) continue;
    EXPECT_TRUE(candidate["executed"]["ok"].get<bool>()) << candidate["executed"];
    EXPECT_GT(candidate["executed"]["checked_elements"].get<int64_t>(), 0);
  }
  ASSERT_EQ(doc["best"].size(), 2u);
  for (const json& best : doc["best"]) {
    EXPECT_GE(best["ratio_to_bound"].get<double>(), 0.999) << best;
    EXPECT_GE(best["speedup_vs_nccl"].get<double>(), 1.0) << best;
  }
  int written = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    expect_verified(entry.path().string());
    ++written;
  }
  EXPECT_GE(written, 3);  // nccl, tacos, sccl at least
}

TEST_F(Cli, DemoTableNamesEveryCandidate) {
  const CliRun r = run("demo -t ring:4 --size 1M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"nccl us", "tacos", "sccl-lat", "sccl-bw", "vs bound", "vs nccl"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  }
}

TEST_F(Cli, TopoShowSummarizesABuiltin) {
  const CliRun r = run("topo show dgx1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.doc()["ranks"], 8);
  EXPECT_EQ(r.doc()["links"], 32);
}

TEST_F(Cli, TopoShowCountsSharedNicPortsOnce) {
  const CliRun r = run("topo show ndv2x2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json ib = r.doc()["switch_groups"][0];
  EXPECT_EQ(ib["kind"], "ib");
  EXPECT_EQ(ib["ranks"], 4);  // GPUs 0 and 1 of both nodes sit on the NIC's PCIe switch
  EXPECT_EQ(ib["ports"], 2);  // one NIC per node
}

TEST_F(Cli, ParetoOnARingReachesTheBandwidthBound) {
  const CliRun r = run("pareto -t ring:4 -c allgather --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json frontier = r.doc()["frontier"];
  ASSERT_FALSE(frontier.empty());
  EXPECT_TRUE(frontier.back()["bandwidth_optimal"].get<bool>());
  EXPECT_DOUBLE_EQ(frontier.back()["bandwidth_cost"].get<double>(), 1.5);  // 3 chunks over 2 links
}

}  // namespace
