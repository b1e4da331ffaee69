// Fidelity of the simulator against the papers (docs/fidelity.md): for every headline
// comparison of TACCL, SCCL, TACOS and MSCCLang, the speedup the paper MEASURED (algorithm over
// its reference) beside the speedup ccsynth SIMULATES for the same algorithm and reference on the
// matching built-in topology and size. Prints CSV, one row per comparison:
//
//   paper,figure,collective,topology,size,algorithm,reference,paper_ratio,sim_ratio,quotient,
//   within_30pct
//
// sim_ratio = simulated time of the reference / simulated time of the algorithm; quotient =
// sim_ratio / paper_ratio; within_30pct = |quotient - 1| <= 0.3. `size` is bytes per rank (the
// input buffer; TACCL's allgather figures give the output buffer, divided by the ranks here).
// Both sides are built by the planner (plan::plan) from a registered method (taccl with the
// paper's sketch, sccl, tacos, the baselines) or a DSL example program (examples/dsl/), and
// evaluated with the same compiled variants; the fastest variant per size is kept for each.
//
//   fidelity_bench [--quick] [--paper NAME] [--rows 22,23] [--time-limit SEC] [--list]
//                  [--markdown]
//
// --quick runs the cheaper subset (no 128-256 rank cases, fewer syntheses); --paper keeps the
// rows of one paper (TACCL, SCCL, TACOS, MSCCLang); --rows keeps the rows of those numbers
// (docs/fidelity.md's #, 1-based; numbers are kept in the output); --time-limit is the TACCL / SCCL solver
// limit per stage (default 3 s; SCCL gets 10x); --list prints the rows without running them;
// --markdown prints docs/fidelity.md's table instead of CSV.
// The last line is a summary: rows, rows within 30%, percentage. Progress goes to stderr.
//
// The reference each paper measured against is chosen in one place, reference_for(): switch it
// there when the NCCL reference changes.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/program.h"
#include "ccsynth/core/units.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/plan/report.h"
#include "ccsynth/topologies/library.h"

#ifdef CCSYNTH_FIDELITY_DSL
#include <CLI/CLI.hpp>

#include "ccsynth/plan/dsl.h"
#include "example.h"

namespace ccsynth::examples {
Example allpairs_allreduce_example();
Example ring_allreduce_example();
}  // namespace ccsynth::examples
#endif

