#include "ccsynth/verify/verify_program.h"

#include <gtest/gtest.h>

#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "test_programs.h"

namespace ccsynth::verify {
namespace {

using testing::make_step;
using testing::mod;
using testing::ring_allgather;
using testing::ring_allreduce;

// Every violation, one per line, for failure messages.
std::string dump(const VerifyReport& r) { return r.summary(); }

// The first violation of `kind`, or a default one with kind kStructure and rank -2 if none.
Violation first(const VerifyReport& r, ViolationKind kind) {
  for (const Violation& v : r.violations) {
    if (v.kind == kind) return v;
  }
  return {ViolationKind::kStructure, -2, -2, -2, "none"};
}

Step dep_step(Step s, int tb, int step) {
  s.dep_tb = tb;
  s.dep_step = step;
  return s;
}

// Ring allgather with separate send and receive threadblocks per rank: tb 1 receives chunk
// (r - t) at its step t-1 and publishes it; tb 0 forwards it after a dependency on that step.
Program two_tb_allgather(int n, bool with_deps = true) {
  Program p = ring_allgather(n, false);
  for (int r = 0; r < n; ++r) {
    GpuProgram& g = p.gpus[r];
    Threadblock send, recv;
    send.id = 0, send.send_peer = mod(r + 1, n);
    recv.id = 1, recv.recv_peer = mod(r - 1, n);
    send.steps.push_back(make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, r));
    send.steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, r));
    for (int t = 1; t < n; ++t) {
      const int j = mod(r - t, n);
      Step rs = make_step(StepType::kRecv, Buffer::kOutput, j, Buffer::kOutput, j);
      rs.has_dep = t < n - 1;
      recv.steps.push_back(rs);
      if (t < n - 1) {
        Step s = make_step(StepType::kSend, Buffer::kOutput, j, Buffer::kOutput, j);
        send.steps.push_back(with_deps ? dep_step(s, 1, t - 1) : s);
      }
    }
    g.threadblocks = {send, recv};
  }
  return p;
}

struct RingCase {
  const char* name;
  bool allreduce;
  bool inplace;
  int ranks;
};

// gtest prints a case by its name.
void PrintTo(const RingCase& c, std::ostream* os) { *os << c.name; }

class CorrectRings : public ::testing::TestWithParam<RingCase> {};

