# Third-party packages, all from Debian (scripts/setup.sh installs them).
find_package(nlohmann_json 3.10 REQUIRED)
find_package(pugixml REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# COIN-OR CBC (MILP) has only a pkg-config file on Debian.
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)

# Z3 (SMT) ships no CMake config on Debian 12: find the header and library by hand.
find_path(Z3_INCLUDE_DIR NAMES z3++.h REQUIRED)
find_library(Z3_LIBRARY NAMES z3 REQUIRED)
add_library(ccsynth_z3 INTERFACE)
target_include_directories(ccsynth_z3 SYSTEM INTERFACE ${Z3_INCLUDE_DIR})
target_link_libraries(ccsynth_z3 INTERFACE ${Z3_LIBRARY})
add_library(z3::z3 ALIAS ccsynth_z3)

if(CCSYNTH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CCSYNTH_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