namespace {

using namespace ccsynth;
using nlohmann::json;

constexpr int64_t KB = 1024;
constexpr int64_t MB = 1024 * KB;
constexpr int64_t GB = 1024 * MB;

/// How one side of a comparison is made: a registered method with parameters, or a DSL example.
/// Method name of the planner's NCCL reference (not a registry method).
constexpr const char* kNcclMethod = "(nccl)";

struct Method {
  std::string label;   // printed in the CSV
  std::string method;  // synth::synthesizers() name ("" for a DSL program)
  json params = json::object();
  int chunks = 0;   // per rank in the method's units (0 = its default)
  std::string dsl;  // examples/dsl program name (method == "")
  std::string dsl_flags;
  // Protocols the side is run in, the fastest kept per size: what the paper's runtime did.
  // Simple for SCCL (its own Simple-like protocol, and NCCL with NCCL_PROTO=Simple, SCCL sec.
  // 5.5), TACOS (ASTRA-sim has no protocols) and NCCL 2.8's p2p; all three where the paper
  // tuned the protocol per size (MSCCLang sec. 7), for TACCL (taccl()) and where NCCL's tuner
  // picks it (the `nccl` reference).
  std::vector<Protocol> protocols = {Protocol::kSimple};
};

/// One headline comparison of a paper.
struct Row {
  std::string paper;       // TACCL, SCCL, TACOS, MSCCLang
  std::string figure;      // where the number is (no commas)
  std::string collective;  // allgather, allreduce, alltoall, alltonext
  std::string topology;    // built-in name
  int64_t bytes;           // per rank
  Method algorithm;
  std::string reference;  // what the paper measured against (see reference_for)
  double paper_ratio;     // the paper's measured speedup of `algorithm` over `reference`
  bool quick;             // in the --quick subset
};

std::string sketch(const std::string& name) {
  return std::string(CCSYNTH_SOURCE_DIR) + "/examples/sketches/" + name + ".json";
}

/// TACCL with the paper's sketch, compiled in each of NCCL's protocols (the fastest per size):
/// TACCL's runtime is NCCL's (2.8.4) with its three protocols, and the paper plots the best
/// lowering per size (sec. 7, app. C) without naming the protocol, so both sides get the same
/// choice as the `nccl` reference.
Method taccl(const std::string& sketch_name) {
  return {"taccl(" + sketch_name.substr(sketch_name.rfind('/') + 1) + ")",
          "taccl",
          json{{"sketch", sketch(sketch_name)}},
          0,
          "",
          "",
          plan::kNcclProtocols};
}

Method sccl(int c, int s, int r) {
  return {"sccl(" + std::to_string(c) + ";" + std::to_string(s) + ";" + std::to_string(r) + ")",
          "sccl",
          json{{"steps", s}, {"rounds", r}},
          c,
          "",
          ""};
}

Method tacos() { return {"tacos", "tacos", json{{"trials", 2}}, 0, "", ""}; }

Method baseline(const std::string& name, json params = json::object()) {
  return {name, name, std::move(params), 0, "", ""};
}

/// TACOS' "(bidirectional) Ring" baseline as ASTRA-sim runs it (TACOS sec. V.A): one logical
/// ring in rank order mapped over the topology, used in both directions (half the data each),
/// sends between unconnected ranks routed by the network.
Method tacos_ring() {
  return {"ring(rank order, bidirectional)",
          "ring",
          json{{"rings", 2}, {"bidirectional", true}, {"end-to-end", true}},
          2,
          "",
          ""};
}

/// Direct end to end: every block straight to its destination in one step, routed by the
/// network (TACOS' Direct in ASTRA-sim, NCCL's p2p send/recv).
Method direct_end_to_end() {
  return {"direct(end to end)", "direct", json{{"end-to-end", true}}, 0, "", ""};
}

Method dsl(const std::string& name, const std::string& flags = "",
           const std::string& fallback = "") {
#ifdef CCSYNTH_FIDELITY_DSL
  (void)fallback;
  return {
      "dsl:" + name + (flags.empty() ? "" : "(" + flags + ")"), "", json::object(), 0, name, flags};
#else
  (void)flags;
  (void)name;
  return baseline(fallback);  // built without the DSL examples: the closest baseline
#endif
}

/// The planner's NCCL reference (plan/reference.h: what NCCL would run, the fastest of its
/// candidates per size), the same one every table of ccsynth compares with.
Method nccl() { return {"nccl", kNcclMethod, json::object(), 0, "", "", plan::kNcclProtocols}; }

/// NCCL run with NCCL_PROTO=Simple, SCCL's baseline (SCCL sec. 5.5).
Method nccl_simple() {
  return {"nccl(Simple)", kNcclMethod, json::object(), 0, "", "", {Protocol::kSimple}};
}

/// NCCL's point-to-point send/recv (its alltoall, AllToNext by send/recv): direct end to end,
/// as the planner's `nccl` reference runs alltoall (plan/reference.h).
Method nccl_p2p() {
  Method m = direct_end_to_end();
  m.label = "nccl(p2p)";
  return m;
}

/// `m` with the protocol tuned per size, as MSCCLang's evaluation does (sec. 7).
Method tuned(Method m) {
  m.protocols = plan::kNcclProtocols;
  return m;
}

/// The reference a paper's number is relative to: the planner's `nccl` reference for NCCL, the
/// registry's baselines otherwise.
Method reference_for(const Row& row) {
  const std::string& r = row.reference;
  if (r == "nccl") return nccl();                                      // NCCL (TACCL, MSCCLang)
  if (r == "nccl-simple") return nccl_simple();                        // NCCL_PROTO=Simple (SCCL)
  if (r == "nccl-p2p" || r == "nccl-send-next") return nccl_p2p();     // NCCL's send/recv
  if (r == "ring") return tacos_ring();                                // TACOS' logical ring
  if (r == "direct") return direct_end_to_end();                       // TACOS' Direct (ASTRA-sim)
  if (r == "dbt") return baseline("dbt", json{{"end-to-end", true}});  // trees over rank ids
  return baseline(r);                                                  // rhd, dbt as named
}

std::vector<Row> rows() {
  const int agx32 = 32, agx16 = 16;  // ranks: TACCL's allgather sizes are output buffers
  std::vector<Row> v = {
      // ---- TACCL (NSDI'23) sec. 7.1, figs. 6-8 and 11; NCCL 2.8.4 -------------------------
      {"TACCL", "sec 7.1 fig 6(i) 256MB-1GB: 20-25%", "allgather", "dgx2x2", 1 * GB / agx32,
       taccl("dgx2-sk-1"), "nccl", 1.225, true},
      {"TACCL", "sec 7.1 fig 6(i) 1KB-1MB: 4.9-6.7x", "allgather", "dgx2x2", 32 * KB / agx32,
       taccl("dgx2-sk-2"), "nccl", 5.8, true},
      {"TACCL", "sec 7.1 fig 6(i) 2MB-64MB: 10%-3.8x", "allgather", "dgx2x2", 8 * MB / agx32,
       taccl("dgx2-sk-2"), "nccl", 2.45, false},
      {"TACCL", "sec 7.1 fig 6(ii) 1KB-1MB: 12-35%", "allgather", "ndv2x2", 32 * KB / agx16,
       taccl("ndv2-sk-1"), "nccl", 1.235, true},
      {"TACCL", "sec 7.1 fig 6(ii) >1MB: 61%-3.4x", "allgather", "ndv2x2", 32 * MB / agx16,
       taccl("ndv2-sk-1"), "nccl", 2.505, true},
      {"TACCL", "app C fig 11(i) all sizes: 10%-2.2x", "allgather", "ndv2x4", 1 * MB / agx32,
       taccl("taccl/sk1-ndv2-n4"), "nccl", 1.65, false},
      {"TACCL", "sec 7.1 fig 7(i) >=2MB: up to 15%", "alltoall", "dgx2x2", 64 * MB,
       taccl("dgx2-sk-2"), "nccl-p2p", 1.15, false},
      {"TACCL", "sec 7.1 fig 7(ii) 16MB-1GB: 53-66%", "alltoall", "ndv2x2", 128 * MB,
       taccl("ndv2-sk-1"), "nccl-p2p", 1.595, true},
      {"TACCL", "sec 7.1 fig 7(ii) 1KB-128KB: up to 12%", "alltoall", "ndv2x2", 16 * KB,
       taccl("ndv2-sk-2"), "nccl-p2p", 1.12, true},
      {"TACCL", "app C fig 11(ii) >1MB: up to 46%", "alltoall", "ndv2x4", 64 * MB,
       taccl("taccl/sk1-ndv2-n4"), "nccl-p2p", 1.46, false},
      {"TACCL", "sec 7.1 fig 8(i) 1KB-4MB: 49%-6.4x", "allreduce", "dgx2x2", 64 * KB,
       taccl("dgx2-sk-2"), "nccl", 3.945, true},
      {"TACCL", "sec 7.1 fig 8(i) 16MB-256MB: 2-37%", "allreduce", "dgx2x2", 64 * MB,
       taccl("dgx2-sk-1"), "nccl", 1.195, false},
      {"TACCL", "sec 7.1 fig 8(i) >=512MB: 0-9% slower", "allreduce", "dgx2x2", 1 * GB,
       taccl("dgx2-sk-1"), "nccl", 0.955, false},
      {"TACCL", "sec 7.1 fig 8(ii) <=1MB 1 instance: up to 28%", "allreduce", "ndv2x2", 64 * KB,
       taccl("ndv2-sk-1"), "nccl", 1.28, true},
      {"TACCL", "sec 7.1 fig 8(ii) >1MB 8 instances: 28%-2.7x", "allreduce", "ndv2x2", 64 * MB,
       taccl("ndv2-sk-1"), "nccl", 1.99, true},
      {"TACCL", "app C fig 11(iii) small: up to 34%", "allreduce", "ndv2x4", 64 * KB,
       taccl("taccl/sk1-ndv2-n4"), "nccl", 1.34, false},
      {"TACCL", "app C fig 11(iii) large: 1.9-2.1x", "allreduce", "ndv2x4", 256 * MB,
       taccl("taccl/sk1-ndv2-n4"), "nccl", 2.0, false},
      // ---- SCCL (PPoPP'21) sec. 5.5, figs. 4-6, algorithms of table 4; NCCL 2.7.8 simple ----
      {"SCCL", "sec 5.5 fig 4 small: up to 2.2x", "allgather", "dgx1", 1 * KB, sccl(1, 2, 2),
       "nccl-simple", 2.2, true},
      {"SCCL", "sec 5.5 fig 4 large: 1.14x", "allgather", "dgx1", 256 * MB, sccl(6, 3, 7),
       "nccl-simple", 1.14, true},
      {"SCCL", "sec 5.5 fig 5 small 8-chunk: up to 1.8x", "allreduce", "dgx1", 4 * KB,
       sccl(8, 4, 4), "nccl-simple", 1.8, true},
      {"SCCL", "sec 5.5 fig 5 large 48-chunk: up to 1.06x", "allreduce", "dgx1", 256 * MB,
       sccl(48, 14, 14), "nccl-simple", 1.06, false},
      {"SCCL", "sec 5.5 fig 6 large: over 6.8x", "alltoall", "dgx1", 1 * GB, sccl(24, 2, 8),
       "nccl-p2p", 6.8, false},
      {"SCCL", "sec 5.5 fig 6 small: over 1.4x", "alltoall", "dgx1", 1 * KB, sccl(8, 3, 3),
       "nccl-p2p", 1.4, true},
      // ---- TACOS (MICRO'24): fig. 2 (64 NPUs) / fig. 22 (10x10 mesh) / table V (3D-RFS) ------
      {"TACOS", "sec II fig 2 mesh: 1.98x over ring", "allreduce", "mesh2d:8x8", 1 * GB, tacos(),
       "ring", 1.98, true},
      {"TACOS", "sec II fig 2 hypercube: 2.97x over ring", "allreduce", "mesh3d:4x4x4", 1 * GB,
       tacos(), "ring", 2.97, false},
      {"TACOS", "sec II fig 2 ring topology: ring 16.71x over direct", "allreduce", "ring:64",
       1 * GB, tacos_ring(), "direct", 16.71, true},
      {"TACOS", "sec II fig 2 FC: direct 31.40x over ring", "allreduce", "fc:64", 1 * GB,
       direct_end_to_end(), "ring", 31.40, false},
      {"TACOS", "sec VI.C fig 22 avg 25MB-1.6GB: 2.26x over ring", "allreduce", "mesh2d:10x10",
       256 * MB, tacos(), "ring", 2.26, false},
      {"TACOS", "sec VI.C fig 22 avg 25MB-1.6GB: 11.00x over direct", "allreduce", "mesh2d:10x10",
       256 * MB, tacos(), "direct", 11.00, false},
      {"TACOS", "sec VI.B table V 16 NPUs: 7.14x over ring", "allreduce", "rfs:2x4x2", 1 * GB,
       tacos(), "ring", 7.14, true},
      {"TACOS", "sec VI.B table V 16 NPUs: 5.27x over RHD", "allreduce", "rfs:2x4x2", 1 * GB,
       tacos(), "rhd", 5.27, true},
      {"TACOS", "sec VI.B table V 16 NPUs: 4.04x over direct", "allreduce", "rfs:2x4x2", 1 * GB,
       tacos(), "direct", 4.04, true},
      {"TACOS", "sec VI.B table V 16 NPUs: 47.13x over DBT", "allreduce", "rfs:2x4x2", 1 * GB,
       tacos(), "dbt", 47.13, true},
      {"TACOS", "sec VI.B table V 32 NPUs: 5.10x over ring", "allreduce", "rfs:2x4x4", 1 * GB,
       tacos(), "ring", 5.10, false},
      {"TACOS", "sec VI.B table V 32 NPUs: 7.86x over direct", "allreduce", "rfs:2x4x4", 1 * GB,
       tacos(), "direct", 7.86, false},
      {"TACOS", "sec VI.B table V 64 NPUs: 4.80x over ring", "allreduce", "rfs:2x4x8", 1 * GB,
       tacos(), "ring", 4.80, false},
      {"TACOS", "sec VI.B table V 64 NPUs: 16.84x over direct", "allreduce", "rfs:2x4x8", 1 * GB,
       tacos(), "direct", 16.84, false},
      // ---- MSCCLang (ASPLOS'23) sec. 7, fig. 8; NCCL 2.8.4 ---------------------------------
      {"MSCCLang", "sec 7.1.1 fig 8a 32KB-3MB: up to 1.9x", "allreduce", "ndv4", 1 * MB,
       tuned(dsl("ring_allreduce", "--channels 8", "ring")), "nccl", 1.9, true},
      {"MSCCLang", "sec 7.1.2 fig 8a 1KB-1MB: up to 1.8x", "allreduce", "ndv4", 64 * KB,
       tuned(dsl("allpairs_allreduce", "", "direct")), "nccl", 1.8, true},
      {"MSCCLang", "sec 7.2 fig 8c small: up to 1.4x", "allreduce", "ndv4x2", 64 * KB,
       tuned(baseline("hier")), "nccl", 1.4, true},
      {"MSCCLang", "sec 7.2 fig 8c >1GB: up to 11%", "allreduce", "ndv4x2", 2 * GB,
       tuned(baseline("hier")), "nccl", 1.11, true},
      {"MSCCLang", "sec 7.3 fig 8e >512MB: 20% over NCCL", "alltoall", "ndv4x16", 1 * GB,
       tuned(baseline("twostep")), "nccl-p2p", 1.20, false},
      {"MSCCLang", "sec 7.4 fig 8g large: up to 14.5x", "alltonext", "ndv4x3", 1 * GB,
       tuned(baseline("cooperative")), "nccl-send-next", 14.5, true},
  };
  return v;
}

// ---- running ---------------------------------------------------------------------------

/// One plan() call: a method on a topology for a collective, at every size rows ask for.
struct Job {
  Method method;
  std::string collective;
  std::string topology;
  std::set<int64_t> sizes;
  std::map<int64_t, double> time_us;  // filled by run_job
  std::string error;
  double seconds = 0;
};

std::string job_key(const Method& m, const Row& r) {
  std::string protocols;
  for (const Protocol p : m.protocols) protocols += to_string(p) + ",";
  return m.method + "|" + m.params.dump() + "|" + std::to_string(m.chunks) + "|" + m.dsl + "|" +
         m.dsl_flags + "|" + protocols + "|" + r.collective + "|" + r.topology;
}

plan::VariantSpace variants_for(const Topology& t) {
  plan::VariantSpace space;
  // TACCL sec. 7 lowers with 1 and 8 instances; NCCL runs many channels. Large clusters get one
  // instance to keep the bench within minutes.
  space.instances = t.num_ranks <= 32 ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1};
  return space;
}