TEST_P(CorrectRings, VerifyWithoutViolations) {
  const RingCase& c = GetParam();
  const Program p =
      c.allreduce ? ring_allreduce(c.ranks, c.inplace) : ring_allgather(c.ranks, c.inplace);
  for (int slots : {2, 8}) {
    const VerifyReport r = verify_program(p, {nullptr, slots});
    EXPECT_TRUE(r.ok()) << c.name << " slots=" << slots << "\n" << dump(r);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rings, CorrectRings,
    ::testing::Values(RingCase{"ag4_oop", false, false, 4}, RingCase{"ag4_ip", false, true, 4},
                      RingCase{"ar4_oop", true, false, 4}, RingCase{"ar4_ip", true, true, 4},
                      RingCase{"ag2", false, false, 2}, RingCase{"ar3", true, false, 3},
                      RingCase{"ag8_ip", false, true, 8}, RingCase{"ar8_ip", true, true, 8},
                      RingCase{"ag64", false, false, 64}, RingCase{"ar32", true, false, 32}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(VerifyProgram, TwoThreadblockRingWithDependenciesIsCorrect) {
  for (int n : {2, 4, 5}) {
    const VerifyReport r = verify_program(two_tb_allgather(n));
    EXPECT_TRUE(r.ok()) << n << "\n" << dump(r);
  }
}

TEST(VerifyProgram, MissingDependencyIsARaceOrUninitializedRead) {
  // Without the dependency the sender may forward a chunk before the receiver wrote it.
  const VerifyReport r = verify_program(two_tb_allgather(4, false));
  EXPECT_TRUE(r.has(ViolationKind::kRace) || r.has(ViolationKind::kUninitializedRead)) << dump(r);
  EXPECT_TRUE(r.has(ViolationKind::kRace)) << dump(r);
  const Violation v = first(r, ViolationKind::kRace);
  EXPECT_EQ(v.threadblock >= 0 && v.rank >= 0, true) << dump(r);
}

TEST(VerifyProgram, MissingSendDeadlocks) {
  Program p = ring_allgather(4, false);
  auto& steps = p.gpus[0].threadblocks[0].steps;
  steps.erase(steps.begin());  // rank 0 never sends its own chunk
  const VerifyReport r = verify_program(p);
  ASSERT_TRUE(r.has(ViolationKind::kDeadlock)) << dump(r);
  const Violation v = first(r, ViolationKind::kDeadlock);
  EXPECT_NE(v.message.find("receive from rank"), std::string::npos) << v.message;
  EXPECT_FALSE(r.has(ViolationKind::kPostcondition));  // not checked after a deadlock
}

TEST(VerifyProgram, SwappedReceiveOrderBreaksThePostcondition) {
  Program p = ring_allgather(4, false);
  auto& steps = p.gpus[2].threadblocks[0].steps;
  std::swap(steps[2].dst_offset, steps[3].dst_offset);  // the two rcs write each other's slot
  const VerifyReport r = verify_program(p);
  ASSERT_TRUE(r.has(ViolationKind::kPostcondition)) << dump(r);
  // Rank 2 has two misplaced chunks; what it forwards is misplaced downstream as well.
  const Violation v = first(r, ViolationKind::kPostcondition);
  EXPECT_EQ(v.rank, 2) << dump(r);
  EXPECT_NE(v.message.find("as input by rank"), std::string::npos) << v.message;
}

TEST(VerifyProgram, ReadBeforeWriteIsUninitialized) {
  Program p = ring_allgather(4, false);
  // Rank 1 sends o[1] before its copy wrote it.
  Step& s = p.gpus[1].threadblocks[0].steps[0];
  s.src_buffer = Buffer::kOutput;
  s.src_offset = 1;
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kUninitializedRead);
  EXPECT_EQ(v.rank, 1) << dump(r);
  EXPECT_EQ(v.threadblock, 0);
  EXPECT_EQ(v.step, 0);
  EXPECT_NE(v.message.find("o[1]"), std::string::npos) << v.message;
}

TEST(VerifyProgram, DependencyCycleDeadlocks) {
  Program p = ring_allgather(2, false);
  for (int t = 1; t <= 2; ++t) {
    Threadblock tb;
    tb.id = t;
    Step nop = make_step(StepType::kNop, Buffer::kInput, -1, Buffer::kOutput, -1, 0);
    tb.steps.push_back(dep_step(nop, t == 1 ? 2 : 1, 0));
    tb.steps[0].has_dep = true;
    p.gpus[0].threadblocks.push_back(tb);
  }
  const VerifyReport r = verify_program(p);
  ASSERT_TRUE(r.has(ViolationKind::kDeadlock)) << dump(r);
  int stuck = 0;
  for (const Violation& v : r.violations) {
    if (v.kind != ViolationKind::kDeadlock) continue;
    ++stuck;
    EXPECT_EQ(v.rank, 0);
    EXPECT_NE(v.message.find("waits for tb"), std::string::npos) << v.message;
  }
  EXPECT_EQ(stuck, 2) << dump(r);
}

TEST(VerifyProgram, DependencyOnStepWithoutHasdepDeadlocks) {
  Program p = two_tb_allgather(3);
  p.gpus[1].threadblocks[1].steps[0].has_dep = false;  // tb 0 step 2 waits for it forever
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kDeadlock);
  EXPECT_EQ(v.rank, 1) << dump(r);
  EXPECT_EQ(v.threadblock, 0);
  EXPECT_EQ(v.step, 2);
  EXPECT_NE(v.message.find("hasdep=1"), std::string::npos) << v.message;
}

TEST(VerifyProgram, TwoThreadblocksOnOneConnectionIsStructure) {
  Program p = ring_allgather(4, false);
  Threadblock extra;
  extra.id = 1;
  extra.send_peer = 1;  // tb 0 already sends to rank 1 on channel 0
  extra.steps.push_back(make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, 0));
  p.gpus[0].threadblocks.push_back(extra);
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kStructure);
  EXPECT_EQ(v.rank, 0) << dump(r);
  EXPECT_EQ(v.threadblock, 1);
  EXPECT_NE(v.message.find("one connection"), std::string::npos) << v.message;
}

