// `mpiexec -n N ccsynth run FILE.xml --mpi ...` as a user runs it: checked runs of compiled
// baselines and of the DSL examples' peer-style programs (scratch buffers, fused instructions),
// the JSON document, and every failure case: a program of the wrong rank count, a missing
// peer, mismatched messages, a deadlock (the watchdog names the waiting steps) and a process
// that dies. Each job runs under a time limit; a job that hangs fails the test.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path work_dir() {
  const fs::path dir = fs::temp_directory_path() / ("ccsynth_mpi_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

struct Job {
  pid_t pid = -1;
  fs::path log;
};

struct Finished {
  int exit_code = -1;  // -1: killed at the time limit
  std::string output;  // stdout and stderr
  double seconds = 0.0;
};

// Starts `mpiexec -n np --oversubscribe ARGS...` with stdout and stderr in a log file, in its
// own process group. OpenMPI needs to be told that running as root is intended.
Job start_job(int np, const std::vector<std::string>& args) {
  static int counter = 0;
  Job job;
  job.log = work_dir() / ("job" + std::to_string(counter++) + ".log");
  std::vector<std::string> argv = {CCSYNTH_MPIEXEC, "-n", std::to_string(np), "--oversubscribe",
                                   CCSYNTH_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  job.pid = fork();
  if (job.pid == 0) {
    setpgid(0, 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    if (!freopen(job.log.c_str(), "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(126);
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return job;
}

// Waits for the job at most `limit_s` seconds; a job still running then is killed (with every
// process of its group) and reported as exit code -1.
Finished wait_job(const Job& job, double limit_s) {
  Finished f;
  const Clock::time_point start = Clock::now();
  int status = 0;
  while (true) {
    const pid_t done = waitpid(job.pid, &status, WNOHANG);
    f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (done == job.pid) {
      f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (f.seconds > limit_s) {
      kill(-job.pid, SIGKILL);
      waitpid(job.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(job.log);
  std::stringstream text;
  text << in.rdbuf();
  f.output = text.str();
  return f;
}

Finished run_job(int np, const std::vector<std::string>& args, double limit_s = 120) {
  return wait_job(start_job(np, args), limit_s);
}

std::string write_program(const Program& program, const std::string& name) {
  const fs::path path = work_dir() / name;
  std::ofstream(path) << formats::write_msccl_xml(program);
  return path.string();
}

Program compiled_baseline(synth::BaselineKind kind, CollectiveKind collective,
                          const std::string& topology, bool inplace = false) {
  const Topology t = topologies::make_builtin(topology);
  const Collective c = make_collective(collective, t.num_ranks);
  compiler::CompileOptions options;
  options.inplace = inplace;
  return compiler::compile(synth::make_baseline(kind, c, t), options);
}

// The JSON document process 0 prints (the first '{' of the output to the end).
nlohmann::json json_of(const Finished& f) {
  const size_t start = f.output.find('{');
  if (start == std::string::npos) return nlohmann::json::object();
  return nlohmann::json::parse(f.output.substr(start), nullptr, false);
}

TEST(MpiCli, CheckedRunPrintsTheJsonDocument) {
  const std::string xml = write_program(
      compiled_baseline(synth::BaselineKind::kRing, CollectiveKind::kAllReduce, "ring:4"),
      "ring_allreduce_4.xml");
  const Finished f =
      run_job(4, {"run", xml, "--mpi", "--bytes", "64K", "--check", "--json", "--iters", "3"});
  ASSERT_EQ(f.exit_code, 0) << f.output;
  const nlohmann::json j = json_of(f);
  ASSERT_TRUE(j.is_object()) << f.output;
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["checked"], true);
  EXPECT_EQ(j["mismatches"], 0);
  EXPECT_EQ(j["checked_elements"], 4 * 16 * 1024);  // every rank's 64 KiB of float32 outputs
  EXPECT_EQ(j["bytes"], 64 * 1024);
  EXPECT_GT(j["time_us"].get<double>(), 0.0);
  EXPECT_GT(j["busbw_gbps"].get<double>(), 0.0);
  EXPECT_EQ(j["mpi"]["processes"], 4);
  // Only process 0 prints the document.
  EXPECT_EQ(f.output.find("ccsynth-run"), f.output.rfind("ccsynth-run")) << f.output;
}

TEST(MpiCli, MoreRanksThanProcessesAreSaidClearly) {
  const std::string xml = write_program(
      compiled_baseline(synth::BaselineKind::kRing, CollectiveKind::kAllGather, "ring:8", true),
      "ring_allgather_8.xml");
  const Finished f = run_job(
      4, {"run", xml, "--mpi", "--bytes", "8K", "--check", "--inplace", "--dtype", "float16"});
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_NE(f.output.find("check: ok"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("mpi: 8 ranks on 4 processes, 2 ranks per process"), std::string::npos)
      << f.output;
}

// The XML an example binary of the DSL (examples/dsl) writes for `topology` (empty: its default).
std::string example_program(const std::string& name, const std::string& topology) {
  const std::string xml = (work_dir() / (name + ".xml")).string();
  const std::string make = std::string(CCSYNTH_EXAMPLES_DIR) + "/" + name + " -o " + xml +
                           (topology.empty() ? "" : " --topology " + topology) +
                           " --size 64K > /dev/null 2>&1";
  if (std::system(make.c_str()) != 0) return "";
  return xml;
}

// Peer-style programs (MSCCLang): the all-pairs allreduce (every peer's block sent straight to
// its owner, reduced there, sent back; in-place), the DSL's two-step alltoall of two nodes
// (16 ranks, 4 per process, through scratch) and the twostep baseline (scratch buffer and fused
// rcs steps), all checked.
TEST(MpiCli, PeerStyleProgramsWithScratchAndFusedInstructions) {
  if (!fs::exists(std::string(CCSYNTH_EXAMPLES_DIR) + "/allpairs_allreduce")) {
    GTEST_SKIP() << "the DSL examples are not built";
  }
  const Program twostep =
      compiled_baseline(synth::BaselineKind::kTwoStep, CollectiveKind::kAllToAll, "dgx1x2");
  ASSERT_GT(twostep.gpus[0].scratch_chunks, 0);
  struct Case {
    std::string xml;
    bool inplace;
  };
  const std::vector<Case> cases = {{example_program("allpairs_allreduce", "fc:4"), true},
                                   {example_program("alltoall_two_step", ""), false},
                                   {write_program(twostep, "twostep_alltoall.xml"), false}};
  for (const Case& c : cases) {
    ASSERT_FALSE(c.xml.empty()) << "an example failed to write its program";
    SCOPED_TRACE(c.xml);
    std::vector<std::string> args = {"run",     c.xml,    "--mpi",    "--bytes", "48K",
                                     "--check", "--json", "--slices", "2"};
    if (c.inplace) args.push_back("--inplace");
    const Finished f = run_job(4, args);
    ASSERT_EQ(f.exit_code, 0) << f.output;
    const nlohmann::json j = json_of(f);
    EXPECT_EQ(j["ok"], true) << f.output;
    EXPECT_GT(j["checked_elements"].get<int64_t>(), 0);
  }
}

TEST(MpiCli, FewerRanksThanProcessesIsBadInput) {
  const std::string xml = write_program(
      compiled_baseline(synth::BaselineKind::kRing, CollectiveKind::kAllReduce, "ring:4"),
      "ring_allreduce_4b.xml");
  const Finished f = run_job(8, {"run", xml, "--mpi", "--bytes", "4K"});
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_NE(f.output.find("the program has 4 ranks but the job has 8 processes"), std::string::npos)
      << f.output;
}

// Rank r's only threadblock first receives from r-1, then sends to r+1: every rank waits for
// a message nobody will send.
Program cyclic_wait(int ranks) {
  Program p;
  p.name = "cyclic_wait";
  p.collective = CollectiveKind::kAllGather;
  p.num_ranks = ranks;
  p.chunks_per_loop = 1;
  for (int r = 0; r < ranks; ++r) {
    GpuProgram gpu;
    gpu.rank = r;
    gpu.input_chunks = 1;
    gpu.output_chunks = ranks;
    Threadblock tb;
    tb.send_peer = (r + 1) % ranks;
    tb.recv_peer = (r + ranks - 1) % ranks;
    Step recv;
    recv.type = StepType::kRecv;
    recv.dst_buffer = Buffer::kOutput;
    recv.dst_offset = tb.recv_peer;
    Step send;
    send.type = StepType::kSend;
    send.src_buffer = Buffer::kInput;
    send.src_offset = 0;
    tb.steps = {recv, send};
    gpu.threadblocks.push_back(tb);
    p.gpus.push_back(gpu);
  }
  return p;
}

TEST(MpiCli, DeadlockIsStoppedByTheWatchdogNamingTheWaitingSteps) {
  const std::string xml = write_program(cyclic_wait(4), "cyclic_wait.xml");
  const Finished f = run_job(4, {"run", xml, "--mpi", "--bytes", "4K", "--timeout", "2"}, 60);
  EXPECT_NE(f.exit_code, 0) << f.output;
  EXPECT_NE(f.exit_code, -1) << "the job hung: " << f.output;
  EXPECT_LT(f.seconds, 30);
  EXPECT_NE(f.output.find("timed out after"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("gpu[0]/tb[0]/step[0] (r, slice 0) waits to receive message 1 of 1 "
                          "from rank 3 (process 3) on channel 0"),
            std::string::npos)
      << f.output;
}

TEST(MpiCli, MissingPeerAndMismatchedMessagesAreBadInput) {
  // Rank 1 no longer receives from rank 0.
  Program missing =
      compiled_baseline(synth::BaselineKind::kRing, CollectiveKind::kAllGather, "ring:4");
  for (Threadblock& tb : missing.gpus[1].threadblocks) {
    if (tb.recv_peer == 0) {
      tb.recv_peer = -1;
      for (Step& s : tb.steps) {
        if (receives(s.type)) s.type = sends(s.type) ? StepType::kSend : StepType::kNop;
      }
    }
  }
  Finished f =
      run_job(4, {"run", write_program(missing, "missing_peer.xml"), "--mpi", "--bytes", "4K"});
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_NE(f.output.find("no threadblock of rank 1 receives from rank 0"), std::string::npos)
      << f.output;
  // The k-th receive expects a different count than the k-th send sends.
  Program mismatched = cyclic_wait(4);
  mismatched.name = "mismatched";
  for (GpuProgram& gpu : mismatched.gpus) {
    std::swap(gpu.threadblocks[0].steps[0], gpu.threadblocks[0].steps[1]);  // send, then receive
  }
  mismatched.gpus[2].threadblocks[0].steps[1].count = 2;
  f = run_job(4, {"run", write_program(mismatched, "mismatched.xml"), "--mpi", "--bytes", "4K"});
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_NE(f.output.find("gpu[2]/tb[0]/step[1]: count mismatch: receives cnt=2 but the matching "
                          "send gpu[1]/tb[0]/step[0] sends cnt=1"),
            std::string::npos)
      << f.output;
}

// The ccsynth processes mpiexec started (its children), found through /proc.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos || line.find("(ccsynth)") == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != 'Z') out.push_back(std::stoi(name));
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

TEST(MpiCli, AProcessThatDiesEndsTheWholeJob) {
  const std::string xml = write_program(
      compiled_baseline(synth::BaselineKind::kRing, CollectiveKind::kAllReduce, "ring:4"),
      "ring_allreduce_4c.xml");
  const Job job =
      start_job(4, {"run", xml, "--mpi", "--bytes", "1M", "--iters", "1000000", "--timeout", "20"});
  std::vector<pid_t> processes;
  const Clock::time_point start = Clock::now();
  while (processes.size() < 4 && Clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    processes = children_of(job.pid);
  }
  ASSERT_EQ(processes.size(), 4u) << wait_job(job, 1).output;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // well into the timed runs
  ASSERT_EQ(kill(processes[1], SIGKILL), 0);
  const Finished f = wait_job(job, 60);
  EXPECT_NE(f.exit_code, 0) << f.output;
  EXPECT_NE(f.exit_code, -1) << "the job hung: " << f.output;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (pid_t p : processes) EXPECT_FALSE(alive(p)) << "process " << p << " is still running";
}

}  // namespace
}  // namespace ccsynth