void record(Job& job, const plan::PlanResult& result) {
  if (!result.ok()) {
    job.error = "no verified program (status " + to_string(result.synthesis.status) + ")";
    return;
  }
  for (size_t i = 0; i < result.sizes.size(); ++i) {
    const double t = result.program->results.at(i).time_us;
    auto [it, fresh] = job.time_us.emplace(result.sizes[i], t);
    if (!fresh) it->second = std::min(it->second, t);
  }
}

// The planner's NCCL reference on the request's collective, topology and sizes.
void run_nccl(Job& job, const Topology& topology, const plan::PlanRequest& request) {
  const Collective collective =
      request.collective ? *request.collective
                         : make_collective(request.kind, topology.num_ranks, 1, request.root);
  plan::EvaluateOptions options;
  options.topology = &topology;
  options.sizes = request.sizes;
  compiler::CompileOptions base = plan::compile_options(request);
  const std::optional<plan::Evaluated> evaluated = plan::evaluate_nccl(
      collective, topology, base, request.variants, options, job.method.protocols);
  if (!evaluated) {
    job.error = "no NCCL algorithm applies";
    return;
  }
  plan::PlanResult result;
  result.sizes = request.sizes;
  result.program = *evaluated;
  record(job, result);
}

// The synthesized algorithm compiled in the method's other protocols (one synthesis, as a
// runtime that tunes the protocol per size runs the same algorithm in each).
void run_other_protocols(Job& job, const Topology& topology, const plan::PlanRequest& request,
                         const Algorithm& algorithm) {
  plan::EvaluateOptions options;
  options.topology = &topology;
  for (size_t i = 1; i < job.method.protocols.size(); ++i) {
    compiler::CompileOptions compile = plan::compile_options(request);
    compile.protocol = job.method.protocols[i];
    // Only where the protocol's lower bound is below the time so far (as evaluate_nccl does).
    std::vector<double> best_us;
    for (const int64_t bytes : request.sizes) best_us.push_back(job.time_us.at(bytes));
    options.sizes = plan::sizes_protocol_can_win(algorithm.collective, algorithm.routed, topology,
                                                 compile.protocol, request.sizes, best_us);
    if (options.sizes.empty()) continue;
    plan::PlanResult result;
    result.sizes = options.sizes;
    try {
      result.program = plan::evaluate_variants(algorithm, compile, request.variants, options);
    } catch (const UserError&) {
      continue;  // over the runtime's limits in this protocol
    }
    record(job, result);
  }
}

