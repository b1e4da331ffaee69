#include "ccsynth/plan/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/json_io.h"
#include "ccsynth/formats/tuning_json.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/synth/trees.h"
#include "parallel.h"

namespace ccsynth::plan {

namespace {

constexpr char kTuningFile[] = "tuning.json";
// A candidate replaces the nccl ring at a size only when it is faster by more than this share.
constexpr double kRingTieTolerance = 1e-3;
// The label of the reference ring, which keeps every size nothing beats.
constexpr char kRingLabel[] = "nccl_ring";
// sccl's SMT search runs only up to this many ranks.
constexpr int kScclMaxRanks = 8;
// Pipeline pieces per tree tried by the trees method (its chunks per rank = trees x pieces).
const std::vector<int> kTreePieces = {1, 4, 16, 64};
// Most chunks per rank of the dimension-order split's extra reducescatter and allreduce
// candidates (few trees, large chunks).
constexpr int kMaxFewDimsChunks = 8;

// Simulated time of a variant at a size it was not simulated at: its lower bound showed that
// it cannot win there (TunedSize::times leaves it out).
constexpr double kPruned = std::numeric_limits<double>::infinity();

// One compiled and verified program of a candidate algorithm, its bandwidth lower bound and its
// simulated time per size (kPruned where it was not simulated).
struct Candidate {
  std::string label;
  Evaluated evaluated;
  ProgramLoad load;
  std::vector<double> time_us;
};

void say(const TuneRequest& r, const std::string& line) {
  if (r.progress) r.progress(line);
}

bool skipped(const TuneRequest& r, const std::string& label) {
  return std::find(r.skip.begin(), r.skip.end(), label) != r.skip.end();
}

int thread_count(const TuneRequest& r) { return thread_limit(r.threads); }

// One compilation to try: algorithm `algorithm` of label `label` with `options`.
struct VariantJob {
  std::string label;
  const Algorithm* algorithm = nullptr;
  compiler::CompileOptions options;
};

// Every compilation of an algorithm (instances x fusion x, for timed algorithms, step or
// start-time order).
void add_variant_jobs(std::vector<VariantJob>& out, const std::string& label,
                      const Algorithm& algorithm, compiler::CompileOptions base) {
  base.name = label;
  const VariantSpace space{{1, 2}, {true, false}, {false, true}};
  for (const compiler::CompileOptions& options : variant_options(algorithm, base, space))
    out.push_back({label, &algorithm, options});
}

// Compiles and verifies every job on the request's threads; the verified programs, in job
// order (variants over the dialect's runtime limits are left out).
std::vector<Candidate> compile_variants(const TuneRequest& r, const std::vector<VariantJob>& jobs) {
  EvaluateOptions eo;
  eo.topology = &r.topology;  // checks the links; no sizes: simulation comes later
  std::vector<std::optional<Candidate>> slots(jobs.size());
  parallel_for(thread_count(r), jobs.size(), [&](size_t i) {
    try {
      Evaluated e = evaluate(*jobs[i].algorithm, jobs[i].options, eo);
      if (!e.ok()) return;
      const ProgramLoad load = program_load(e.program, r.topology);
      slots[i] = Candidate{jobs[i].label, std::move(e), load, {}};
    } catch (const UserError&) {
      // over the dialect's limits compiled this way
    }
  });
  std::vector<Candidate> out;
  for (std::optional<Candidate>& c : slots) {
    if (c) out.push_back(std::move(*c));
  }
  return out;
}

// Per candidate the first candidate whose program simulates alike (itself if none). TACOS
// synthesized for two sizes differs only in start times, so its step-order programs are often
// the same: on dgx2x2 allgather such twins were most of the simulations at 1 GiB. The nccl
// ring is always its own (it is always simulated).
std::vector<size_t> first_alike(const std::vector<Candidate>& candidates) {
  std::vector<size_t> out(candidates.size());
  std::map<std::pair<int64_t, int>, std::vector<size_t>> by_shape;  // (steps, threadblocks)
  for (size_t c = 0; c < candidates.size(); ++c) {
    out[c] = c;
    if (candidates[c].label == kRingLabel) continue;
    const Program& p = candidates[c].evaluated.program;
    std::vector<size_t>& seen = by_shape[{p.total_steps(), p.total_threadblocks()}];
    for (const size_t e : seen) {
      if (sim::simulate_alike(candidates[e].evaluated.program, p)) {
        out[c] = e;
        break;
      }
    }
    if (out[c] == c) seen.push_back(c);
  }
  return out;
}

// Simulates the candidates at every size, largest first (the costliest). Per size the
// candidates are taken in the order of their lower bounds, and one whose bound is above the
// best time simulated so far at that size is not simulated (it cannot win); the nccl ring is
// always simulated (it keeps the sizes nothing beats by the tolerance). A candidate whose
// program an earlier one has takes that one's times. Returns how many (candidate, size) times
// were taken so.
int simulate_candidates(const TuneRequest& r, std::vector<Candidate>& candidates) {
  const auto started = std::chrono::steady_clock::now();
  for (Candidate& c : candidates) c.time_us.assign(r.sizes.size(), kPruned);
  const std::vector<size_t> twin_of = first_alike(candidates);
  int reused = 0;
  sim::SimOptions options;
  options.critical_path = false;
  for (size_t s = r.sizes.size(); s-- > 0;) {
    const int64_t bytes = r.sizes[s];
    std::vector<std::pair<double, size_t>> order;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (twin_of[c] == c) order.emplace_back(candidates[c].load.lower_bound_us(bytes), c);
    }
    std::stable_sort(order.begin(), order.end());
    std::mutex mutex;
    double best = kPruned;
    parallel_for(thread_count(r), order.size(), [&](size_t i) {
      const auto [bound, index] = order[i];
      Candidate& c = candidates[index];
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (bound > best && c.label != kRingLabel) return;
      }
      const double t = sim::simulate(c.evaluated.program, r.topology, bytes, options).time_us;
      CCSYNTH_CHECK(bound <= t * (1 + 1e-9))
          << c.label << ": program lower bound " << bound << " us above its simulated " << t;
      const std::lock_guard<std::mutex> lock(mutex);
      c.time_us[s] = t;
      best = std::min(best, t);
    });
    int simulated = 0, taken = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      candidates[c].time_us[s] = candidates[twin_of[c]].time_us[s];
      if (candidates[c].time_us[s] == kPruned) continue;
      ++(twin_of[c] == c ? simulated : taken);
    }
    reused += taken;
    say(r, fmt::format("tune: {} simulated {} of {} variant(s), {} more from an identical program "
                       "({:.1f} s)",
                       format_bytes(bytes), simulated, candidates.size(), taken,
                       seconds_since(started)));
  }
  return reused;
}

