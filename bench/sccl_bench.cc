// SCCL synthesis times (SCCL tables 4-5 and our speed targets: at most half the time of the
// reference Python SCCL on the same instances). Not a Google Benchmark: one SMT instance takes
// seconds, so each case runs once and prints its wall time.
//
//   sccl_bench                       all targets: allgather (6,7,7), (6,3,7), alltoall (8,3,3),
//                                    (24,2,8), the DGX-1 allgather frontier (k = 4) and the
//                                    least-steps allgather on 2 x DGX-1
//   sccl_bench instance T COLL C S R one instance (T: dgx1, amd, dgx1x2 = two DGX-1 with
//                                    GPU i <-> GPU i+8 links, builtin:NAME = topologies')
//   sccl_bench tables                every row of SCCL tables 4 and 5 (but table 4's alltoall C=2,
//                                    which is no alltoall, docs/sccl.md)
//   sccl_bench pareto T COLL [K]     one frontier
//   sccl_bench least T COLL C        least-steps mode (R = S)
//   sccl_bench ... --z3 NAME=VALUE   global Z3 parameter (repeatable), e.g. sat.pb.solver=totalizer
//   sccl_bench ... --no-symmetry     no lex-leader symmetry breaking
//   sccl_bench ... --smt             Z3's SMT core instead of its SAT core

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "ccsynth/solvers/smt.h"
#include "ccsynth/synth/sccl.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"