#ifdef CCSYNTH_FIDELITY_DSL
void run_dsl(Job& job, const Topology& topology, plan::PlanRequest request) {
  const examples::Example example = job.method.dsl == "ring_allreduce"
                                        ? examples::ring_allreduce_example()
                                        : examples::allpairs_allreduce_example();
  if (example.add_flags) {
    CLI::App app;
    example.add_flags(app);
    app.parse(job.method.dsl_flags, false);
  }
  // MSCCLang tunes instances per size (fig. 8's r): the fastest of these per size.
  for (const Protocol protocol : job.method.protocols) {
    for (int instances : variants_for(topology).instances) {
      examples::ExampleArgs args;
      args.topology = job.topology;
      args.instances = instances;
      args.protocol = to_string(protocol);
      try {  // a variant over the runtime's limits (channels x instances) is left out
        const auto program = example.build(topology, args);
        record(job, plan::plan_dsl(*program, request));
      } catch (const UserError& e) {
        std::fprintf(stderr, "# %s with %d instances: %s\n", job.method.label.c_str(), instances,
                     e.what());
      }
    }
  }
  if (job.time_us.empty()) job.error = "no instance count fits the runtime's limits";
}
#endif

void run_job(Job& job, double time_limit) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const Topology topology = topologies::make_builtin(job.topology);
    plan::PlanRequest request;
    request.topology = topology;
    request.sizes.assign(job.sizes.begin(), job.sizes.end());
    request.compare_with_nccl = false;
    request.variants = variants_for(topology);
    request.chunks = job.method.chunks;
    request.synth.params = job.method.params;
    request.synth.time_limit_s = job.method.method == "sccl" ? 10 * time_limit : time_limit;
    if (job.method.method == "taccl") request.synth.params["stall"] = std::min(1.0, time_limit);
    if (job.method.method == "tacos") request.synth.bytes = *job.sizes.rbegin();
    if (job.collective == "alltonext") {
      const int gpus = topology.nodes.empty() ? 1 : static_cast<int>(topology.nodes[0].size());
      request.collective = make_alltonext(topology.num_ranks, gpus);
    } else {
      request.kind = parse_collective_kind(job.collective);
    }
    if (job.method.method == kNcclMethod) {
      run_nccl(job, topology, request);
    } else if (job.method.method.empty()) {
#ifdef CCSYNTH_FIDELITY_DSL
      run_dsl(job, topology, request);
#endif
    } else {
      request.method = job.method.method;
      request.compile.protocol = job.method.protocols.front();
      const plan::PlanResult result = plan::plan(request);
      record(job, result);
      if (result.ok()) run_other_protocols(job, topology, request, result.program->algorithm);
    }
  } catch (const std::exception& e) {
    job.error = e.what();
  }
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "# %-40s %-10s %-14s %6.1f s%s%s\n", job.method.label.c_str(),
               job.collective.c_str(), job.topology.c_str(), job.seconds,
               job.error.empty() ? "" : "  ERROR: ", job.error.c_str());
}