// Runs registered method `name` on the collective with `chunks` per rank (0 = its default),
// optimizing for `bytes`; nullopt when it does not apply or finds nothing.
std::optional<Algorithm> run_method(const TuneRequest& r, const std::string& name, int chunks,
                                    std::optional<int64_t> bytes, nlohmann::json params = {}) {
  const synth::Synthesizer& method = synth::find_synthesizer(name);
  synth::SynthOptions options;
  options.bytes = bytes;
  options.time_limit_s = r.time_limit_s;
  if (params.is_object()) options.params = std::move(params);
  try {
    const Collective c = synth::collective_for(method, r.topology, r.kind, chunks);
    synth::SynthResult result = synth::synthesize(method, r.topology, c, options);
    return std::move(result.algorithm);
  } catch (const UserError&) {
    return std::nullopt;  // the method does not make this collective on this topology
  }
}

// The labelled algorithms the tuner compares (see the header comment).
std::vector<std::pair<std::string, Algorithm>> candidate_algorithms(const TuneRequest& r) {
  std::vector<std::pair<std::string, Algorithm>> out;
  // A method that makes the same ops as an earlier one (e.g. `ring` with NCCL's rings, which
  // is nccl_ring) is evaluated once, under the earlier label.
  auto add = [&](const std::string& label, std::optional<Algorithm> a) {
    if (!a || skipped(r, label)) return;
    for (const auto& [_, seen] : out) {
      if (seen.collective == a->collective && seen.ops == a->ops) return;
    }
    out.emplace_back(label, std::move(*a));
  };
  const Collective reference = make_collective(r.kind, r.topology.num_ranks, 1);
  for (NcclCandidate& c : reference_nccl(reference, r.topology))
    add("nccl_" + c.algo, std::move(c.algorithm));
  for (const synth::Synthesizer& s : synth::synthesizers()) {
    if (s.baseline && !skipped(r, s.name)) add(s.name, run_method(r, s.name, 0, std::nullopt));
  }
  if (!skipped(r, "trees")) {
    const int trees = synth::best_trees_per_root(r.topology);
    for (const int pieces : kTreePieces)
      add(fmt::format("trees_c{}", trees * pieces),
          run_method(r, "trees", trees * pieces, r.sizes.back(), {{"trees", trees}}));
    // Allreduce: the flat trees' phases one after the other too, beside the joint allreduce
    // that trees picks by default (ndv2x4 at 1 GiB: 1.002x the bound against its 1.014x).
    for (const int pieces : r.kind == CollectiveKind::kAllReduce ? kTreePieces : std::vector<int>{})
      add(fmt::format("trees_f_c{}", trees * pieces),
          run_method(r, "trees", trees * pieces, r.sizes.back(), {{"trees", trees}, {"split", 0}}));
    // Multi-node: the hierarchical split too (trees picks a split by packing; this simulates).
    for (const int pieces : r.topology.nodes.size() > 1 ? kTreePieces : std::vector<int>{})
      add(fmt::format("trees_h_c{}", trees * pieces),
          run_method(r, "trees", trees * pieces, r.sizes.back(), {{"split", 1}}));
    // Two nodes or more with a NIC per GPU: the spray split, one piece per tree (the simulator
    // and the runtime pipeline a tree's chunk in slices).
    if (const int spray = synth::spray_trees_per_root(r.topology); spray > 0)
      add(fmt::format("trees_s_c{}", spray),
          run_method(r, "trees", spray, r.sizes.back(), {{"split", 2}}));
    // A product of dimensions (rfs): the dimension-order split, one piece per tree; for the
    // reductions also with 2 to 8 chunks per rank (the best mix of trees dividing them), whose
    // larger chunks give the in-trees' pipelines more slices to fill with (rfs:4x4x4 at 1 GiB:
    // reducescatter 1.19x the bound with 6 against 1.30x with 15, allreduce 1.07x with 5
    // against 1.26x), each also with the slowest dimension first (`trees_ds_cK`, where that
    // mix differs: allreduce 1.03x with 8 against 1.22x).
    if (const int dims = synth::dims_trees_per_root(r.topology); dims > 0) {
      add(fmt::format("trees_d_c{}", dims),
          run_method(r, "trees", dims, r.sizes.back(), {{"split", 3}}));
      const bool reduces = r.kind != CollectiveKind::kAllGather;
      for (int chunks = 2; reduces && chunks <= kMaxFewDimsChunks; ++chunks) {
        if (chunks != dims)
          add(fmt::format("trees_d_c{}", chunks),
              run_method(r, "trees", chunks, r.sizes.back(), {{"split", 3}}));
        add(fmt::format("trees_ds_c{}", chunks),
            run_method(r, "trees", chunks, r.sizes.back(),
                       {{"split", 3}, {"slowest-first", true}}));
      }
    }
  }
  if (!skipped(r, "tacos")) {
    // TACOS's greedy matching depends on the chunk size: synthesized for the ends and the middle.
    std::vector<int64_t> at = {r.sizes.front(), r.sizes[r.sizes.size() / 2], r.sizes.back()};
    at.erase(std::unique(at.begin(), at.end()), at.end());
    for (const int64_t bytes : at)
      add("tacos@" + format_bytes(bytes), run_method(r, "tacos", 0, bytes));
  }
  if (r.topology.num_ranks <= kScclMaxRanks && !skipped(r, "sccl"))
    add("sccl", run_method(r, "sccl", 0, std::nullopt));
  if (!r.sketch.empty() && !skipped(r, "taccl"))
    add("taccl", run_method(r, "taccl", 0, r.sizes.back(), {{"sketch", r.sketch}}));
  return out;
}