namespace {

using namespace ccsynth;
using namespace ccsynth::synth;

void add_ring(Topology& t, const std::vector<int>& order, int lanes, int offset) {
  for (size_t i = 0; i < order.size(); ++i) {
    const int a = order[i] + offset, b = order[(i + 1) % order.size()] + offset;
    for (auto [s, d] : {std::pair{a, b}, std::pair{b, a}}) {
      Link l;
      l.src = s;
      l.dst = d;
      l.lanes = lanes;
      l.alpha_us = 0.7;
      l.beta_us_per_mb = 40;
      l.kind = "nvlink";
      t.links.push_back(l);
    }
  }
}

// DGX-1 (SCCL fig. 1); `boxes` copies joined GPU i <-> GPU i of the next box by one link
// (one IB NIC per GPU).
Topology dgx1(int boxes) {
  Topology t;
  t.name = boxes == 1 ? "dgx1" : "dgx1x" + std::to_string(boxes);
  t.num_ranks = 8 * boxes;
  for (int b = 0; b < boxes; ++b) {
    std::vector<int> node;
    for (int i = 0; i < 8; ++i) node.push_back(8 * b + i);
    t.nodes.push_back(node);
    add_ring(t, {0, 1, 4, 5, 6, 7, 2, 3}, 2, 8 * b);
    add_ring(t, {0, 2, 1, 3, 6, 4, 7, 5}, 1, 8 * b);
  }
  for (int b = 0; b + 1 < boxes; ++b) {
    for (int i = 0; i < 8; ++i) {
      for (auto [s, d] :
           {std::pair{8 * b + i, 8 * (b + 1) + i}, std::pair{8 * (b + 1) + i, 8 * b + i}}) {
        Link l;
        l.src = s;
        l.dst = d;
        l.alpha_us = 5;
        l.beta_us_per_mb = 80;
        l.kind = "ib";
        t.links.push_back(l);
      }
    }
  }
  validate(t);
  return t;
}

Topology topology(const std::string& name) {
  if (name == "dgx1") return dgx1(1);
  if (name == "dgx1x2") return dgx1(2);
  if (name == "amd") return amd_z52_ring_topology();
  if (name.rfind("builtin:", 0) == 0) return topologies::make_builtin(name.substr(8));
  std::cerr << "unknown topology " << name << "\n";
  std::exit(2);
}

// CPU seconds of this process: the machine is shared, so wall time overstates solver time.
double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool check(const InstanceResult& r, const Topology& t) {
  if (!r.algorithm) return true;
  const auto report = verify::verify_algorithm(*r.algorithm, &t);
  if (!report.ok()) std::cout << "VERIFY FAILED\n" << report.summary();
  return report.ok();
}

double run_instance(const std::string& topo, const std::string& coll, int c, int s, int r,
                    const SolveOptions& o) {
  const Topology t = topology(topo);
  const auto start = std::chrono::steady_clock::now();
  const double cpu = cpu_now();
  const InstanceResult res =
      synthesize_sccl(parse_collective_kind(coll), paper_bandwidth_model(t), c, s, r, 0, o);
  const double secs = cpu_now() - cpu;
  std::cout << topo << " " << coll << " (" << c << "," << s << "," << r
            << "): " << to_string(res.status) << " in " << secs << " s cpu, " << since(start)
            << " s wall (encode " << res.encode_s << " s, " << res.variables << " vars, "
            << res.constraints << " constraints)" << std::endl;
  check(res, t);
  return secs;
}

double run_pareto(const std::string& topo, const std::string& coll, int k, const SolveOptions& o) {
  const Topology t = topology(topo);
  ParetoOptions po;
  po.k = k;
  po.solve = o;
  const auto start = std::chrono::steady_clock::now();
  const double cpu = cpu_now();
  const ParetoResult res = synthesize_sccl_pareto(
      parse_collective_kind(coll), paper_bandwidth_model(t), po, 0, [](const ParetoAttempt& a) {
        std::cout << "  try (" << a.chunks << "," << a.steps << "," << a.rounds
                  << "): " << to_string(a.status) << " " << a.seconds << " s" << std::endl;
      });
  const double secs = cpu_now() - cpu;
  std::cout << topo << " " << coll << " frontier k=" << k << " (a_l " << res.latency_bound
            << ", b_l " << res.bandwidth_bound.num << "/" << res.bandwidth_bound.den
            << "): " << to_string(res.status) << " in " << secs << " s cpu, " << since(start)
            << " s wall:";
  for (const ParetoPoint& p : res.frontier) {
    std::cout << " (" << p.chunks << "," << p.steps << "," << p.rounds << ")";
    const auto report = verify::verify_algorithm(p.algorithm, &t);
    if (!report.ok()) std::cout << "[VERIFY FAILED]";
  }
  std::cout << std::endl;
  return secs;
}

double run_least(const std::string& topo, const std::string& coll, int c, const SolveOptions& o) {
  const Topology t = topology(topo);
  const auto start = std::chrono::steady_clock::now();
  const double cpu = cpu_now();
  const InstanceResult res =
      synthesize_sccl_least_steps(parse_collective_kind(coll), paper_bandwidth_model(t), c, 0, 16,
                                  0, o, [](int s, const InstanceResult& r) {
                                    std::cout << "  S=" << s << ": " << to_string(r.status) << " "
                                              << r.encode_s + r.solve_s << " s" << std::endl;
                                  });
  const double secs = cpu_now() - cpu;
  std::cout << topo << " " << coll << " least steps C=" << c << ": " << to_string(res.status)
            << (res.algorithm ? " S=" + std::to_string(res.algorithm->num_steps()) : "") << " in "
            << secs << " s cpu, " << since(start) << " s wall" << std::endl;
  check(res, t);
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  SolveOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--z3" && i + 1 < argc) {
      const std::string kv = argv[++i];
      const auto eq = kv.find('=');
      solvers::set_smt_global_param(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--no-symmetry") {
      o.break_symmetry = false;
    } else if (a == "--smt") {
      o.use_sat_core = false;
    } else if (a == "--time-limit" && i + 1 < argc) {
      o.time_limit_s = std::stod(argv[++i]);
    } else {
      args.push_back(a);
    }
  }
  try {
    if (!args.empty() && args[0] == "instance" && args.size() == 6) {
      run_instance(args[1], args[2], std::stoi(args[3]), std::stoi(args[4]), std::stoi(args[5]), o);
    } else if (!args.empty() && args[0] == "pareto" && args.size() >= 3) {
      run_pareto(args[1], args[2], args.size() > 3 ? std::stoi(args[3]) : 4, o);
    } else if (!args.empty() && args[0] == "tables") {
      struct Row {
        const char* topo;
        const char* coll;
        int c, s, r;
      };
      const std::vector<Row> rows = {
          {"dgx1", "allgather", 1, 2, 2},     {"dgx1", "allgather", 2, 3, 3},
          {"dgx1", "allgather", 3, 4, 4},     {"dgx1", "allgather", 4, 5, 5},
          {"dgx1", "allgather", 5, 6, 6},     {"dgx1", "allgather", 6, 7, 7},
          {"dgx1", "allgather", 6, 3, 7},     {"dgx1", "allgather", 2, 2, 3},
          {"dgx1", "reducescatter", 6, 3, 7}, {"dgx1", "allreduce", 8, 4, 4},
          {"dgx1", "allreduce", 16, 6, 6},    {"dgx1", "allreduce", 24, 8, 8},
          {"dgx1", "allreduce", 32, 10, 10},  {"dgx1", "allreduce", 40, 12, 12},
          {"dgx1", "allreduce", 48, 14, 14},  {"dgx1", "allreduce", 48, 6, 14},
          {"dgx1", "allreduce", 16, 4, 6},    {"dgx1", "broadcast", 2, 2, 2},
          {"dgx1", "broadcast", 6, 3, 3},     {"dgx1", "broadcast", 12, 4, 4},
          {"dgx1", "broadcast", 18, 5, 5},    {"dgx1", "broadcast", 6, 3, 5},
          {"dgx1", "reduce", 18, 5, 5},       {"dgx1", "gather", 1, 2, 2},
          {"dgx1", "gather", 2, 3, 3},        {"dgx1", "gather", 3, 4, 4},
          {"dgx1", "gather", 4, 5, 5},        {"dgx1", "gather", 5, 6, 6},
          {"dgx1", "gather", 6, 7, 7},        {"dgx1", "gather", 6, 3, 7},
          {"dgx1", "scatter", 6, 3, 7},       {"dgx1", "alltoall", 8, 3, 3},
          {"dgx1", "alltoall", 8, 2, 3},      {"dgx1", "alltoall", 24, 8, 8},
          {"dgx1", "alltoall", 24, 2, 8},     {"amd", "allgather", 1, 4, 4},
          {"amd", "allgather", 2, 7, 7},      {"amd", "allgather", 2, 4, 7},
          {"amd", "allreduce", 8, 8, 8},      {"amd", "allreduce", 16, 14, 14},
          {"amd", "allreduce", 16, 8, 14},    {"amd", "broadcast", 2, 4, 4},
          {"amd", "broadcast", 4, 5, 5},      {"amd", "broadcast", 6, 6, 6},
          {"amd", "broadcast", 8, 7, 7},      {"amd", "broadcast", 10, 8, 8},
          {"amd", "gather", 1, 4, 4},         {"amd", "gather", 2, 4, 7},
          {"amd", "alltoall", 8, 4, 8}};
      double total = 0;
      for (const Row& row : rows) total += run_instance(row.topo, row.coll, row.c, row.s, row.r, o);
      std::cout << "tables: " << rows.size() << " rows in " << total << " s cpu\n";
    } else if (!args.empty() && args[0] == "least" && args.size() == 4) {
      run_least(args[1], args[2], std::stoi(args[3]), o);
    } else if (args.empty()) {
      // Speed targets: the reference Python SCCL's seconds on this machine class.
      struct Target {
        const char* what;
        double reference_s;
        double ours_s;
      };
      std::vector<Target> targets;
      targets.push_back({"allgather (6,7,7)", 16.0, run_instance("dgx1", "allgather", 6, 7, 7, o)});
      targets.push_back({"allgather (6,3,7)", 33.1, run_instance("dgx1", "allgather", 6, 3, 7, o)});
      targets.push_back({"alltoall (8,3,3)", 8.9, run_instance("dgx1", "alltoall", 8, 3, 3, o)});
      targets.push_back(
          {"alltoall (24,2,8)", 281.8, run_instance("dgx1", "alltoall", 24, 2, 8, o)});
      targets.push_back({"DGX-1 allgather frontier", 197.6, run_pareto("dgx1", "allgather", 4, o)});
      targets.push_back(
          {"2xDGX-1 allgather least-steps", 600.0, run_least("dgx1x2", "allgather", 1, o)});
      targets.push_back({"2xDGX-1 (IB rails) allgather least-steps", 600.0,
                         run_least("builtin:dgx1x2", "allgather", 1, o)});
      std::cout << "\nsummary (target: at most half the reference)\n";
      for (const Target& t : targets) {
        std::cout << "  " << t.what << ": " << t.ours_s << " s cpu (reference " << t.reference_s
                  << " s, " << (t.ours_s <= t.reference_s / 2 ? "met" : "NOT met") << ")\n";
      }
    } else {
      std::cerr << "usage: see the header of bench/sccl_bench.cc\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
