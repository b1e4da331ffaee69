#include "ccsynth/mpi/harness.h"

#include <string>
#include <vector>

namespace ccsynth::mpi {

namespace {

// Process 0 gets the concatenated messages of every process that has one.
std::string gather_messages(MPI_Comm comm, const std::string& local) {
  int me = 0;
  int processes = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &processes);
  int length = static_cast<int>(local.size());
  std::vector<int> lengths(processes);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::vector<int> offsets(processes, 0);
  int total = 0;
  for (int p = 0; p < processes; ++p) {
    offsets[p] = total;
    total += lengths[p];
  }
  std::string all(me == 0 ? total : 0, '\0');
  MPI_Gatherv(local.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, comm);
  std::string out;
  for (int p = 0; me == 0 && p < processes; ++p) {
    if (lengths[p] == 0) continue;
    out += "\nprocess " + std::to_string(p) + ": " + all.substr(offsets[p], lengths[p]);
  }
  return out;
}

// Combines the checks of all processes into `result` (the same on every process, except the
// message, which process 0 gets for all).
void combine_checks(MPI_Comm comm, runtime::HarnessResult& result) {
  int64_t counts[2] = {result.checked_elements, result.mismatches};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &result.max_error, 1, MPI_DOUBLE, MPI_MAX, comm);
  const std::string details = gather_messages(comm, result.ok ? "" : result.message);
  result.checked_elements = counts[0];
  result.mismatches = counts[1];
  result.ok = counts[1] == 0;
  if (!result.ok) {
    result.message = "check failed: " + std::to_string(counts[1]) + " of " +
                     std::to_string(counts[0]) + " output elements wrong" + details;
  }
}

}  // namespace

runtime::HarnessResult run_program(MpiExecutor& executor, int64_t bytes,
                                   const runtime::HarnessOptions& options) {
  MPI_Comm comm = executor.communicator();
  runtime::RunBuffers buffers(executor.program(), bytes, options, executor.local_ranks());
  auto run_once = [&] {
    MPI_Barrier(comm);
    runtime::ExecResult r = executor.run(buffers.views(), buffers.chunk_elems(), options.exec);
    if (!r.ok) return r;  // the job is ending: no more collectives
    MPI_Allreduce(MPI_IN_PLACE, &r.time_us, 1, MPI_DOUBLE, MPI_MAX, comm);
    return r;
  };
  auto after_check = [&](runtime::HarnessResult& result) { combine_checks(comm, result); };
  return runtime::run_iterations(buffers, bytes, options, run_once, after_check);
}

}  // namespace ccsynth::mpi