// Per size the fastest candidate (index), the ring unless another beats it by the tolerance.
std::vector<int> winners(const std::vector<Candidate>& candidates, size_t num_sizes) {
  std::vector<int> out(num_sizes, -1);
  for (size_t i = 0; i < num_sizes; ++i) {
    int best = -1, ring = -1;
    for (size_t c = 0; c < candidates.size(); ++c) {
      const double t = candidates[c].time_us[i];
      if (best < 0 || t < candidates[best].time_us[i]) best = static_cast<int>(c);
      if (candidates[c].label == kRingLabel && (ring < 0 || t < candidates[ring].time_us[i]))
        ring = static_cast<int>(c);
    }
    const auto time = [&](int c) { return candidates[c].time_us[i]; };
    out[i] = ring >= 0 && time(best) >= time(ring) * (1 - kRingTieTolerance) ? ring : best;
  }
  return out;
}

TunedSize sized(const std::vector<Candidate>& candidates, size_t i, int winner, int64_t bytes,
                double lower_bound_us) {
  TunedSize out;
  out.bytes = bytes;
  out.winner = candidates[winner].label;
  out.time_us = candidates[winner].time_us[i];
  out.lower_bound_us = lower_bound_us;
  // Per label the fastest simulated variant.
  for (const Candidate& c : candidates) {
    const double t = c.time_us[i];
    if (t == kPruned) {
      ++out.pruned;
      continue;
    }
    auto it = std::find_if(out.times.begin(), out.times.end(),
                           [&c](const TunedTime& x) { return x.label == c.label; });
    if (it == out.times.end()) {
      out.times.push_back({c.label, t});
    } else {
      it->time_us = std::min(it->time_us, t);
    }
    if (c.label == kRingLabel && (out.ring_time_us == 0 || t < out.ring_time_us))
      out.ring_time_us = t;
  }
  return out;
}

