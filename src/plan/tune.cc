#include "ccsynth/plan/tune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/error.h"
#include "ccsynth/core/timing.h"
#include "ccsynth/core/units.h"
#include "ccsynth/formats/json_io.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/synth/trees.h"

namespace ccsynth::plan {

namespace {

constexpr int kTuningVersion = 1;
constexpr char kTuningFile[] = "tuning.json";
// A candidate replaces the nccl ring at a size only when it is faster by more than this share.
constexpr double kRingTieTolerance = 1e-3;
// The label of the reference ring, which keeps every size nothing beats.
constexpr char kRingLabel[] = "nccl_ring";
// sccl's SMT search runs only up to this many ranks.
constexpr int kScclMaxRanks = 8;
// Pipeline pieces per tree tried by the trees method (its chunks per rank = trees x pieces).
const std::vector<int> kTreePieces = {1, 4, 16, 64};

// A verified program and its simulated times at every size of the sweep.
struct Candidate {
  std::string label;
  Evaluated evaluated;
};

void say(const TuneRequest& r, const std::string& line) {
  if (r.progress) r.progress(line);
}

bool skipped(const TuneRequest& r, const std::string& label) {
  return std::find(r.skip.begin(), r.skip.end(), label) != r.skip.end();
}

// Every compilation of `algorithm` (instances x fusion x order), each evaluated on its own so
// that every size can take its program; variants over the runtime's limits are left out.
void add_variants(std::vector<Candidate>& out, const std::string& label, const Algorithm& algorithm,
                  compiler::CompileOptions base, const EvaluateOptions& eo) {
  base.name = label;
  const bool timed = compiler::has_schedule_order(algorithm);
  for (const int instances : {1, 2}) {
    for (const bool fuse : {true, false}) {
      for (const bool ordered : {false, true}) {
        if (ordered && !timed) continue;
        compiler::CompileOptions options = base;
        options.instances = instances;
        options.fuse = fuse;
        options.schedule_order = ordered;
        try {
          Evaluated e = evaluate(algorithm, options, eo);
          if (e.ok()) out.push_back({label, std::move(e)});
        } catch (const UserError&) {
          // over the dialect's limits compiled this way
        }
      }
    }
  }
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
      const double t = candidates[c].evaluated.results[i].time_us;
      if (best < 0 || t < candidates[best].evaluated.results[i].time_us) best = static_cast<int>(c);
      if (candidates[c].label == kRingLabel &&
          (ring < 0 || t < candidates[ring].evaluated.results[i].time_us))
        ring = static_cast<int>(c);
    }
    const auto time = [&](int c) { return candidates[c].evaluated.results[i].time_us; };
    out[i] = ring >= 0 && time(best) >= time(ring) * (1 - kRingTieTolerance) ? ring : best;
  }
  return out;
}

TunedSize sized(const std::vector<Candidate>& candidates, size_t i, int winner) {
  const SizedResult& w = candidates[winner].evaluated.results[i];
  TunedSize out;
  out.bytes = w.bytes;
  out.winner = candidates[winner].label;
  out.time_us = w.time_us;
  out.lower_bound_us = w.lower_bound_us;
  // Per label the fastest variant.
  for (const Candidate& c : candidates) {
    const double t = c.evaluated.results[i].time_us;
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

int64_t json_bytes(const formats::JsonReader& reader, const std::string& key) {
  const nlohmann::json& v = reader.json().contains(key) ? reader.json().at(key) : nlohmann::json();
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    reader.fail(key, "expected a non-negative integer number of bytes");
  return v.get<int64_t>();
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

TuneResult tune(const TuneRequest& request) {
  const auto started = std::chrono::steady_clock::now();
  TuneRequest r = request;
  if (r.sizes.empty()) r.sizes = size_sweep(int64_t{1} << 10, int64_t{1} << 30, 4);
  check_sizes(r.sizes);
  compiler::CompileOptions base;
  apply_runtime_limits(base, r.dialect);
  EvaluateOptions eo;
  eo.topology = &r.topology;
  eo.sizes = r.sizes;
  std::vector<Candidate> candidates;
  for (const auto& [label, algorithm] : candidate_algorithms(r)) {
    const size_t before = candidates.size();
    add_variants(candidates, label, algorithm, base, eo);
    say(r, fmt::format("tune: {} {} verified variant(s) ({:.1f} s)", label,
                       candidates.size() - before, seconds_since(started)));
  }
  if (candidates.empty()) {
    throw UserError("", "collective",
                    "no method makes a verified " + to_string(r.kind) + " on " + r.topology.name);
  }
  const std::vector<int> winner = winners(candidates, r.sizes.size());
  TuneResult out;
  out.topology = r.topology.name;
  out.kind = r.kind;
  out.dialect = r.dialect;
  out.candidates = static_cast<int>(candidates.size());
  for (size_t i = 0; i < r.sizes.size(); ++i) out.sizes.push_back(sized(candidates, i, winner[i]));
  out.entries = entries_of(candidates, winner, r.sizes);
  out.seconds = seconds_since(started);
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
                        {"times_us", times}});
  }
  return {{"format", "ccsynth-tuning"},
          {"version", kTuningVersion},
          {"topology", result.topology},
          {"collective", to_string(result.kind)},
          {"dialect", formats::to_string(result.dialect)},
          {"candidates", result.candidates},
          {"seconds", result.seconds},
          {"entries", entries},
          {"sizes", per_size}};
}

void write_tuning_dir(const TuneResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UserError(dir, "", "cannot create the directory: " + error.message());
  auto write = [](const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw UserError(path.string(), "", "cannot write the file");
  };
  const std::filesystem::path root(dir);
  for (const TuneEntry& e : result.entries)
    write(root / e.file, formats::write_msccl_xml(e.program, result.dialect));
  write(root / kTuningFile, formats::dump_json(tuning_json(result)));
}

int load_tuning_dir(runtime::Communicator& communicator, const std::string& dir) {
  const std::filesystem::path root(dir);
  const std::string path = (root / kTuningFile).string();
  const nlohmann::json doc = formats::read_json_file(path);
  const formats::JsonReader reader(doc, path);
  reader.require_object();
  reader.require_header("ccsynth-tuning", kTuningVersion);
  const nlohmann::json& entries = reader.get_array("entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const formats::JsonReader entry = reader.child("entries", i);
    entry.require_object();
    const std::string file = entry.get_string("file");
    if (file.empty() || file.find('/') != std::string::npos)
      entry.fail("file", "expected a file name inside the tuning directory");
    const int64_t min_bytes = json_bytes(entry, "min_bytes");
    const int64_t max_bytes = json_bytes(entry, "max_bytes");
    if (max_bytes > 0 && max_bytes < min_bytes) entry.fail("max_bytes", "is below min_bytes");
    communicator.load(formats::read_msccl_xml_file((root / file).string()), min_bytes, max_bytes);
  }
  return static_cast<int>(entries.size());
}

}  // namespace ccsynth::plan