/// The row numbers of a `--rows` list ("22,23,30"); nullopt when an entry is not a number in
/// 1..count.
std::optional<std::set<size_t>> parse_rows(const std::string& list, size_t count) {
  std::set<size_t> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    char* rest = nullptr;
    const long n = std::strtol(item.c_str(), &rest, 10);
    if (item.empty() || *rest != '\0' || n < 1 || static_cast<size_t>(n) > count) {
      return std::nullopt;
    }
    out.insert(static_cast<size_t>(n));
    start = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  bool list = false;
  bool markdown = false;
  double time_limit = 3.0;
  std::string only;
  std::string row_list;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--markdown") {
      markdown = true;
    } else if (arg == "--paper" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--rows" && i + 1 < argc) {
      row_list = argv[++i];
    } else if (arg == "--time-limit" && i + 1 < argc) {
      time_limit = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: fidelity_bench [--quick] [--paper NAME] [--rows 22,23] "
                   "[--time-limit SEC] [--list] [--markdown]\n");
      return 2;
    }
  }
  const std::vector<Row> all_rows = rows();
  std::optional<std::set<size_t>> wanted;
  if (!row_list.empty()) {
    wanted = parse_rows(row_list, all_rows.size());
    if (!wanted) {
      std::fprintf(stderr, "fidelity_bench: --rows '%s': expected row numbers 1-%zu, e.g. 22,23\n",
                   row_list.c_str(), all_rows.size());
      return 2;
    }
  }
  std::vector<Row> selected;
  std::vector<size_t> numbers;  // each selected row's number in rows(), 1-based
  for (size_t i = 0; i < all_rows.size(); ++i) {
    const Row& r = all_rows[i];
    if ((!quick || r.quick) && (only.empty() || r.paper == only) &&
        (!wanted || wanted->count(i + 1))) {
      selected.push_back(r);
      numbers.push_back(i + 1);
    }
  }
  // One plan() per (method, collective, topology), at every size its rows need.
  std::map<std::string, Job> jobs;
  std::vector<std::pair<std::string, std::string>> keys;  // per row: algorithm, reference
  for (const Row& r : selected) {
    const Method ref = reference_for(r);
    for (const Method* m : {&r.algorithm, &ref}) {
      Job& job = jobs[job_key(*m, r)];
      job.method = *m;
      job.collective = r.collective;
      job.topology = r.topology;
      job.sizes.insert(r.bytes);
    }
    keys.emplace_back(job_key(r.algorithm, r), job_key(ref, r));
  }
  if (markdown) {
    std::printf(
        "| # | paper | figure | collective | topology | size | algorithm | reference | paper | "
        "sim | quotient | within 30%% | algorithm us | reference us |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  }
  // CSV through plan::to_csv: labels such as "ring(rank order, bidirectional)" hold commas.
  plan::Table csv{
      {"paper", "figure", "collective", "topology", "size", "algorithm", "reference", "paper_ratio",
       "sim_ratio", "quotient", "within_30pct", "algorithm_us", "reference_us"},
      {}};
  const auto t0 = std::chrono::steady_clock::now();
  if (!list) {
    for (auto& [key, job] : jobs) run_job(job, time_limit);
  }
  int within = 0;
  for (size_t i = 0; i < selected.size(); ++i) {
    const Row& r = selected[i];
    const Job& a = jobs[keys[i].first];
    const Job& b = jobs[keys[i].second];
    const auto ta = a.time_us.find(r.bytes);
    const auto tb = b.time_us.find(r.bytes);
    const double alg_us = ta != a.time_us.end() ? ta->second : NAN;
    const double ref_us = tb != b.time_us.end() ? tb->second : NAN;
    const double sim = alg_us > 0 ? ref_us / alg_us : NAN;
    const double quotient = sim / r.paper_ratio;
    const bool ok = std::isfinite(quotient) && std::fabs(quotient - 1) <= 0.3;
    within += ok ? 1 : 0;
    const std::string size = format_bytes(r.bytes);
    if (markdown) {
      std::printf(
          "| %zu | %s | %s | %s | %s | %s | %s | %s | %.3f | %.3f | %.3f | %s | %.2f | %.2f |\n",
          numbers[i], r.paper.c_str(), r.figure.c_str(), r.collective.c_str(), r.topology.c_str(),
          size.c_str(), a.method.label.c_str(), b.method.label.c_str(), r.paper_ratio, sim,
          quotient, ok ? "yes" : "no", alg_us, ref_us);
    } else {
      const auto fixed = [](double x) { return fmt::format("{:.3f}", x); };
      csv.add(r.paper, r.figure, r.collective, r.topology, size, a.method.label, b.method.label,
              fixed(r.paper_ratio), fixed(sim), fixed(quotient), ok ? "yes" : "no", fixed(alg_us),
              fixed(ref_us));
    }
  }
  if (!markdown) std::fputs(plan::to_csv(csv).c_str(), stdout);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int n = static_cast<int>(selected.size());
  std::printf("# summary: %d rows, %d within 30%% (%.0f%%), %.0f s\n", n, within,
              n ? 100.0 * within / n : 0.0, seconds);
  return 0;
}
