// Regression tests of issue 18 (hostile input): every case found by the fuzzing campaign must
// end in exit 2 (bad input) or 1 (check failed) with a message naming the file, the field and
// the reason, quickly, never in a crash, a hang, a raw library message or a silent wrong answer.
// The test names carry the defect number of the issue.

#include "cli_fixture.h"

#include <chrono>
#include <utility>

namespace {

using namespace cli_test;

const std::string kRingXml = kSource + "/tests/golden/xml/ring_allgather_4.executor.xml";

// An allgather collective JSON file of `ranks` ranks, one chunk per rank (equal to the built-in).
std::string allgather_json(int ranks) {
  nlohmann::json chunks = nlohmann::json::array();
  for (int q = 0; q < ranks; ++q) {
    nlohmann::json post = nlohmann::json::array();
    for (int r = 0; r < ranks; ++r) post.push_back({r, q});
    chunks.push_back({{"pre", {{q, 0}}}, {"post", post}});
  }
  return nlohmann::json{{"format", "ccsynth-collective"},
                        {"version", 1},
                        {"name", "allgather"},
                        {"kind", "allgather"},
                        {"ranks", ranks},
                        {"chunks_per_rank", 1},
                        {"root", 0},
                        {"input_chunks", 1},
                        {"output_chunks", ranks},
                        {"combining", false},
                        {"chunks", chunks}}
      .dump();
}

// `depth` nested arrays: [[[...]]].
std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_source(const std::string& relative) { return read_text(kSource + "/" + relative); }

// `text` with the first `from` replaced by `to` (the test fails when `from` is missing).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Hostile : public Cli {
 protected:
  // Exit 2 with every part of `parts` in the message.
  void expect_bad_input(const CliRun& r, std::initializer_list<std::string> parts) const {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const std::string& part : parts)
      EXPECT_TRUE(contains(r.err, part)) << part << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "json.exception")) << r.err;
    EXPECT_FALSE(contains(r.err, "bad_alloc")) << r.err;
  }
};

// Defect 1: 100,000 nested arrays crashed the topology, collective and algorithm readers
// (the error message dumped the value recursively).
TEST_F(Hostile, Defect1DeepNestingIsBadInputInEveryJsonReader) {
  const std::string deep = nested_arrays(100000);
  write("topology.json", replaced(read_source("examples/topologies/custom_4gpu.json"),
                                  "\"lanes\": 2", "\"lanes\": " + deep));
  expect_bad_input(run("topo show " + path("topology.json")),
                   {path("topology.json"), "nested deeper than 64 levels"});
  write("collective.json",
        replaced(read_source("examples/collectives/alltonext8.json"), "[[0, 0]]", deep));
  expect_bad_input(run("verify " + kSource + "/tests/golden/xml/ring_allgather_4.executor.xml" +
                       " --collective " + path("collective.json")),
                   {path("collective.json"), "nested deeper"});
  write("algorithm.json", replaced(read_source("examples/algorithms/ring_allgather_4.json"),
                                   "\"chunk\": 0", "\"chunk\": " + deep));
  expect_bad_input(run("compile " + path("algorithm.json") + " -o " + path("out.xml")),
                   {path("algorithm.json"), "ops[0].chunk", "nested deeper"});
  write("sketch.json", replaced(read_source("examples/sketches/ndv2-sk-1.json"),
                                "\"input_chunkup\": 1", "\"input_chunkup\": " + deep));
  expect_bad_input(run("synth --method taccl -t ndv2x2 --sketch " + path("sketch.json")),
                   {path("sketch.json"), "nested deeper"});
}

