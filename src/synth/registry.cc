#include "ccsynth/synth/registry.h"
#include "ccsynth/core/timing.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/synth/sccl.h"
#include "ccsynth/synth/sketch.h"
#include "ccsynth/synth/taccl.h"
#include "ccsynth/synth/tacos.h"
#include "ccsynth/synth/trees.h"

namespace ccsynth::synth {

namespace {

constexpr int64_t kDefaultBytes = int64_t{1} << 20;

// Typed reads of a checked parameter, `fallback` when absent.
template <typename T>
T param(const SynthOptions& o, const std::string& name, T fallback) {
  const auto it = o.params.find(name);
  return it == o.params.end() ? fallback : it->get<T>();
}

bool flag(const SynthOptions& o, const std::string& name) { return param(o, name, false); }

void report(const SynthOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// ---- TACCL -------------------------------------------------------------------------------

nlohmann::json stage_json(const StageReport& s) {
  return {{"stage", s.name},
          {"seconds", s.seconds},
          {"status", s.status},
          {"objective_us", s.objective_us},
          {"lower_bound_us", s.lower_bound_us},
          {"gap", s.gap},
          {"variables", s.variables},
          {"rows", s.rows},
          {"integers", s.integers}};
}

// One progress line per stage, e.g. "routing  0.012 s  optimal  gap 0.0000  estimate 12.34 us".
std::string stage_line(const StageReport& s) {
  std::string line = fmt::format("{:<15}{:.3f} s  {}  gap {:.4f}  estimate {:.2f} us", s.name,
                                 s.seconds, s.status, s.gap, s.objective_us);
  if (s.lower_bound_us > 0) line += fmt::format(" (bound {:.2f} us)", s.lower_bound_us);
  return line + fmt::format("  ({} vars, {} integer, {} rows)", s.variables, s.integers, s.rows);
}

SynthResult run_taccl(const Topology& topology, const Collective& collective,
                      const SynthOptions& o) {
  const std::string path = param<std::string>(o, "sketch", "");
  if (path.empty())
    throw UserError("", "sketch", "taccl needs a communication sketch (sketch FILE)");
  const Sketch sketch = read_sketch_file(path);
  TacclOptions options;
  options.time_limit_s = o.time_limit_s;
  options.stall_s = param(o, "stall", options.stall_s);
  options.contiguity = !flag(o, "no-contiguity");
  options.exact_schedule = !flag(o, "greedy-schedule");
  options.intra_node_relays = !flag(o, "no-relays");
  if (o.bytes) options.bytes = *o.bytes;
  if (collective.chunks_per_rank > 1) options.chunkup = collective.chunks_per_rank;
  report(o, fmt::format("taccl: sketch {}, stage time limit {} s", path, o.time_limit_s));
  const TacclResult r = synthesize_taccl(topology, sketch, collective.kind, options);
  nlohmann::json stages = nlohmann::json::array();
  for (const StageReport& s : r.stages) {
    report(o, "taccl: " + stage_line(s));
    stages.push_back(stage_json(s));
  }
  SynthResult out;
  out.status = r.status;
  out.algorithm = r.algorithm;
  out.stats = {{"sketch", path},
               {"chunkup", r.chunkup},
               {"chunk_bytes", r.chunk_bytes},
               {"schedule_estimate_us", r.makespan_us},
               {"stages", stages}};
  return out;
}

// ---- SCCL --------------------------------------------------------------------------------

// SCCL's per-rank C for a core collective (the inverse of sccl_collective).
int sccl_chunks(const Collective& c) {
  return c.chunks_per_rank * sccl_chunk_unit(c.kind, c.num_ranks);
}

nlohmann::json sccl_stats(const InstanceResult& r, int chunks, int steps, int rounds) {
  nlohmann::json d = {{"chunks", chunks},
                      {"steps", steps},
                      {"rounds", rounds},
                      {"encode_seconds", r.encode_s},
                      {"solve_seconds", r.solve_s},
                      {"variables", r.variables},
                      {"constraints", r.constraints}};
  if (r.algorithm) d["rounds_per_step"] = r.algorithm->rounds_per_step;
  return d;
}

SynthResult run_sccl(const Topology& topology, const Collective& collective,
                     const SynthOptions& o) {
  if (collective.kind == CollectiveKind::kCustom) {
    throw UserError("", "collective", "sccl synthesizes the built-in collectives only");
  }
  const BandwidthModel model =
      flag(o, "full-model") ? bandwidth_model(topology) : paper_bandwidth_model(topology);
  SolveOptions solve;
  solve.time_limit_s = o.time_limit_s;
  const int chunks = sccl_chunks(collective);
  const int steps = param(o, "steps", 0);
  const int given_rounds = param(o, "rounds", 0);
  SynthResult out;
  if (steps == 0) {
    if (given_rounds != 0) throw UserError("", "rounds", "least-steps mode (steps 0) uses R = S");
    const InstanceResult r = synthesize_sccl_least_steps(
        collective.kind, model, chunks, 0, param(o, "max-steps", 16), collective.root, solve,
        [&](int s, const InstanceResult& res) {
          report(o, "sccl: (C=" + std::to_string(chunks) + ", S=" + std::to_string(s) +
                        ", R=" + std::to_string(s) + "): " + to_string(res.status) +
                        fmt::format(" in {:.3f} s", res.encode_s + res.solve_s));
        });
    const int s = r.algorithm ? static_cast<int>(r.algorithm->rounds_per_step.size()) : 0;
    out.status = r.status;
    out.algorithm = r.algorithm;
    out.stats = sccl_stats(r, chunks, s, s);
    out.stats["mode"] = "least-steps";
    return out;
  }
  const int rounds = given_rounds == 0 ? steps : given_rounds;
  report(o, "sccl: (C=" + std::to_string(chunks) + ", S=" + std::to_string(steps) +
                ", R=" + std::to_string(rounds) + ") on " + model.name);
  const InstanceResult r =
      synthesize_sccl(collective.kind, model, chunks, steps, rounds, collective.root, solve);
  out.status = r.status;
  out.algorithm = r.algorithm;
  out.stats = sccl_stats(r, chunks, steps, rounds);
  return out;
}

// ---- TACOS -------------------------------------------------------------------------------

SynthResult run_tacos(const Topology& topology, const Collective& collective,
                      const SynthOptions& o) {
  TacosOptions options;
  options.bytes = o.bytes.value_or(kDefaultBytes);
  options.seed = param<uint64_t>(o, "seed", options.seed);
  options.trials = param(o, "trials", default_trials(topology.num_ranks));
  options.switch_degree = param(o, "switch-degree", options.switch_degree);
  options.pick_window = param(o, "pick-window", options.pick_window);
  options.chunk_replacement = !flag(o, "no-replacement");
  options.threads = o.threads;
  const double chunk_bytes = static_cast<double>(options.bytes) / collective.input_chunks;
  report(o, "tacos: " + collective.name + " on " + topology.name + " (" +
                std::to_string(topology.num_ranks) + " ranks, " +
                std::to_string(collective.num_chunks()) + " chunks of " +
                format_bytes(static_cast<int64_t>(chunk_bytes)) + "), " +
                std::to_string(options.trials) + " trial(s) from seed " +
                std::to_string(options.seed));
  const auto started = std::chrono::steady_clock::now();
  TacosResult r = synthesize_tacos(topology, collective, options);
  const double seconds = seconds_since(started);
  report(o, fmt::format("tacos: TEN time {} us, {} transfers, {} replacements, {:.3f} s", r.time_us,
                        r.transfers, r.replacements, seconds));
  SynthResult out;
  out.status = SynthStatus::kFeasible;  // a heuristic: no optimality claim
  out.stats = {{"ten_time_us", r.time_us},
               {"phase_time_us", r.phase_time_us},
               {"phase_seed", r.phase_seed},
               {"transfers", r.transfers},
               {"replacements", r.replacements},
               {"substitutions", r.substitutions},
               {"ten_links", r.num_ten_links},
               {"chunk_bytes", chunk_bytes},
               {"seed", options.seed},
               {"trials", options.trials},
               {"switch_degree", options.switch_degree},
               {"pick_window", options.pick_window},
               {"chunk_replacement", options.chunk_replacement},
               {"tacos_seconds", seconds}};
  out.algorithm = std::move(r.algorithm);
  return out;
}

// ---- trees (throughput) --------------------------------------------------------------------

const char* split_name(TreesSplit split) {
  switch (split) {
    case TreesSplit::kFlat: return "flat";
    case TreesSplit::kHierarchical: return "hierarchical";
    case TreesSplit::kSpray: return "spray";
    case TreesSplit::kJoint: return "joint";
    default: return "dims";
  }
}

SynthResult run_trees(const Topology& topology, const Collective& collective,
                      const SynthOptions& o) {
  TreesOptions options;
  options.trees_per_root = param(o, "trees", 0);
  options.refine_passes = param(o, "refine", options.refine_passes);
  options.bytes = o.bytes.value_or(kDefaultBytes);
  options.rails = param(o, "rails", -1);
  options.split = param(o, "split", -1);
  options.slowest_dimension_first = flag(o, "slowest-first");
  const auto started = std::chrono::steady_clock::now();
  TreesResult r = synthesize_trees(topology, collective, options);
  const double seconds = seconds_since(started);
  report(o, fmt::format("trees: {} split, {} trees per root, {} pieces each{}, bottleneck "
                        "{:.4f}x the port bound, depth {}, {:.3f} s",
                        split_name(r.split), r.trees_per_root, r.pieces, r.rails ? ", rails" : "",
                        r.bottleneck_ratio, r.max_depth, seconds));
  const int best = r.split == TreesSplit::kSpray  ? spray_trees_per_root(topology)
                   : r.split == TreesSplit::kDims ? dims_trees_per_root(topology)
                                                  : 0;
  // (With slowest-first the balance is another mix's: no hint.)
  if (best > 0 && r.trees_per_root % best != 0 && !options.slowest_dimension_first) {
    report(o, fmt::format("trees: the {} split balances the ports best with {} trees per root "
                          "(--chunks a multiple of {})",
                          split_name(r.split), best, best));
  }
  SynthResult out;
  out.status = SynthStatus::kFeasible;  // greedy packing: no optimality claim
  out.stats = {{"trees_per_root", r.trees_per_root},
               {"pieces", r.pieces},
               {"rails", r.rails},
               {"split", split_name(r.split)},
               {"flat_packed_us", r.flat_packed_us},
               {"hier_packed_us", r.hier_packed_us},
               {"spray_packed_us", r.spray_packed_us},
               {"dims_packed_us", r.dims_packed_us},
               {"joint_packed_us", r.joint_packed_us},
               {"bottleneck_ratio_to_port_bound", r.bottleneck_ratio},
               {"max_depth", r.max_depth},
               {"packed_bandwidth_us", r.packed_us},
               {"schedule_estimate_us", r.estimate_us},
               {"trees_seconds", seconds}};
  out.algorithm = std::move(r.algorithm);
  return out;
}

Synthesizer trees_synthesizer() {
  Synthesizer s;
  s.name = "trees";
  s.description =
      "throughput: pipelined spanning out-trees packed to the link and port bandwidths "
      "(allgather, reducescatter, allreduce)";
  s.params = {
      {"trees", ParamKind::kInt,
       "spanning out-trees per root; must divide the chunks (default: the divisor up to 8 "
       "that packs best)",
       false, true},
      {"refine", ParamKind::kInt, "rip-up-and-reroute passes over every tree (default 4)", true},
      {"rails", ParamKind::kInt,
       "1: between nodes, switch edges only to the next node and the same local port; 0: any "
       "(default: 1 where a switch joins 3 or more nodes)",
       true},
      {"split", ParamKind::kInt,
       "0: trees over all ranks; 1: hierarchical (rails across the nodes, then inside every "
       "node); 2: spray (rails plus direct sends that balance the NICs and the in-node switch; "
       "a NIC per GPU, chunks a multiple of the trees per root it reports best); 3: dimension "
       "order (a product of 2-3 dimensions such as rfs: trees that cross them in a mix of "
       "orders balancing their ingress); 4: joint (allreduce: flat trees whose two phases are "
       "packed together and overlap, on channels of their own); default: whichever applies "
       "and packs fastest (dimension order for allgather only)",
       true},
      {"slowest-first", ParamKind::kBool,
       "with --split 3: every tree crosses the dimension of least ingress bandwidth first, the "
       "others in the mix that balances them; in a reduction that hop is the last into the "
       "root, which waits for the slices reduced over the others, so it carries the least and "
       "has slack to start late"}};
  s.default_chunks = [](const Topology& t, CollectiveKind) { return default_chunks_per_rank(t); };
  // Half the pipeline pieces of the trees just made (chunks = trees per root x pieces), from
  // what the run reports rather than a second packing of the candidate tree counts.
  s.fewer_chunks = [](const SynthResult& made, int chunks) {
    return made.stats.value("pieces", 1) % 2 == 0 ? chunks / 2 : 0;
  };
  s.run = run_trees;
  return s;
}

// ---- baselines ---------------------------------------------------------------------------

// The ring flags, or NCCL's rings (nccl_rings, searched once) when none is given.
BaselineOptions baseline_options(BaselineKind kind, const Topology& topology,
                                 const SynthOptions& o) {
  BaselineOptions options;
  options.pipeline_chunks = param(o, "pipeline", options.pipeline_chunks);
  options.rings = param(o, "rings", options.rings);
  options.parallel = param(o, "parallel", options.parallel);
  if (flag(o, "bidirectional") && flag(o, "one-way")) {
    throw UserError("", "bidirectional", "bidirectional and one-way exclude each other");
  }
  options.bidirectional = flag(o, "bidirectional");
  options.end_to_end = flag(o, "end-to-end");
  if (kind == BaselineKind::kRing && !options.end_to_end && !options.bidirectional &&
      !flag(o, "one-way")) {
    NcclRings nccl = nccl_rings(topology);
    options.bidirectional = nccl.bidirectional;
    options.ring_list = std::move(nccl.rings);
  }
  return options;
}

SynthResult run_baseline(BaselineKind kind, const Topology& topology, const Collective& collective,
                         const SynthOptions& o) {
  SynthResult out;
  out.status = SynthStatus::kFeasible;
  const BaselineOptions options = baseline_options(kind, topology, o);
  out.algorithm = make_baseline(kind, collective, topology, options);
  out.stats = {{"chunks_per_rank", collective.chunks_per_rank}};
  if (kind == BaselineKind::kRing) out.stats["bidirectional"] = options.bidirectional;
  return out;
}

std::vector<SynthParam> baseline_params(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kRing:
      return {{"rings", ParamKind::kInt,
               "rings to use (0 = every edge-disjoint ring the lanes allow, like NCCL)", true},
              {"bidirectional", ParamKind::kBool,
               "use every ring in both directions (default: where the links allow)"},
              {"one-way", ParamKind::kBool, "use the rings in one direction only"},
              {"end-to-end", ParamKind::kBool,
               "one logical ring in rank order, sends routed by the network (ASTRA-sim's Ring, "
               "TACOS sec. V.A)"}};
    case BaselineKind::kDirect:
      return {{"end-to-end", ParamKind::kBool,
               "every block straight to its destination in one step, routed by the network "
               "(ASTRA-sim's Direct, NCCL's p2p); default: relay and multicast over shortest "
               "paths"}};
    case BaselineKind::kChain:
    case BaselineKind::kTree:
      return {
          {"pipeline", ParamKind::kInt, "pieces the data is cut into for pipelining", false, true}};
    case BaselineKind::kDbt:
      return {
          {"pipeline", ParamKind::kInt, "pieces the data is cut into for pipelining", false, true},
          {"end-to-end", ParamKind::kBool,
           "trees over rank indices as NCCL and ASTRA-sim build them, sends routed by the network "
           "(default: placed so tree neighbours are connected)"}};
    case BaselineKind::kHier:
      return {{"parallel", ParamKind::kInt,
               "allreduce: parts per intra-node group, each on its own channels (0 = one per "
               "node, like MSCCLang's parallelize(N))",
               true}};
    default: return {};
  }
}

std::string baseline_description(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::kRing: return "NCCL-style rings over every edge-disjoint ring";
    case BaselineKind::kDirect: return "every rank sends straight to every peer (all-pairs)";
    case BaselineKind::kRecursiveDoubling: return "recursive doubling";
    case BaselineKind::kRhd: return "recursive halving-doubling";
    case BaselineKind::kDbt: return "NCCL's double binary tree";
    case BaselineKind::kHier: return "hierarchical: inside nodes, across nodes, inside nodes";
    case BaselineKind::kTwoStep: return "two-step alltoall through a peer of the destination node";
    case BaselineKind::kChain: return "pipelined chain";
    case BaselineKind::kTree: return "pipelined binary tree";
    case BaselineKind::kCooperative:
      return "point-to-point custom collectives (AllToNext): cross-node sends split over every "
             "GPU and NIC of the node";
  }
  return "";
}

Synthesizer baseline_synthesizer(BaselineKind kind) {
  Synthesizer s;
  s.name = to_string(kind);
  s.description = "baseline: " + baseline_description(kind);
  s.baseline = true;
  s.params = baseline_params(kind);
  if (kind == BaselineKind::kRing) {
    s.default_chunks = [](const Topology& t, CollectiveKind) { return nccl_rings(t).count; };
  }
  if (kind == BaselineKind::kCooperative) {  // one part per GPU of a node
    s.default_chunks = [](const Topology& t, CollectiveKind) {
      return t.nodes.empty() ? 1 : static_cast<int>(t.nodes[0].size());
    };
  }
  s.run = [kind](const Topology& t, const Collective& c, const SynthOptions& o) {
    return run_baseline(kind, t, c, o);
  };
  return s;
}

std::vector<Synthesizer> make_registry() {
  std::vector<Synthesizer> all;
  Synthesizer taccl;
  taccl.name = "taccl";
  taccl.description =
      "TACCL: sketch-guided routing MILP, ordering heuristics and scheduling MILP (CBC); needs "
      "a sketch";
  taccl.uses_time_limit = true;
  taccl.params = {
      {"sketch", ParamKind::kString, "communication sketch JSON (TACCL schema, docs/sketches.md)"},
      {"stall", ParamKind::kDouble,
       "a MILP stage stops after this many seconds without a better schedule (default 2; 0 = "
       "run to the gap or the time limit)",
       true},
      {"no-contiguity", ParamKind::kBool, "never merge inter-node sends in stage 3"},
      {"greedy-schedule", ParamKind::kBool, "skip the stage 3 MILP, keep the greedy schedule"},
      {"no-relays", ParamKind::kBool, "route on shortest paths only (no intra-node relays)"}};
  taccl.run = run_taccl;
  all.push_back(taccl);

  Synthesizer sccl;
  sccl.name = "sccl";
  sccl.description =
      "SCCL: k-synchronous (C, S, R) algorithm with Z3 (steps, rounds; steps 0 = least steps); "
      "status infeasible when none exists";
  sccl.uses_time_limit = true;
  sccl.params = {
      {"steps", ParamKind::kInt, "steps S (0 = least-steps mode: smallest S with R = S)", true},
      {"rounds", ParamKind::kInt, "rounds R (0 = same as steps)", true},
      {"max-steps", ParamKind::kInt, "largest S tried (least-steps mode; default 16)", false, true},
      {"full-model", ParamKind::kBool,
       "model every link of amdz52 instead of SCCL's ring (SCCL sec. 5.2.2)"}};
  sccl.make_collective = sccl_collective;
  sccl.run = run_sccl;
  all.push_back(sccl);

  Synthesizer tacos;
  tacos.name = "tacos";
  tacos.description =
      "TACOS: greedy link-chunk matching on a time-expanded network; fast at thousands of ranks";
  tacos.params = {
      {"seed", ParamKind::kInt, "seed of the random tie-breaks (default 0)", true},
      {"trials", ParamKind::kInt,
       "try seeds seed..seed+N-1, keep the fastest (default: 8 up to 256 ranks, then 2048 / "
       "ranks)",
       false, true},
      {"switch-degree", ParamKind::kInt, "switch unwinding degree d; 0 = auto (default 0)", true},
      {"pick-window", ParamKind::kInt, "a link sends one of the W oldest needed chunks (default 3)",
       false, true},
      {"no-replacement", ParamKind::kBool, "disable chunk replacement (TACOS sec. IV.F)"}};
  tacos.run = run_tacos;
  all.push_back(tacos);
  all.push_back(trees_synthesizer());

  for (BaselineKind kind : all_baseline_kinds()) all.push_back(baseline_synthesizer(kind));
  return all;
}

bool has_type(const nlohmann::json& value, ParamKind kind) {
  switch (kind) {
    case ParamKind::kInt: return value.is_number_integer();
    case ParamKind::kDouble: return value.is_number();
    case ParamKind::kBool: return value.is_boolean();
    case ParamKind::kString: return value.is_string();
  }
  return false;
}

void check_param(const Synthesizer& method, const SynthParam& p, const nlohmann::json& value) {
  const std::string field = method.name + " parameter '" + p.name + "'";
  if (!has_type(value, p.kind)) {
    throw UserError("", field, "expected " + to_string(p.kind) + ", got " + value.dump());
  }
  if (!value.is_number()) return;
  const double x = value.get<double>();
  if (p.positive && x <= 0) throw UserError("", field, "must be > 0, got " + value.dump());
  if (p.non_negative && x < 0) throw UserError("", field, "must be >= 0, got " + value.dump());
}

}  // namespace