TEST(VerifyProgram, OffsetOutOfRangeIsBounds) {
  Program p = ring_allgather(4, false);
  p.gpus[3].threadblocks[0].steps[4].dst_offset = 4;  // o has 4 chunks
  VerifyReport r = verify_program(p);
  Violation v = first(r, ViolationKind::kBounds);
  EXPECT_EQ(v.rank, 3) << dump(r);
  EXPECT_EQ(v.step, 4);
  EXPECT_NE(v.message.find("o[4]"), std::string::npos) << v.message;
  // Aggregated counts reach past the end too.
  p = ring_allreduce(4, false);
  p.gpus[0].threadblocks[0].steps[0].count = 5;
  r = verify_program(p);
  EXPECT_EQ(first(r, ViolationKind::kBounds).step, 0) << dump(r);
}

TEST(VerifyProgram, UnorderedWritesOfOneChunkRace) {
  Program p = ring_allgather(4, false);
  Threadblock extra;
  extra.id = 1;
  extra.steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, 2));
  p.gpus[2].threadblocks.push_back(extra);
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kRace);
  EXPECT_EQ(v.rank, 2) << dump(r);
  EXPECT_NE(v.message.find("o[2]"), std::string::npos) << v.message;
  // The same extra write ordered after tb 0's copy by a dependency is fine.
  p.gpus[2].threadblocks[0].steps[1].has_dep = true;
  p.gpus[2].threadblocks[1].steps[0] = dep_step(p.gpus[2].threadblocks[1].steps[0], 0, 1);
  const VerifyReport ordered = verify_program(p);
  EXPECT_FALSE(ordered.has(ViolationKind::kRace)) << dump(ordered);
}

TEST(VerifyProgram, MessageChainsThroughOtherRanksOrderAccesses) {
  // Rank 0 tb 1 sends o[0] to rank 1, which returns it on channel 1; rank 0 tb 2 then writes it
  // back into o[0]. tb 1's read and tb 2's write are ordered only through rank 1.
  Program p = ring_allgather(2, false);
  p.num_channels = 2;
  p.gpus[1].scratch_chunks = 1;
  p.gpus[0].threadblocks[0].steps[1].has_dep = true;  // the copy into o[0]
  Threadblock out, back, relay;
  out.id = 1, out.send_peer = 1, out.channel = 1;
  out.steps.push_back(
      dep_step(make_step(StepType::kSend, Buffer::kOutput, 0, Buffer::kScratch, 0), 0, 1));
  back.id = 2, back.recv_peer = 1, back.channel = 1;
  back.steps.push_back(make_step(StepType::kRecv, Buffer::kScratch, 0, Buffer::kOutput, 0));
  relay.id = 1, relay.recv_peer = 0, relay.send_peer = 0, relay.channel = 1;
  relay.steps.push_back(
      make_step(StepType::kRecvCopySend, Buffer::kOutput, 0, Buffer::kScratch, 0));
  p.gpus[0].threadblocks.push_back(out);
  p.gpus[0].threadblocks.push_back(back);
  p.gpus[1].threadblocks.push_back(relay);
  const VerifyReport r = verify_program(p);
  EXPECT_TRUE(r.ok()) << dump(r);
  // Without the dependency tb 1 may read o[0] before tb 0's copy wrote it.
  p.gpus[0].threadblocks[1].steps[0].dep_tb = -1;
  p.gpus[0].threadblocks[1].steps[0].dep_step = -1;
  const VerifyReport unordered = verify_program(p);
  EXPECT_TRUE(unordered.has(ViolationKind::kRace) ||
              unordered.has(ViolationKind::kUninitializedRead))
      << dump(unordered);
}

TEST(VerifyProgram, FilesForBothCallTypesRunBothWays) {
  // An out-of-place ring declared usable in place too: the in-place run finds the input in
  // the output buffer, so sending i[0] reads nothing.
  Program p = ring_allgather(4, false);
  p.inplace = p.outofplace = true;
  const VerifyReport r = verify_program(p);
  ASSERT_FALSE(r.ok());
  for (const Violation& v : r.violations) {
    EXPECT_EQ(v.message.rfind("in-place run: ", 0), 0u) << v;
  }
  EXPECT_TRUE(r.has(ViolationKind::kUninitializedRead)) << dump(r);
  p.inplace = false;
  EXPECT_TRUE(verify_program(p).ok());
}