// Defect 4: sketch integers wrapped modulo 2^32; every reader rejects values outside the
// field's range, naming the file, the field and the value.
TEST_F(Hostile, Defect4OutOfRangeIntegersAreRejectedNotWrapped) {
  const std::string sketch = read_source("examples/sketches/ndv2-sk-1.json");
  write("offset.json", replaced(sketch, "[[8, 16]]", "[[4294967304, 16]]"));
  expect_bad_input(run("synth --method taccl -t ndv2x2 --sketch " + path("offset.json")),
                   {path("offset.json"), "symmetry_offsets[0][0]", "4294967304"});
  write("chunkup.json", replaced(sketch, "\"input_chunkup\": 1", "\"input_chunkup\": -2147483649"));
  expect_bad_input(run("synth --method taccl -t ndv2x2 --sketch " + path("chunkup.json")),
                   {path("chunkup.json"), "hyperparameters.input_chunkup", "-2147483649"});
  write("lanes.json", replaced(read_source("examples/topologies/custom_4gpu.json"), "\"lanes\": 2",
                               "\"lanes\": 18446744073709551615"));
  // Defect 12: 2^64 - 1 was reported as -1.
  expect_bad_input(run("topo show " + path("lanes.json")),
                   {path("lanes.json"), "links[0].lanes", "18446744073709551615"});
}

// Defect 5: library exceptions escaped as exit 3 without a file name.
TEST_F(Hostile, Defect5NumbersBeyondDoubleAndWrongTypesNameTheFile) {
  write("huge.json", replaced(read_source("examples/topologies/custom_4gpu.json"),
                              "\"alpha_us\": 0.7", "\"alpha_us\": 1e400"));
  expect_bad_input(run("topo show " + path("huge.json")), {path("huge.json"), "1e400"});
  write("strategy.json", replaced(read_source("examples/sketches/ndv2-sk-1.json"),
                                  "\"strategy\": \"none\"", "\"strategy\": {}"));
  expect_bad_input(run("synth --method taccl -t ndv2x2 --sketch " + path("strategy.json")),
                   {path("strategy.json"), "intranode_sketch.strategy", "must be a string"});
}

// Defect 5: JSON topologies get the rank cap of the built-in names (no 8 GB allocation).
TEST_F(Hostile, Defect5TopologyRanksAreCapped) {
  const std::string topology = read_source("examples/topologies/custom_4gpu.json");
  write("ranks.json", replaced(replaced(topology, "\"ranks\": 4", "\"ranks\": 2147483647"),
                               "\"nodes\": [[0, 1, 2, 3]],", ""));
  expect_bad_input(run("topo show " + path("ranks.json")),
                   {path("ranks.json"), "ranks", "must be 1..4194304"});
}

// Defect 5: run estimates its memory before allocating.
TEST_F(Hostile, Defect5RunRefusesWhatCannotFitInMemory) {
  const std::string xml = kSource + "/tests/golden/xml/ring_allgather_4.executor.xml";
  expect_bad_input(run("run " + xml + " --size 1T"), {xml, "--size", "GiB of memory"});
  expect_bad_input(run("run " + xml + " --size 1M --fifo-slots 1000000000"), {"--fifo-slots"});
  expect_bad_input(run("run --memcpy --memcpy-bytes 1T"), {"--memcpy-bytes", "GiB of memory"});
}

// Defect 7: a timeout of 1e10 s overflowed the clock and failed a correct program.
TEST_F(Hostile, Defect7HugeTimeoutRunsACorrectProgram) {
  const std::string xml = kSource + "/tests/golden/xml/ring_allgather_4.executor.xml";
  const CliRun r = run("run " + xml + " --size 64K --check --timeout 1e10");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// Defect 10: write failures were ignored (exit 0 and "wrote").
TEST_F(Hostile, Defect10WriteFailuresAreErrors) {
  const CliRun file = run("topo export ring:4 -o /dev/full");
  expect_bad_input(file, {"/dev/full", "write failed"});
  EXPECT_FALSE(contains(file.err, "wrote")) << file.err;
  expect_bad_input(run("topo show ring:4 --json >/dev/full"), {"standard output", "write failed"});
}

// Defect 12: `ccsynth bogus` named no verb.
TEST_F(Hostile, Defect12UnknownVerbIsNamed) {
  expect_bad_input(run("bogus"), {"unknown verb 'bogus'", "synth"});
}

// Defect 12: out-of-range flags were silently replaced by defaults.
TEST_F(Hostile, Defect12OutOfRangeRootIsRejected) {
  const std::string xml = kSource + "/tests/golden/xml/ring_allgather_4.executor.xml";
  expect_bad_input(run("verify " + xml + " --root -1"), {"--root", "rank -1 is not in 0..3"});
}

// Defect 12: an explicit 0 limit was silently the dialect's default.
TEST_F(Hostile, Defect12ZeroCompileLimitsAreRejected) {
  const std::string algorithm = kSource + "/examples/algorithms/ring_allgather_4.json";
  expect_bad_input(
      run("compile " + algorithm + " -o " + path("o.xml") + " --max-steps-per-threadblock 0"),
      {"--max-steps-per-threadblock", "must be > 0"});
  expect_bad_input(
      run("compile " + algorithm + " -o " + path("o.xml") + " --max-threadblocks-per-rank -5"),
      {"--max-threadblocks-per-rank", "must be > 0"});
}

// Defect 12: -o equal to an input was overwritten; `-o -` means standard output.
TEST_F(Hostile, Defect12OutputNeverOverwritesAnInput) {
  const std::string algorithm = path("algorithm.json");
  write("algorithm.json", read_source("examples/algorithms/ring_allgather_4.json"));
  expect_bad_input(run("compile " + algorithm + " -o " + algorithm), {"-o", "refusing"});
  EXPECT_EQ(read_text(algorithm), read_source("examples/algorithms/ring_allgather_4.json"));
  const CliRun out = run("compile " + algorithm + " -o -");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out.rfind("<algo ", 0), 0u) << out.out;  // only the XML on stdout
  EXPECT_TRUE(contains(out.err, "verified OK")) << out.err;
}

