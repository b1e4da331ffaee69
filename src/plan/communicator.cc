#include "ccsynth/plan/communicator.h"

#include "ccsynth/compiler/compile.h"
#include "ccsynth/core/error.h"
#include "ccsynth/formats/msccl_xml.h"
#include "ccsynth/plan/limits.h"
#include "ccsynth/synth/baselines.h"
#include "ccsynth/topologies/library.h"

namespace ccsynth::plan {

namespace {

std::optional<Program> builtin_program(CollectiveKind kind, int num_ranks, int root, bool inplace) {
  const Topology ring = topologies::make_builtin("ring:" + std::to_string(num_ranks));
  const Collective c = make_collective(kind, num_ranks, 1, root);
  for (synth::BaselineKind b : {synth::BaselineKind::kRing, synth::BaselineKind::kChain}) {
    if (!synth::baseline_applies(b, c, ring)) continue;
    compiler::CompileOptions o;
    o.name = "builtin " + synth::to_string(b);
    o.inplace = inplace;
    apply_runtime_limits(o, unlimited());  // the CPU runtime has no threadblock limits
    try {
      return compiler::compile(synth::make_baseline(b, c, ring), o);
    } catch (const UserError&) {
      continue;  // try the next family; the direct fallback covers the rest
    }
  }
  return std::nullopt;
}

}  // namespace

runtime::BuiltinPrograms builtin_programs() { return builtin_program; }

runtime::Communicator make_communicator(int num_ranks, runtime::ExecOptions exec) {
  runtime::Communicator communicator(num_ranks, exec);
  communicator.set_builtin_programs(builtin_programs());
  return communicator;
}

int load_xml_file(runtime::Communicator& communicator, const std::string& path) {
  return communicator.load(formats::read_msccl_xml_file(path));
}

}  // namespace ccsynth::plan