std::string to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kInt: return "int";
    case ParamKind::kDouble: return "number";
    case ParamKind::kBool: return "flag";
    case ParamKind::kString: return "string";
  }
  return "int";
}

const std::vector<Synthesizer>& synthesizers() {
  static const std::vector<Synthesizer> kAll = make_registry();
  return kAll;
}

const Synthesizer& find_synthesizer(const std::string& name, const std::string& field) {
  std::string known;
  for (const Synthesizer& s : synthesizers()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw UserError("", field, "unknown method '" + name + "' (expected " + known + ")");
}

void check_params(const Synthesizer& method, const nlohmann::json& params) {
  if (!params.is_object()) throw UserError("", "params", "expected an object of parameters");
  for (const auto& item : params.items()) {
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const auto it = std::find_if(method.params.begin(), method.params.end(),
                                 [&key](const SynthParam& p) { return p.name == key; });
    if (it == method.params.end()) {
      std::string known;
      for (const SynthParam& p : method.params) known += (known.empty() ? "" : ", ") + p.name;
      throw UserError("", key,
                      "not a parameter of " + method.name +
                          (known.empty() ? " (it takes none)" : " (it takes " + known + ")"));
    }
    check_param(method, *it, value);
  }
}

Collective collective_for(const Synthesizer& method, const Topology& topology, CollectiveKind kind,
                          int chunks, int root) {
  if (chunks < 0) throw UserError("", "chunks", "must be >= 0 (0 = the method's default)");
  if (chunks > kMaxChunksPerRank) {
    throw UserError("", "chunks",
                    std::to_string(chunks) + " chunks per rank: at most " +
                        std::to_string(kMaxChunksPerRank) +
                        " (an algorithm of ranks x ranks x chunks ops is compiled, verified and "
                        "simulated several times)");
  }
  if (chunks == 0) chunks = method.default_chunks ? method.default_chunks(topology, kind) : 1;
  return method.make_collective ? method.make_collective(kind, topology.num_ranks, chunks, root)
                                : make_collective(kind, topology.num_ranks, chunks, root);
}

SynthResult synthesize(const Synthesizer& method, const Topology& topology,
                       const Collective& collective, const SynthOptions& options) {
  check_params(method, options.params);
  return method.run(topology, collective, options);
}

}  // namespace ccsynth::synth