// Defect 12: a key given twice in a JSON object is an error, not "the last one wins".
TEST_F(Hostile, Defect12DuplicateJsonKeysAreRejected) {
  write("dup.json", replaced(read_source("examples/topologies/custom_4gpu.json"), "\"ranks\": 4",
                             "\"ranks\": 4, \"ranks\": 4"));
  expect_bad_input(run("topo show " + path("dup.json")),
                   {path("dup.json"), "ranks", "duplicate key"});
}

// Defect 12: a 1M-element bad value was repeated whole in the message.
TEST_F(Hostile, Defect12BadValuesAreTruncatedInMessages) {
  std::string big = "[";
  for (int i = 0; i < 100000; ++i) big += (i ? ",1" : "1");
  big += "]";
  write("big.json", replaced(read_source("examples/topologies/custom_4gpu.json"), "\"lanes\": 2",
                             "\"lanes\": " + big));
  const CliRun r = run("topo show " + path("big.json"));
  expect_bad_input(r, {path("big.json"), "links[0].lanes", "an array of 100000 elements"});
  EXPECT_LT(r.err.size(), 500u);
}

// Defect 2: switches were expanded into all rank pairs (switch:1000 took 12.8 s, switch:8000
// 2.6 GB): validation and the diameter now search ranks plus one vertex per switch.
TEST_F(Hostile, Defect2SwitchTopologiesAreLinear) {
  const auto start = std::chrono::steady_clock::now();
  const CliRun big = run("topo show switch:8000 --json");
  EXPECT_EQ(big.exit_code, 0) << big.err;
  const CliRun diameter = run("topo show switch:1000 --json");  // diameter computed
  ASSERT_EQ(diameter.exit_code, 0) << diameter.err;
  EXPECT_EQ(diameter.doc()["diameter"], 1);
  EXPECT_EQ(run("topo show dgx2x1000").exit_code, 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);  // about 0.5 s; the quadratic expansion took minutes
}

// Defect 3: a sketch input_chunkup of 1000 ran for minutes whatever the time limit.
TEST_F(Hostile, Defect3LargeChunkupIsRefusedUpFront) {
  write("chunkup.json", replaced(read_source("examples/sketches/ndv2-sk-1.json"),
                                 "\"input_chunkup\": 1", "\"input_chunkup\": 1000"));
  expect_bad_input(
      run("synth --method taccl -t ndv2x2 --time-limit 5 --sketch " + path("chunkup.json")),
      {path("chunkup.json"), "hyperparameters.input_chunkup", "cap of 16"});
}