TEST(VerifyProgram, BoundedFifoSlotsCanDeadlock) {
  // Rank 0 sends three chunks on channel 0, then one on channel 1. Rank 1 receives channel 1
  // first (a dependency on tb 1), so the three sends must all fit in the FIFO.
  Program p;
  p.collective = CollectiveKind::kBroadcast;
  p.num_ranks = 2;
  p.num_channels = 2;
  p.chunks_per_loop = 4;
  for (int r = 0; r < 2; ++r) {
    GpuProgram g;
    g.rank = r;
    g.input_chunks = g.output_chunks = 4;
    p.gpus.push_back(g);
  }
  Threadblock s0, s1, r0, r1;
  s0.id = 0, s0.send_peer = 1;
  s1.id = 1, s1.send_peer = 1, s1.channel = 1;
  for (int i = 0; i < 3; ++i) {
    s0.steps.push_back(make_step(StepType::kSend, Buffer::kInput, i, Buffer::kOutput, i));
  }
  s0.steps.back().has_dep = true;
  s1.steps.push_back(
      dep_step(make_step(StepType::kSend, Buffer::kInput, 3, Buffer::kOutput, 3), 0, 2));
  r0.id = 0, r0.recv_peer = 0;
  r1.id = 1, r1.recv_peer = 0, r1.channel = 1;
  r1.steps.push_back(make_step(StepType::kRecv, Buffer::kInput, 3, Buffer::kOutput, 3));
  r1.steps.back().has_dep = true;
  for (int i = 0; i < 3; ++i) {
    Step s = make_step(StepType::kRecv, Buffer::kInput, i, Buffer::kOutput, i);
    r0.steps.push_back(i == 0 ? dep_step(s, 1, 0) : s);
  }
  // Rank 0 copies its own chunks to its output.
  Threadblock local;
  local.id = 2;
  local.steps.push_back(make_step(StepType::kCopy, Buffer::kInput, 0, Buffer::kOutput, 0, 4));
  p.gpus[0].threadblocks = {s0, s1, local};
  p.gpus[1].threadblocks = {r0, r1};
  EXPECT_TRUE(verify_program(p, {nullptr, 3}).ok()) << dump(verify_program(p, {nullptr, 3}));
  const VerifyReport r = verify_program(p, {nullptr, 2});
  ASSERT_TRUE(r.has(ViolationKind::kDeadlock)) << dump(r);
  EXPECT_NE(dump(r).find("FIFO slots are full"), std::string::npos) << dump(r);
}

TEST(VerifyProgram, MalformedThreadblocksAreStructure) {
  auto expect_structure = [](Program p, const std::string& text) {
    const VerifyReport r = verify_program(p);
    EXPECT_TRUE(r.has(ViolationKind::kStructure)) << text << "\n" << dump(r);
    EXPECT_NE(dump(r).find(text), std::string::npos) << dump(r);
  };
  Program self = ring_allgather(4, false);
  self.gpus[1].threadblocks[0].send_peer = 1;
  expect_structure(self, "is the rank itself");
  Program no_peer = ring_allgather(4, false);
  no_peer.gpus[1].threadblocks[0].recv_peer = -1;
  expect_structure(no_peer, "without a receive peer");
  Program ids = ring_allgather(4, false);
  ids.gpus[2].threadblocks[0].id = 3;
  expect_structure(ids, "contiguous");
  Program count = ring_allgather(4, false);
  count.gpus[2].threadblocks[0].steps[1].count = 0;
  expect_structure(count, "cnt=0");
  Program dep = ring_allgather(4, false);
  dep.gpus[2].threadblocks[0].steps[1].dep_tb = 4;
  dep.gpus[2].threadblocks[0].steps[1].dep_step = 0;
  expect_structure(dep, "depends on threadblock 4");
  Program loop = ring_allgather(4, false);
  loop.chunks_per_loop = 8;
  expect_structure(loop, "nchunksperloop");
  Program extra_send = ring_allgather(4, false);
  extra_send.gpus[0].threadblocks[0].steps.push_back(
      make_step(StepType::kSend, Buffer::kInput, 0, Buffer::kOutput, 0));
  expect_structure(extra_send, "never received");
  Program ranks = ring_allgather(4, false);
  const Collective wrong = make_collective(CollectiveKind::kAllGather, 3);
  EXPECT_NE(dump(verify_program(ranks, {&wrong})).find("ranks"), std::string::npos);
}