// Consecutive sizes with the same winning program become one entry; entry i serves
// (last size of entry i-1, last size of entry i], the first from 0 and the last without limit.
std::vector<TuneEntry> entries_of(const std::vector<Candidate>& candidates,
                                  const std::vector<int>& winner,
                                  const std::vector<int64_t>& sizes) {
  std::vector<TuneEntry> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i == 0 || winner[i] != winner[i - 1]) {
      TuneEntry e;
      e.min_bytes = out.empty() ? 0 : out.back().max_bytes + 1;
      e.label = candidates[winner[i]].label;
      e.program = candidates[winner[i]].evaluated.program;
      out.push_back(std::move(e));
    }
    out.back().sizes.push_back(sizes[i]);
    out.back().max_bytes = sizes[i];
  }
  out.back().max_bytes = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    TuneEntry& e = out[i];
    e.file = fmt::format("{:02}_{}.xml", i, e.label);
    std::replace(e.file.begin(), e.file.end(), '@', '_');
    e.program.min_bytes = e.min_bytes;
    e.program.max_bytes = e.max_bytes;
  }
  return out;
}

void check_sizes(const std::vector<int64_t>& sizes) {
  if (sizes.empty()) throw UserError("", "sizes", "no sizes to tune");
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0) throw UserError("", "sizes", "sizes must be positive");
    if (i > 0 && sizes[i] <= sizes[i - 1])
      throw UserError("", "sizes", "sizes must be ascending and distinct");
  }
}

// The smallest alpha of any link, switch or host switch: every route's alpha is at least this.
double smallest_alpha_us(const Topology& topology) {
  double out = std::numeric_limits<double>::infinity();
  for (const Link& l : topology.links) out = std::min(out, l.alpha_us);
  for (const Switch& sw : topology.switches) out = std::min(out, sw.alpha_us);
  for (const Switch& sw : topology.host_switches) out = std::min(out, sw.alpha_us);
  return std::isfinite(out) ? std::max(out, 0.0) : 0.0;
}

// The threadblocks of `all` that no other one beats in both sending steps and chunks.
std::vector<ProgramLoad::ThreadblockSends> undominated(
    std::vector<ProgramLoad::ThreadblockSends> all) {
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.steps != b.steps ? a.steps > b.steps : a.chunks > b.chunks;
  });
  std::vector<ProgramLoad::ThreadblockSends> out;
  for (const ProgramLoad::ThreadblockSends& t : all) {
    if (out.empty() || t.chunks > out.back().chunks) out.push_back(t);
  }
  return out;
}

