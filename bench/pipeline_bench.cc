// Stages after synthesis at scale (issue 16): CPU seconds of every stage of `ccsynth synth`
// (synthesis, algorithm verification, one compilation in the executor dialect, program
// verification, simulation at 1 MiB per rank, XML writing in both dialects, the nccl reference
// in the variants `synth` evaluates it in)
// and the growth exponent k of each stage (time ~ transfers^k) between successive cases.
//
//   pipeline_bench [--order-only | --compile-only | --simulate-only N] [METHOD:COLLECTIVE:TOPOLOGY...]
//
// Stage lowering is the compilation's lowering (buffers, instructions, aggregation), compile
// the rest of it (channels, threadblocks, dependencies, the FIFO-deadlock fixes) from there.
// Stage start_time_order is the check `synth` makes before lowering the start-time order of a
// timed algorithm (compiler::order_by_start_times with the executor's limits; detail: whether
// it fits); --order-only stops after it.
// --compile-only stops after the compilation (synthesis, verify_algorithm, compile), to profile
// the compiler at scale. --simulate-only N skips the program's verification, the XML and the
// reference, and simulates the program N times (stages simulate, simulate_2, ...), to profile
// the simulator at scale.
// Without arguments: tacos allgather on mesh2d:8x8, 16x16 and 32x32. Prints CSV, one line per
// case and stage: case,ranks,ops,steps,stage,cpu_s,exponent,detail (exponent against the
// previous case; detail: XML bytes for the writers, lower-bound ratio for the simulation,
// channels and the longest threadblock for the compilation; never a comma: the lines are
// streamed case by case, unquoted).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ccsynth/compiler/compile.h"
#include "ccsynth/compiler/schedule_order.h"
#include "ccsynth/core/collective.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/evaluate.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/plan/planner.h"
#include "ccsynth/plan/reference.h"
#include "ccsynth/sim/bounds.h"
#include "ccsynth/sim/simulate.h"
#include "ccsynth/synth/registry.h"
#include "ccsynth/topologies/library.h"
#include "ccsynth/verify/verify_algorithm.h"
#include "ccsynth/verify/verify_program.h"