TEST(VerifyProgram, CountMismatchBetweenSendAndReceiveIsStructure) {
  Program p = ring_allreduce(4, false);
  p.gpus[1].threadblocks[0].steps[1].count = 2;  // rank 1's s sends 2 chunks, rank 2 receives 1
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kStructure);
  EXPECT_EQ(v.rank, 2) << dump(r);
  EXPECT_NE(v.message.find("sent cnt=2"), std::string::npos) << v.message;
}

// Known defect 1 (docs/formats.md sec. 5): an allreduce composed of reduce-scatter and allgather whose
// allgather phase sends a scratch chunk no step wrote.
TEST(VerifyProgram, KnownDefectScratchReadBeforeWrite) {
  Program p = ring_allreduce(2, false);
  for (GpuProgram& g : p.gpus) g.scratch_chunks = 1;
  // Rank 0 sends its scratch chunk (meant to stage the reduce-scatter result) before any step
  // wrote it; rank 1 receives it into its own scratch.
  auto& steps = p.gpus[0].threadblocks[0].steps;
  steps.insert(steps.begin() + 3,
               make_step(StepType::kSend, Buffer::kScratch, 0, Buffer::kOutput, 0));
  auto& peer = p.gpus[1].threadblocks[0].steps;
  peer.push_back(make_step(StepType::kRecv, Buffer::kOutput, 0, Buffer::kScratch, 0));
  const VerifyReport r = verify_program(p);
  const Violation v = first(r, ViolationKind::kUninitializedRead);
  EXPECT_EQ(v.rank, 0) << dump(r);
  EXPECT_NE(v.message.find("s[0]"), std::string::npos) << v.message;
}

// Known defect 2: a (hierarchical) allreduce whose final buffers miss contributions: one rank
// forwards instead of reducing, so downstream ranks end with 3 of 4 contributions.
TEST(VerifyProgram, KnownDefectIncompleteReduction) {
  Program p = ring_allreduce(4, true);
  Step& s = p.gpus[2].threadblocks[0].steps[1];
  ASSERT_EQ(s.type, StepType::kRecvReduceSend);
  s.type = StepType::kRecvCopySend;
  const VerifyReport r = verify_program(p);
  ASSERT_TRUE(r.has(ViolationKind::kPostcondition)) << dump(r);
  EXPECT_NE(dump(r).find("a reduction of 3 contribution(s); expected chunk"), std::string::npos)
      << dump(r);
  // Double counting is caught as well.
  Program twice = ring_allreduce(4, true);
  twice.gpus[1].threadblocks[0].steps.push_back(
      make_step(StepType::kReduce, Buffer::kInput, 0, Buffer::kInput, 0));
  EXPECT_TRUE(verify_program(twice).has(ViolationKind::kPostcondition));
}

TEST(VerifyProgram, ExplicitCollectiveAndCollectiveOf) {
  const Program ag = ring_allgather(4, true);
  const Collective c = collective_of(ag);
  EXPECT_EQ(c, make_collective(CollectiveKind::kAllGather, 4, 1));
  EXPECT_EQ(collective_of(ring_allreduce(4, false)),
            make_collective(CollectiveKind::kAllReduce, 4, 1));
  Program rs = ring_allgather(4, false);
  rs.collective = CollectiveKind::kReduceScatter;
  for (GpuProgram& g : rs.gpus) g.input_chunks = 8, g.output_chunks = 2;
  EXPECT_EQ(collective_of(rs), make_collective(CollectiveKind::kReduceScatter, 4, 2));
  Program custom = ag;
  custom.collective = CollectiveKind::kCustom;
  EXPECT_THROW(collective_of(custom), UserError);
  EXPECT_TRUE(verify_program(custom, {&c}).ok());
  // An allreduce program checked as an allgather fails its postcondition.
  const Collective wrong = make_collective(CollectiveKind::kAllGather, 4, 1);
  EXPECT_FALSE(verify_program(ring_allreduce(4, false), {&wrong}).ok());
}