// Programs of more steps are not followed for their longest chain of sends (ProgramLoad::
// chain_sends stays 0): about 0.2 s per million steps, and thousands of ranks move enough
// bytes that the latency floor does not bind (TACOS's 4096-rank mesh allgather has 33 M steps).
constexpr int64_t kLongestChainSteps = 4'000'000;

// The longest chain of sending steps through `program`'s dependencies in one slice: a
// threadblock's steps one after another, a step after the step it depends on (depid / deps),
// and a receive after the send it matches (the k-th receive of a connection, the k-th send of
// its sending threadblock). In the simulator a sending step ends when its transfer has landed
// and costs at least one alpha, and a receive waits for its message, so these chains are
// sequential: the time is at least this many alphas (launch_us aside). A fused step (rcs)
// counts once, after its receive. The steps are taken in a topological order of that graph
// (Kahn's algorithm over flat per-step arrays, about 20 bytes a step). 0 for a program whose
// receives do not match its sends or that cannot finish (the simulator reports it).
int64_t longest_send_chain(const Program& program) {
  std::vector<PairedConnection> connections;
  try {
    connections = validated_connections(program, program.name);
  } catch (const UserError&) {
    return 0;  // the simulator rejects the program
  }
  std::vector<uint32_t> first_step{0};        // per tb (flat over ranks), then the end
  std::vector<int> rank_of;                   // per tb
  std::vector<uint32_t> first_tb_of_rank{0};  // per rank, then the end
  for (size_t r = 0; r < program.gpus.size(); ++r) {
    for (const Threadblock& tb : program.gpus[r].threadblocks) {
      rank_of.push_back(static_cast<int>(r));
      first_step.push_back(first_step.back() + static_cast<uint32_t>(tb.steps.size()));
    }
    first_tb_of_rank.push_back(static_cast<uint32_t>(rank_of.size()));
  }
  const size_t steps = first_step.back();
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint8_t> waits(steps, 0);               // predecessors not taken yet
  std::vector<uint8_t> sending(steps, 0);             // 1 for a sending step
  std::vector<uint32_t> receiver(steps, kNone);       // per sending step: the receive it matches
  std::vector<uint32_t> dependents_at(steps + 1, 0);  // CSR of the steps depending on each
  size_t t = 0;
  for (const GpuProgram& gpu : program.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) {
      const uint32_t base = first_step[t];
      for (size_t i = 0; i < tb.steps.size(); ++i) {
        const Step& step = tb.steps[i];
        sending[base + i] = sends(step.type) ? 1 : 0;
        waits[base + i] = i > 0 ? 1 : 0;
        if (step.dep_tb >= 0 && step.dep_step >= 0) {  // an existing step (validated)
          const uint32_t d = first_tb_of_rank[rank_of[t]] + static_cast<uint32_t>(step.dep_tb);
          ++dependents_at[first_step[d] + static_cast<uint32_t>(step.dep_step)];
          ++waits[base + i];
        }
      }
      ++t;
    }
  }
  // Each receive of a connection waits for its sender's send of the same rank in order.
  for (const PairedConnection& c : connections) {
    const Threadblock& from = program.gpus[c.sender].threadblocks[c.sender_tb];
    const Threadblock& to = program.gpus[c.receiver].threadblocks[c.receiver_tb];
    const uint32_t from_base = first_step[first_tb_of_rank[c.sender] + c.sender_tb];
    const uint32_t to_base = first_step[first_tb_of_rank[c.receiver] + c.receiver_tb];
    size_t i = 0;  // the next receive of `to`
    for (size_t k = 0; k < from.steps.size(); ++k) {
      if (!sends(from.steps[k].type)) continue;
      while (i < to.steps.size() && !receives(to.steps[i].type)) ++i;
      if (i == to.steps.size()) return 0;  // a send no receive takes
      receiver[from_base + k] = to_base + static_cast<uint32_t>(i);
      ++waits[to_base + i++];
    }
    while (i < to.steps.size() && !receives(to.steps[i].type)) ++i;
    if (i < to.steps.size()) return 0;  // a receive no send feeds
  }
  std::exclusive_scan(dependents_at.begin(), dependents_at.end(), dependents_at.begin(), 0u);
  std::vector<uint32_t> dependents(dependents_at.back());
  {
    std::vector<uint32_t> filled(dependents_at.begin(), dependents_at.end() - 1);
    t = 0;
    for (const GpuProgram& gpu : program.gpus) {
      for (const Threadblock& tb : gpu.threadblocks) {
        for (size_t i = 0; i < tb.steps.size(); ++i) {
          const Step& step = tb.steps[i];
          if (step.dep_tb < 0 || step.dep_step < 0) continue;
          const uint32_t d = first_tb_of_rank[rank_of[t]] + static_cast<uint32_t>(step.dep_tb);
          dependents[filled[first_step[d] + static_cast<uint32_t>(step.dep_step)]++] =
              first_step[t] + static_cast<uint32_t>(i);
        }
        ++t;
      }
    }
  }
  // A step's last one in its threadblock has no next step there.
  std::vector<uint8_t> last(steps, 0);
  for (size_t b = 1; b < first_step.size(); ++b)
    if (first_step[b] > first_step[b - 1]) last[first_step[b] - 1] = 1;
  std::vector<int32_t> chain(steps, 0);  // the longest chain up to a step (with it, once taken)
  std::vector<uint32_t> ready;
  for (uint32_t u = 0; u < steps; ++u)
    if (waits[u] == 0) ready.push_back(u);
  int64_t longest = 0;
  size_t taken = 0;
  auto reach = [&](uint32_t v, int32_t through) {
    chain[v] = std::max(chain[v], through);
    if (--waits[v] == 0) ready.push_back(v);
  };
  while (!ready.empty()) {
    const uint32_t u = ready.back();
    ready.pop_back();
    ++taken;
    const int32_t at = chain[u] + sending[u];
    chain[u] = at;
    longest = std::max<int64_t>(longest, at);
    if (!last[u]) reach(u + 1, at);
    if (receiver[u] != kNone) reach(receiver[u], at);
    for (uint32_t e = dependents_at[u]; e < dependents_at[u + 1]; ++e) reach(dependents[e], at);
  }
  return taken == steps ? longest : 0;  // not every step taken: deadlocked
}

}  // namespace

