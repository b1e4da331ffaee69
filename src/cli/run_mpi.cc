// `mpirun -np N ccsynth run FILE.xml --mpi --size S`: the program's ranks run in the processes of
// the MPI job (docs/mpi.md); every process runs this command, process 0 prints the table or the
// JSON document. A failed run (deadlock caught by the watchdog, a process that stopped) makes
// every process print what it was waiting for and ends the whole job with exit code 1.

#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "ccsynth/core/error.h"
#include "ccsynth/core/units.h"
#include "ccsynth/mpi/harness.h"
#include "ccsynth/mpi/mpi_executor.h"
#include "cli/command.h"
#include "cli/run_common.h"

namespace ccsynth::cli {

namespace {

int run_on_mpi(const RunOptions& o, const Program& program, int me) {
  runtime::HarnessOptions h = harness_options(o);
  const std::optional<Collective> collective = collective_for(program, o);
  if (collective) h.collective = &*collective;
  const int64_t bytes = parse_bytes(o.bytes, "--size");
  mpi::MpiExecutor executor(program, MPI_COMM_WORLD);
  Outcome out;
  out.collective = collective.value_or(Collective{});
  out.result = with_size_flag(o, [&] { return mpi::run_program(executor, bytes, h); });
  if (executor.failed()) {
    std::cerr << "ccsynth: error: process " << me << ": " << out.result.message << std::endl;
    mpi::abort_job(MPI_COMM_WORLD, kExitCheckFailed);
  }
  set_bandwidths(out, program, collective);
  if (me == 0) {
    const mpi::Placement& placement = executor.placement();
    if (o.json) {
      nlohmann::json j = to_json(o, &program, &out, std::nullopt);
      j["mpi"] = {{"processes", placement.num_processes}, {"placement", placement.describe()}};
      std::cout << j.dump(2) << "\n";
    } else {
      print_table(o, program, out);
      std::cout << "mpi: " << placement.describe() << "\n";
    }
  }
  return out.result.ok ? kExitOk : kExitCheckFailed;
}

// Waits (at most `limit_s` seconds) until every process got here: mpirun ends the job as soon
// as one process exits with a non-zero code, which must not cut process 0's report short.
void wait_for_all(double limit_s) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int run_mpi_command(const RunOptions& o, const Program& program) {
  mpi::Session session(nullptr, nullptr);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int code = kExitOk;
  try {
    code = run_on_mpi(o, program, me);
  } catch (const UserError& e) {
    // Bad input is found alike in every process: process 0 reports it, all exit with 2.
    if (me == 0) std::cerr << "ccsynth: error: " << e.what() << std::endl;
    code = kExitBadInput;
  }
  std::cout.flush();
  wait_for_all(10.0);
  return code;
}

}  // namespace ccsynth::cli