// Defect 6: computations without a time limit have documented caps.
TEST_F(Hostile, Defect6LongComputationsAreCapped) {
  expect_bad_input(run("bounds -t dgx1 -c allgather --size 1M --chunks 2147483647"),
                   {"chunks", "cap"});
  expect_bad_input(
      run("baseline --algo ring -c allgather -t dgx1 --chunks 100000 -o " + path("b.xml")),
      {"chunks", "at most 256"});
  expect_bad_input(run("synth --method tacos -t dgx1 --chunks 100000"), {"chunks", "at most 256"});
  expect_bad_input(run("synth --method tacos -t dgx1 --trials 2147483647"),
                   {"--trials", "1..1024"});
  expect_bad_input(run("synth --method tacos -t dgx1 --size 1T"), {"step instances", "cap"});
}

// Defect 8: simulate accepted out-of-bounds offsets, verify and simulate a receive peer that
// nothing sends to; all three verbs now share core's validate_structure.
TEST_F(Hostile, Defect8StructuralDefectsFailInEveryVerb) {
  const std::string ring = read_text(kRingXml);
  write("bounds.xml",
        replaced(ring, "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\"",
                 "type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"9\""));
  write("unmatched.xml",
        replaced(ring, "</tb>",
                 "</tb>\n    <tb id=\"1\" send=\"-1\" recv=\"2\" chan=\"0\">\n      <step s=\"0\" "
                 "type=\"nop\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"0\" "
                 "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n    </tb>"));
  // {file, what verify reports, what simulate and run report}
  const std::string cases[][3] = {
      {path("bounds.xml"), "destination o[9] of `cpy` is outside", "outside its 4 chunks"},
      {path("unmatched.xml"), "no threadblock of rank 2 sends", "no threadblock of rank 2 sends"}};
  for (const auto& [file, verified, reason] : cases) {
    const CliRun verify = run("verify " + file);
    EXPECT_EQ(verify.exit_code, 1) << verify.out << verify.err;
    EXPECT_TRUE(contains(verify.out, verified)) << verify.out;
    expect_bad_input(run("simulate " + file + " -t ring:4 --size 1M"), {file, "gpu[", reason});
    expect_bad_input(run("run " + file + " --size 64K"), {file, "gpu[", reason});
  }
}

// Defect 9: verify accepted what the runtimes' parsers reject; compile wrote such a name.
TEST_F(Hostile, Defect9LexicalRulesOfTheRuntimesAreChecked) {
  const std::string ring = read_text(kRingXml);
  const std::pair<std::string, std::string> cases[] = {
      {replaced(ring, "name=\"ring_allgather\"", "name='ring_allgather'"), "single quotes"},
      {replaced(ring, "proto=\"Simple\"", "proto=\"Simple\" proto=\"Simple\""), "given twice"},
      {"<!DOCTYPE algo [<!ENTITY x \"y\">]>\n" + ring, "DOCTYPE"}};
  for (const auto& [text, reason] : cases) {
    write("lexical.xml", text);
    const CliRun r = run("verify " + path("lexical.xml"));
    EXPECT_EQ(r.exit_code, 1) << reason << "\n" << r.out << r.err;
    EXPECT_TRUE(contains(r.out, reason)) << r.out;
  }
  const std::string algorithm = kSource + "/examples/algorithms/ring_allgather_4.json";
  expect_bad_input(
      run("compile " + algorithm + " -o " + path("long.xml") + " --name " + std::string(300, 'n')),
      {"name", "at most 255"});
}

// Defect 11: sccl and pareto rejected collective JSON files that --collective accepts.
TEST_F(Hostile, Defect11ScclAndParetoTakeCollectiveFiles) {
  write("allgather4.json", allgather_json(4));
  const CliRun pareto = run("pareto -t ring:4 -c " + path("allgather4.json") +
                            " --max-steps 3 --max-chunks 1 --json");
  EXPECT_EQ(pareto.exit_code, 0) << pareto.err;
  EXPECT_EQ(pareto.doc()["collective"], "allgather");
  const CliRun sccl =
      run("synth --method sccl -t ring:4 -c " + path("allgather4.json") + " --json");
  EXPECT_EQ(sccl.exit_code, 0) << sccl.err;
  const std::string custom = kSource + "/examples/collectives/alltonext8.json";
  expect_bad_input(run("pareto -t dgx1 -c " + custom), {custom, "kind", "custom"});
  expect_bad_input(run("synth --method sccl -t dgx1 -c " + custom), {custom, "kind", "custom"});
}

}  // namespace