std::vector<int64_t> size_sweep(int64_t from, int64_t to, int64_t factor) {
  if (from <= 0 || to < from) throw UserError("", "sizes", "expected 0 < from <= to");
  if (factor < 2) throw UserError("", "sizes", "the step factor must be >= 2");
  std::vector<int64_t> out;
  for (int64_t s = from; s <= to; s *= factor) {
    out.push_back(s);
    if (s > to / factor) break;
  }
  return out;
}

ProgramLoad program_load(const Program& program, const Topology& topology,
                         std::optional<int64_t> chain_sends) {
  ProgramLoad out;
  out.launch_us = topology.launch_us;
  out.input_chunks = sim::infer_input_chunks(program);
  out.slice_bytes = std::max<int64_t>(1, sim::SimOptions{}.params(program.protocol).slice_bytes);
  const ProtocolCost& cost = sim::protocol_cost(topology, program.protocol);
  const double beta_factor = cost.beta_factor;
  out.step_alpha_us = smallest_alpha_us(topology) * cost.alpha_factor;
  if (topology.threadblock_gbps > 0)
    out.threadblock_us_per_byte = beta_factor / (topology.threadblock_gbps * 1e3);
  std::vector<ProgramLoad::ThreadblockSends> senders;
  // us per chunk byte on every link and switch port direction.
  std::map<std::tuple<int, int, int, int>, double> load;
  // Topology::connection scans every link and switch; threadblocks of many channels share a
  // (rank, peer) pair, and a 512-rank rfs program has 470 K of them.
  std::map<std::pair<int, int>, std::optional<Connection>> connections;
  auto connection = [&](int src, int dst) -> const std::optional<Connection>& {
    auto [it, fresh] = connections.try_emplace({src, dst});
    if (fresh) it->second = topology.connection(src, dst);
    return it->second;
  };
  for (const GpuProgram& gpu : program.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) {
      if (tb.send_peer < 0) continue;
      int chunks = 0;
      int sending_steps = 0;
      for (const Step& step : tb.steps) {
        if (!sends(step.type)) continue;
        chunks += step.count;
        ++sending_steps;
      }
      // Every route's alpha is at least the smallest, and every transfer moves at most at the
      // threadblock's own rate (sim/network.h), whatever its route.
      senders.push_back({sending_steps, chunks});
      const std::optional<Connection>& c = connection(gpu.rank, tb.send_peer);
      if (!c) continue;  // a multi-hop route: its load is left out, the bound stays a bound
      const double per_byte = chunks * beta_factor / kBytesPerMb;
      if (c->link_index >= 0) {
        // One lane moves at most 1 / beta bytes per us.
        load[{0, c->link_index, 0, 0}] += per_byte * c->beta_us_per_mb / c->lanes;
      } else {
        // A switch port direction moves at most 1 / port_beta bytes per us.
        const Switch& sw = topology.switches[c->switch_index];
        const double port = per_byte * sw.port_beta_us_per_mb;
        load[{1, c->switch_index, sw.port_of_rank(gpu.rank), 0}] += port;
        load[{1, c->switch_index, sw.port_of_rank(tb.send_peer), 1}] += port;
      }
    }
  }
  for (const auto& [_, us_per_byte] : load)
    out.us_per_chunk_byte = std::max(out.us_per_chunk_byte, us_per_byte);
  out.threadblocks = undominated(std::move(senders));
  if (chain_sends) {
    out.chain_sends = *chain_sends;
  } else if (program.total_steps() <= kLongestChainSteps) {
    out.chain_sends = longest_send_chain(program);
  }
  return out;
}

