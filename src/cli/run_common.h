#pragma once
// Shared by `ccsynth run` on the CPU runtime (run_command.cc) and on the MPI runtime
// (run_mpi.cc): the flags, the harness options they make, the bandwidths, the table and the
// JSON document.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ccsynth/core/collective.h"
#include "ccsynth/core/program.h"
#include "ccsynth/runtime/harness.h"

namespace ccsynth::cli {

/// The flags of `ccsynth run`.
struct RunOptions {
  std::string file;
  std::string bytes = "1M";
  std::string dtype = "float32";
  std::string op = "sum";
  std::string collective;
  int iters = 10;
  int warmup = 2;
  bool check = false;
  bool json = false;
  bool inplace = false;
  int slices = 0;
  std::string slice_bytes = "0";
  int fifo_slots = 8;
  int workers = 0;
  double timeout_s = 60.0;
  uint64_t seed = 1;
  bool memcpy = false;
  std::string memcpy_bytes = "256M";
  bool mpi = false;  // run on the MPI runtime (every process of the job runs this command)
  bool csv = false;
  std::string trace;  // Chrome trace-event JSON of the last run (CPU runtime)
};

/// A run's result with its bandwidths (nccl-tests conventions).
struct Outcome {
  runtime::HarnessResult result;
  Collective collective;
  double algbw_gbps = 0.0;
  double busbw_gbps = 0.0;
};

/// The collective of the program (--collective for custom programs); nullopt for an unchecked
/// custom program.
std::optional<Collective> collective_for(const Program& program, const RunOptions& o);
/// The harness options of the flags (without the collective).
runtime::HarnessOptions harness_options(const RunOptions& o);
/// Sets out.algbw_gbps and out.busbw_gbps from out.result.
void set_bandwidths(Outcome& out, const Program& program,
                    const std::optional<Collective>& collective);
/// Runs `run`, renaming a UserError about the size to the --size flag.
runtime::HarnessResult with_size_flag(const RunOptions& o,
                                      const std::function<runtime::HarnessResult()>& run);
/// The ccsynth-run JSON document.
nlohmann::json to_json(const RunOptions& o, const Program* program, const Outcome* out,
                       std::optional<double> memcpy_gbps);
/// The nccl-tests style table.
void print_table(const RunOptions& o, const Program& program, const Outcome& out);
/// `ccsynth run --mpi` (run_mpi.cc; without MPI a UserError).
int run_mpi_command(const RunOptions& o, const Program& program);

}  // namespace ccsynth::cli
