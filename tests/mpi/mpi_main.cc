// main() of mpi_tests: GoogleTest inside an MPI job (every process runs every test, and the
// tests are collective). Process 0 prints the usual output; the others print only failures,
// prefixed with their process number. The exit code is the worst of all processes.

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {

class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int process) : process_(process) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[process %d] %s:%d: failure\n%s\n", process_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int process_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  if (process != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(process));
  }
  int code = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &code, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