double ProgramLoad::latency_us() const {
  const int64_t steps = threadblocks.empty() ? 0 : threadblocks.front().steps;
  return static_cast<double>(std::max(steps, chain_sends)) * step_alpha_us;
}

double ProgramLoad::lower_bound_us(int64_t bytes) const {
  const double chunk_bytes = static_cast<double>(bytes) / input_chunks;
  // Slices per chunk as sim::simulate cuts them (pipelining on, the protocol's slice size).
  const double slices = std::max(1.0, std::ceil(chunk_bytes / static_cast<double>(slice_bytes)));
  double busiest = us_per_chunk_byte * chunk_bytes;
  for (const ThreadblockSends& t : threadblocks) {
    busiest = std::max(busiest,
                       static_cast<double>(t.steps) * slices * step_alpha_us +
                           static_cast<double>(t.chunks) * chunk_bytes * threadblock_us_per_byte);
  }
  return launch_us + std::max(busiest, latency_us());
}

TuneResult tune(const TuneRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  TuneRequest r = request;
  if (r.sizes.empty()) r.sizes = size_sweep(int64_t{1} << 10, int64_t{1} << 30, 4);
  check_sizes(r.sizes);
  compiler::CompileOptions base;
  apply_runtime_limits(base, r.dialect);
  const std::vector<std::pair<std::string, Algorithm>> algorithms = candidate_algorithms(r);
  say(r, fmt::format("tune: {} algorithm(s) synthesized ({:.1f} s)", algorithms.size(),
                     seconds_since(started)));
  std::vector<VariantJob> jobs;
  for (const auto& [label, algorithm] : algorithms) add_variant_jobs(jobs, label, algorithm, base);
  std::vector<Candidate> candidates = compile_variants(r, jobs);
  say(r, fmt::format("tune: {} of {} variant(s) compiled and verified ({:.1f} s)",
                     candidates.size(), jobs.size(), seconds_since(started)));
  if (candidates.empty()) {
    throw UserError("", "collective",
                    "no method makes a verified " + to_string(r.kind) + " on " + r.topology.name);
  }
  const int reused = simulate_candidates(r, candidates);
  const std::vector<int> winner = winners(candidates, r.sizes.size());
  TuneResult out;
  out.topology = r.topology.name;
  out.kind = r.kind;
  out.dialect = r.dialect;
  out.candidates = static_cast<int>(candidates.size());
  const Collective& collective = candidates.front().evaluated.algorithm.collective;
  for (size_t i = 0; i < r.sizes.size(); ++i) {
    const double bound = sim::lower_bound_any_protocol_us(r.topology, collective, r.sizes[i]);
    out.sizes.push_back(sized(candidates, i, winner[i], r.sizes[i], bound));
    out.simulations += out.candidates - out.sizes.back().pruned;
  }
  out.simulations -= reused;
  out.reused = reused;
  out.entries = entries_of(candidates, winner, r.sizes);
  out.seconds = seconds_since(started);
  say(r,
      fmt::format("tune: {} simulations, {} taken from an identical program, {} left out by their "
                  "bounds ({:.1f} s)",
                  out.simulations, out.reused,
                  out.candidates * static_cast<int>(r.sizes.size()) - out.simulations - out.reused,
                  out.seconds));
  return out;
}

