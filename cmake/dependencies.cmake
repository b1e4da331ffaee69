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

if(CCSYNTH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CCSYNTH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