namespace {

using namespace ccsynth;

constexpr int64_t kBytes = int64_t{1} << 20;

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// One measured stage of one case.
struct Stage {
  std::string name;
  double seconds = 0;
  std::string detail;
};

// One case: method, collective and topology, with the sizes of what it made.
struct Case {
  std::string label;
  int ranks = 0;
  size_t ops = 0;
  int64_t steps = 0;
  std::vector<Stage> stages;
};

// Steps of the program's longest threadblock.
size_t longest_threadblock(const Program& program) {
  size_t longest = 0;
  for (const GpuProgram& gpu : program.gpus) {
    for (const Threadblock& tb : gpu.threadblocks) longest = std::max(longest, tb.steps.size());
  }
  return longest;
}

template <typename F>
auto timed(Case& c, const std::string& name, F&& f) {
  const double start = cpu_seconds();
  auto out = f();
  c.stages.push_back({name, cpu_seconds() - start, ""});
  return out;
}

// What to run after the compilation.
struct Mode {
  bool order_only = false;
  bool compile_only = false;
  int simulate_only = 0;  // > 0: only this many simulations
};

Case run_case(const std::string& spec, const Mode& mode) {
  std::istringstream in(spec);
  std::string method_name, kind, topology_name;
  std::getline(in, method_name, ':');
  std::getline(in, kind, ':');
  std::getline(in, topology_name);
  Case c;
  c.label = spec;
  const Topology topology = topologies::resolve_topology(topology_name);
  const synth::Synthesizer& method = synth::find_synthesizer(method_name);
  const Collective collective =
      synth::collective_for(method, topology, parse_collective_kind(kind, "collective"), 0, 0);
  c.ranks = topology.num_ranks;
  const synth::SynthResult found = timed(c, "synthesis", [&] {
    return synth::synthesize(method, topology, collective, synth::SynthOptions{});
  });
  if (!found.algorithm) throw std::runtime_error(spec + ": no algorithm");
  const Algorithm& algorithm = *found.algorithm;
  c.ops = algorithm.ops.size();
  timed(c, "verify_algorithm", [&] { return verify::verify_algorithm(algorithm, &topology); });
  compiler::CompileOptions options;
  plan::apply_runtime_limits(options, formats::XmlDialect::kExecutor);
  std::string overflow;
  timed(c, "start_time_order", [&] {
    return compiler::order_by_start_times(algorithm, options.max_channels,
                                          options.max_steps_per_threadblock, &overflow);
  });
  c.stages.back().detail = overflow.empty() ? "fits" : "over the limits";
  if (mode.order_only) return c;
  // The lowering on its own, then the compilation from it (what `synth` does per variant);
  // the lowering is let go before the later stages, as `synth` does.
  std::optional<compiler::Lowering> lowering =
      timed(c, "lowering", [&] { return std::optional(compiler::Lowering(algorithm, options)); });
  const Program program =
      timed(c, "compile", [&] { return compiler::compile(*lowering, options); });
  lowering.reset();
  c.steps = program.total_steps();
  c.stages.back().detail = std::to_string(program.num_channels) + " channels; longest " +
                           std::to_string(longest_threadblock(program)) + " steps";
  if (mode.compile_only) return c;
  sim::SimOptions timing;  // as the planner simulates: times only, no critical path
  timing.critical_path = false;
  const double bound = sim::lower_bound(topology, algorithm.collective, kBytes,
                                        sim::bound_options_for(topology, program.protocol))
                           .lower_bound_us;
  auto simulate = [&](const std::string& stage) {
    const sim::SimResult simulated =
        timed(c, stage, [&] { return sim::simulate(program, topology, kBytes, timing); });
    c.stages.back().detail = "x" + std::to_string(simulated.time_us / bound) + " of the bound";
  };
  if (mode.simulate_only > 0) {
    for (int i = 0; i < mode.simulate_only; ++i) {
      simulate(i == 0 ? "simulate" : "simulate_" + std::to_string(i + 1));
    }
    return c;
  }
  const verify::VerifyReport report = timed(c, "verify_program", [&] {
    return verify::verify_program(program, {&algorithm.collective, 8});
  });
  if (!report.ok()) throw std::runtime_error(spec + ": program fails verification");
  simulate("simulate");
  for (const formats::XmlDialect dialect :
       {formats::XmlDialect::kExecutor, formats::XmlDialect::kClassic}) {
    const std::string xml = timed(c, "xml_" + formats::to_string(dialect),
                                  [&] { return formats::write_msccl_xml(program, dialect); });
    c.stages.back().detail = std::to_string(xml.size()) + " bytes";
  }
  plan::EvaluateOptions evaluate;
  evaluate.topology = &topology;
  evaluate.sizes = {kBytes};
  timed(c, "nccl_reference", [&] {
    return plan::evaluate_nccl(algorithm.collective, topology, options,
                               plan::nccl_variants(plan::VariantSpace{}), evaluate);
  });
  return c;
}

// Growth exponent of `stage` from `before` to `after`: log(t2 / t1) / log(ops2 / ops1).
std::string exponent(const Case* before, const Case& after, size_t stage) {
  if (before == nullptr || before->ops == after.ops) return "";
  const double t1 = before->stages[stage].seconds, t2 = after.stages[stage].seconds;
  if (t1 <= 1e-3 || t2 <= 1e-3) return "";  // below the clock's resolution
  std::ostringstream os;
  os.precision(2);
  os << std::fixed
     << std::log(t2 / t1) /
            std::log(static_cast<double>(after.ops) / static_cast<double>(before->ops));
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> specs(argv + 1, argv + argc);
  Mode mode;
  if (const auto flag = std::find(specs.begin(), specs.end(), "--order-only");
      flag != specs.end()) {
    mode.order_only = true;
    specs.erase(flag);
  }
  if (const auto flag = std::find(specs.begin(), specs.end(), "--compile-only");
      flag != specs.end()) {
    mode.compile_only = true;
    specs.erase(flag);
  }
  if (const auto flag = std::find(specs.begin(), specs.end(), "--simulate-only");
      flag != specs.end()) {
    if (flag + 1 == specs.end() || (mode.simulate_only = std::atoi((flag + 1)->c_str())) <= 0) {
      std::cerr << "--simulate-only needs a positive count\n";
      return 2;
    }
    specs.erase(flag, flag + 2);
  }
  if (specs.empty()) {
    specs = {"tacos:allgather:mesh2d:8x8", "tacos:allgather:mesh2d:16x16",
             "tacos:allgather:mesh2d:32x32"};
  }
  std::cout << "case,ranks,ops,steps,stage,cpu_s,exponent,detail\n";
  std::optional<Case> previous;
  for (const std::string& spec : specs) {
    Case c;
    try {
      c = run_case(spec, mode);
    } catch (const std::exception& e) {
      std::cerr << spec << ": " << e.what() << "\n";
      return 1;
    }
    for (size_t s = 0; s < c.stages.size(); ++s) {
      std::cout << c.label << "," << c.ranks << "," << c.ops << "," << c.steps << ","
                << c.stages[s].name << "," << c.stages[s].seconds << ","
                << exponent(previous ? &*previous : nullptr, c, s) << "," << c.stages[s].detail
                << "\n";
    }
    std::cout.flush();
    previous = std::move(c);
  }
  return 0;
}