nlohmann::json tuning_json(const TuneResult& result) {
  nlohmann::json entries = nlohmann::json::array();
  for (const TuneEntry& e : result.entries) {
    nlohmann::json sizes = nlohmann::json::array();
    for (const TunedSize& s : result.sizes) {
      if (std::find(e.sizes.begin(), e.sizes.end(), s.bytes) == e.sizes.end()) continue;
      sizes.push_back({{"bytes", s.bytes},
                       {"time_us", s.time_us},
                       {"lower_bound_us", s.lower_bound_us},
                       {"ratio_to_bound", s.ratio_to_bound()},
                       {"ring_time_us", s.ring_time_us}});
    }
    entries.push_back({{"min_bytes", e.min_bytes},
                       {"max_bytes", e.max_bytes},
                       {"method", e.label},
                       {"file", e.file},
                       {"sizes", sizes}});
  }
  nlohmann::json per_size = nlohmann::json::array();
  for (const TunedSize& s : result.sizes) {
    nlohmann::json times = nlohmann::json::object();
    for (const TunedTime& t : s.times) times[t.label] = t.time_us;
    per_size.push_back({{"bytes", s.bytes},
                        {"winner", s.winner},
                        {"time_us", s.time_us},
                        {"lower_bound_us", s.lower_bound_us},
                        {"ratio_to_bound", s.ratio_to_bound()},
                        {"times_us", times},
                        {"pruned", s.pruned}});
  }
  return {{"format", "ccsynth-tuning"},
          {"version", formats::kTuningTableVersion},
          {"topology", result.topology},
          {"collective", to_string(result.kind)},
          {"dialect", formats::to_string(result.dialect)},
          {"candidates", result.candidates},
          {"simulations", result.simulations},
          {"reused_simulations", result.reused},
          {"seconds", result.seconds},
          {"entries", entries},
          {"sizes", per_size}};
}

void write_tuning_dir(const TuneResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UserError(dir, "", "cannot create the directory: " + error.message());
  // Streamed: a program's XML is not held in memory as text (gigabytes at thousands of ranks).
  auto write = [](const std::filesystem::path& path, const std::function<void(std::ostream&)>& f) {
    std::ofstream out(path, std::ios::binary);
    f(out);
    out.close();
    if (!out) throw UserError(path.string(), "", "cannot write the file");
  };
  const std::filesystem::path root(dir);
  for (const TuneEntry& e : result.entries) {
    write(root / e.file,
          [&](std::ostream& out) { formats::write_msccl_xml(out, e.program, result.dialect); });
  }
  write(root / kTuningFile,
        [&](std::ostream& out) { out << formats::dump_json(tuning_json(result)); });
}

int load_tuning_dir(runtime::Communicator& communicator, const std::string& dir) {
  const std::filesystem::path root(dir);
  const std::string path = (root / kTuningFile).string();
  const std::vector<formats::TuningTableEntry> entries =
      formats::read_tuning_table(formats::read_json_file(path), path);
  for (const formats::TuningTableEntry& e : entries)
    communicator.load(formats::read_msccl_xml_file((root / e.file).string()), e.min_bytes,
                      e.max_bytes);
  return static_cast<int>(entries.size());
}

}  // namespace ccsynth::plan