TEST(VerifyProgram, ManyDefectsAreCappedPerKind) {
  Program p = ring_allgather(300, false);
  for (GpuProgram& g : p.gpus) g.threadblocks[0].steps.erase(g.threadblocks[0].steps.begin());
  const VerifyReport r = verify_program(p);
  int deadlocks = 0;
  for (const Violation& v : r.violations) deadlocks += v.kind == ViolationKind::kDeadlock;
  EXPECT_EQ(deadlocks, 101);
  EXPECT_NE(r.violations.back().message.find("200 more deadlock violations"), std::string::npos)
      << r.violations.back().message;
}

// Files written by other tools (tests/golden/xml): a compiled hierarchical allreduce with
// cross-threadblock dependencies, and the defects docs/formats.md lists as found in other tools' output.
Program golden(const std::string& name) {
  return formats::read_msccl_xml_file(std::string(CCSYNTH_SOURCE_DIR) + "/tests/golden/xml/" +
                                      name);
}

TEST(VerifyProgramFiles, CompiledHierarchicalAllReduceIsCorrect) {
  const Program p = golden("hier_allreduce_ndv2x2.executor.xml");
  const VerifyReport r = verify_program(p);
  EXPECT_TRUE(r.ok()) << dump(r);
  for (int slots : {1, 2}) {
    // The compiler checked the program against 8 slots; fewer may or may not deadlock, but
    // nothing except deadlocks may appear.
    for (const Violation& v : verify_program(p, {nullptr, slots}).violations) {
      EXPECT_EQ(v.kind, ViolationKind::kDeadlock) << v;
    }
  }
}

TEST(VerifyProgramFiles, KnownDefectIncompleteHierarchicalAllReduce) {
  const VerifyReport r = verify_program(golden("defect_hier_allreduce_dgx1x2.executor.xml"));
  ASSERT_TRUE(r.has(ViolationKind::kPostcondition)) << dump(r);
  EXPECT_FALSE(r.has(ViolationKind::kDeadlock));
  EXPECT_NE(dump(r).find("reduced over 16 contributions"), std::string::npos) << dump(r);
}

TEST(VerifyProgramFiles, KnownDefectScratchReadBeforeWrite) {
  const VerifyReport r = verify_program(golden("defect_rs_ag_scratch_uninit.executor.xml"));
  const Violation v = first(r, ViolationKind::kUninitializedRead);
  EXPECT_EQ(v.rank, 0) << dump(r);
  EXPECT_EQ(v.threadblock, 0);
  EXPECT_EQ(v.step, 5);
  EXPECT_NE(v.message.find("s[0]"), std::string::npos) << v.message;
}

TEST(VerifyProgramFiles, KnownDefectMissingExecutorAttributes) {
  // The program itself is a correct in-place allgather; only the executor cannot load it.
  const std::string path =
      std::string(CCSYNTH_SOURCE_DIR) + "/tests/golden/xml/defect_missing_executor_attributes.xml";
  const formats::MscclXmlDocument doc = formats::parse_msccl_xml_file(path);
  EXPECT_TRUE(verify_program(doc.program).ok()) << dump(verify_program(doc.program));
  int executor = 0;
  for (const formats::XmlIssue& i : doc.issues) executor += i.affects_executor;
  EXPECT_EQ(executor, 3);
}

// Robustness: every single-character mutation of a valid file either fails to read with a
// UserError or reads into a program the verifier handles without crashing.
TEST(VerifyProgramFiles, MutatedFilesNeverCrash) {
  const std::string text = formats::write_msccl_xml(ring_allgather(3, false));
  int readable = 0, failed = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    for (const char* replacement : {"", "9", "-", "1"}) {
      std::string mutated = text;
      mutated.replace(i, 1, replacement);
      Program p;
      try {
        p = formats::read_msccl_xml(mutated, "mutated.xml");
      } catch (const UserError&) {
        ++failed;
        continue;
      }
      ++readable;
      try {
        verify_program(p);
      } catch (const UserError&) {
        // collective_of: buffer sizes that fit no collective.
      }
    }
  }
  // Files are written without indentation: about 580 of the mutations still read (a changed
  // digit, a dropped attribute separator inside a value, ...) and reach the verifier.
  EXPECT_GT(readable, 500);
  EXPECT_GT(failed, 1000);
}

}  // namespace
}  // namespace ccsynth::verify
