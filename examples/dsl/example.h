#pragma once
// The command line every C++ DSL example shares (examples/dsl/*.cc; the Python examples take
// the same flags through ccsynth.example):
//
//   NAME -o out.xml [--topology T] [--size 1M ...] [--json] [--check] [--compare METHOD ...]
//
// builds the program, plans it (plan::plan_dsl: trace, verify, compile, simulate beside the
// nccl reference), writes the verified MSCCL-IR XML, prints the simulated time per size against
// nccl and the lower bound (or one JSON document with --json); --check also runs it on the
// CPU runtime and compares the outputs with the collective; --compare also evaluates a
// registered method (a baseline such as rd, rhd, hier, twostep) in the same table. Exit codes
// follow the CLI: 0 ok, 1 verification or check failed, 2 bad input, 3 internal error.

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ccsynth/core/topology.h"
#include "ccsynth/lang/program.h"

namespace ccsynth::examples {

// The DSL's names, unqualified in the examples (which live in this namespace); lang::Buffer
// hides core's Buffer enum here.
using lang::Buffer;
using lang::ChunkRef;
using lang::DslProgram;

/// The flags every example has, parsed.
struct ExampleArgs {
  std::string output;
  std::string topology;
  std::vector<std::string> sizes;
  std::string dialect;  // "" = executor, classic for custom collectives
  bool json = false;
  bool check = false;
  std::vector<std::string> compare;
  int nodes = 0;  // 0: the topology's nodes
  int instances = 1;
  std::string protocol = "Simple";
};

/// N nodes of G GPUs: `args.nodes` or the topology's nodes; UserError when they do not divide
/// the ranks evenly.
struct NodeShape {
  int nodes = 1;
  int gpus = 1;
};
NodeShape node_shape(const Topology& topology, const ExampleArgs& args);

/// ProgramOptions from the shared flags (name, topology name, instances, protocol).
lang::ProgramOptions program_options(const std::string& name, const Topology& topology,
                                     const ExampleArgs& args, bool inplace);

/// A program named `name` for `collective`, with the shared flags' options.
std::unique_ptr<DslProgram> make_program(const std::string& name, Collective collective,
                                         const Topology& topology, const ExampleArgs& args,
                                         bool inplace);

/// One example: its name, what it does, its defaults and how it builds the program.
struct Example {
  std::string name;
  std::string description;
  std::string default_topology;
  std::vector<std::string> default_sizes = {"1M"};
  int default_instances = 1;
  std::function<std::unique_ptr<lang::DslProgram>(const Topology&, const ExampleArgs&)> build;
  /// Adds the example's own flags (bound to variables the build function reads).
  std::function<void(CLI::App&)> add_flags;
};

/// Parses argv, runs the example and returns the exit code.
int run_example(const Example& example, int argc, char** argv);

}  // namespace ccsynth::examples

/// Ends an example file: `CCSYNTH_EXAMPLE_MAIN(ring_allreduce_example)` defines main() running
/// the Example that function returns. Compiled with CCSYNTH_EXAMPLE_NO_MAIN (bench/), the file
/// only defines the function.
#ifdef CCSYNTH_EXAMPLE_NO_MAIN
#define CCSYNTH_EXAMPLE_MAIN(make_example)
#else
#define CCSYNTH_EXAMPLE_MAIN(make_example)                                                \
  int main(int argc, char** argv) {                                                       \
    return ccsynth::examples::run_example(ccsynth::examples::make_example(), argc, argv); \
  }
#endif
