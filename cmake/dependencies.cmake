# Third-party packages, all from Debian (scripts/setup.sh installs them).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(pugixml REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# COIN-OR CBC (MILP) has only a pkg-config file on Debian.
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)

# Z3 (SMT) ships no CMake config on Debian 12: cmake/FindZ3.cmake finds the header and library
# and makes the imported target z3::z3 (also installed, for ccsynthConfig.cmake).
list(PREPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR})
find_package(Z3 REQUIRED)

# MPI (the `mpi` module, docs/mpi.md): optional, on by default when an implementation is found
# (Debian: libopenmpi-dev openmpi-bin).
# The C API from C++ (MPI::MPI_CXX without the deprecated C++ bindings).
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI COMPONENTS CXX QUIET)
option(CCSYNTH_WITH_MPI "Build the MPI runtime (src/mpi/, needs MPI: libopenmpi-dev)" ${MPI_CXX_FOUND})
if(CCSYNTH_WITH_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
endif()

if(CCSYNTH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CCSYNTH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
