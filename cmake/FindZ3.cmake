# FindZ3: Z3 (SMT) ships no CMake config on Debian 12, so find the header and library by hand.
# Defines the imported target z3::z3. Used by the build (cmake/dependencies.cmake) and installed
# next to ccsynthConfig.cmake, so a consumer of the installed package gets the same target.
find_path(Z3_INCLUDE_DIR NAMES z3++.h)
find_library(Z3_LIBRARY NAMES z3)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Z3 REQUIRED_VARS Z3_LIBRARY Z3_INCLUDE_DIR)
mark_as_advanced(Z3_INCLUDE_DIR Z3_LIBRARY)
if(Z3_FOUND AND NOT TARGET z3::z3)
  add_library(z3::z3 INTERFACE IMPORTED)
  # Imported targets' include directories are system includes: Z3's headers are not our warnings.
  set_target_properties(z3::z3 PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Z3_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${Z3_LIBRARY}")
endif()
