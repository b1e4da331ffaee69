# Installation and the CMake / pkg-config packages (README "Install"). Included by the top-level
# CMakeLists.txt after every module was added: it is generic over the modules that
# ccsynth_add_module registered (global property CCSYNTH_LIBRARY_MODULES), so a new module is
# installed and exported as ccsynth::<module> without touching this file.
include(CMakePackageConfigHelpers)

get_property(ccsynth_library_modules GLOBAL PROPERTY CCSYNTH_LIBRARY_MODULES)
set(ccsynth_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ccsynth)

# --- ccsynth::ccsynth: every module in one target. The executable is already called `ccsynth`.
add_library(ccsynth_umbrella INTERFACE)
add_library(ccsynth::ccsynth ALIAS ccsynth_umbrella)
set_target_properties(ccsynth_umbrella PROPERTIES EXPORT_NAME ccsynth)
foreach(module IN LISTS ccsynth_library_modules)
  target_link_libraries(ccsynth_umbrella INTERFACE ccsynth::${module})
endforeach()
target_link_libraries(ccsynth_umbrella INTERFACE ccsynth::version)
install(TARGETS ccsynth_umbrella EXPORT ccsynthTargets)

# --- Headers: include/ccsynth/** and the generated ccsynth/version.h.
# The MPI runtime's headers only when it is built (they include mpi.h).
set(ccsynth_header_excludes "")
if(NOT TARGET ccsynth::mpi)
  set(ccsynth_header_excludes PATTERN "mpi" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" ${ccsynth_header_excludes})
install(FILES ${PROJECT_BINARY_DIR}/include/ccsynth/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ccsynth)

# --- Third-party packages the modules link publicly (their DEPS). Each known target maps to the
# code ccsynthConfig.cmake runs to find it again and to its words in ccsynth.pc; a module that
# adds a new third-party dependency must add a row here (configuration stops otherwise, since
# the installed package would be unusable).
set(ccsynth_third_party_order
    PkgConfig::CBC z3::z3 pugixml::pugixml nlohmann_json::nlohmann_json fmt::fmt Threads::Threads
    MPI::MPI_CXX)
set(ccsynth_find_PkgConfig::CBC [=[
find_dependency(PkgConfig)
if(NOT TARGET PkgConfig::CBC)
  pkg_check_modules(CBC QUIET IMPORTED_TARGET cbc)
  if(NOT CBC_FOUND)
    set(ccsynth_FOUND FALSE)
    set(ccsynth_NOT_FOUND_MESSAGE "ccsynth needs COIN-OR CBC (pkg-config module cbc)")
    return()
  endif()
endif()]=])
set(ccsynth_find_z3::z3 [=[
set(ccsynth_saved_module_path "${CMAKE_MODULE_PATH}")
list(PREPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")
find_package(Z3 QUIET)
set(CMAKE_MODULE_PATH "${ccsynth_saved_module_path}")
if(NOT TARGET z3::z3)
  set(ccsynth_FOUND FALSE)
  set(ccsynth_NOT_FOUND_MESSAGE "ccsynth needs Z3 (z3++.h and libz3)")
  return()
endif()]=])
set(ccsynth_find_pugixml::pugixml "find_dependency(pugixml)")
set(ccsynth_find_nlohmann_json::nlohmann_json "find_dependency(nlohmann_json 3.10)")
set(ccsynth_find_fmt::fmt "find_dependency(fmt)")
set(ccsynth_find_Threads::Threads "find_dependency(Threads)")
set(ccsynth_find_MPI::MPI_CXX "find_dependency(MPI COMPONENTS CXX)")

# Libs words for static linking (-l...), or a Requires.private module for header-only packages.
function(ccsynth_pc_libs_of_library path out)
  get_filename_component(dir "${path}" DIRECTORY)
  get_filename_component(name "${path}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  if(dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    set(${out} "-l${name}" PARENT_SCOPE)
  else()
    set(${out} "-L${dir} -l${name}" PARENT_SCOPE)
  endif()
endfunction()
list(JOIN CBC_LDFLAGS " " ccsynth_pc_PkgConfig::CBC)
ccsynth_pc_libs_of_library("${Z3_LIBRARY}" ccsynth_pc_z3::z3)
set(ccsynth_pc_pugixml::pugixml "-lpugixml")
set(ccsynth_pc_fmt::fmt "-lfmt")
set(ccsynth_pc_Threads::Threads "-lpthread")
if(CCSYNTH_WITH_MPI)
  set(ccsynth_mpi_words "")
  foreach(library IN LISTS MPI_CXX_LIBRARIES)
    ccsynth_pc_libs_of_library("${library}" words)
    list(APPEND ccsynth_mpi_words ${words})
  endforeach()
  list(JOIN ccsynth_mpi_words " " ccsynth_pc_MPI::MPI_CXX)
endif()
set(ccsynth_pc_requires_nlohmann_json::nlohmann_json "nlohmann_json")

# Link order for ccsynth.pc: a module before the modules it uses (DEPS), reverse topological.
set_property(GLOBAL PROPERTY ccsynth_visited "")
set_property(GLOBAL PROPERTY ccsynth_postorder "")
function(ccsynth_visit module)
  get_property(visited GLOBAL PROPERTY ccsynth_visited)
  if(module IN_LIST visited)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY ccsynth_visited ${module})
  get_property(deps GLOBAL PROPERTY CCSYNTH_MODULE_DEPS_${module})
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^ccsynth::(.+)$")
      ccsynth_visit(${CMAKE_MATCH_1})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY ccsynth_postorder ${module})
endfunction()

set(ccsynth_third_party "")
foreach(module IN LISTS ccsynth_library_modules)
  ccsynth_visit(${module})
  get_property(deps GLOBAL PROPERTY CCSYNTH_MODULE_DEPS_${module})
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^ccsynth::")
      continue()
    endif()
    if(NOT dep IN_LIST ccsynth_third_party_order)
      message(FATAL_ERROR "module ${module} links ${dep}: add it to the third-party table in "
                          "cmake/ccsynth_install.cmake so the installed package finds it")
    endif()
    list(APPEND ccsynth_third_party ${dep})
  endforeach()
endforeach()
get_property(ccsynth_link_order GLOBAL PROPERTY ccsynth_postorder)
list(REVERSE ccsynth_link_order)

set(CCSYNTH_FIND_DEPENDENCIES "")
set(ccsynth_pc_libs "-L\${libdir}")
foreach(module IN LISTS ccsynth_link_order)
  string(APPEND ccsynth_pc_libs " -lccsynth_${module}")
endforeach()
set(CCSYNTH_PC_REQUIRES_PRIVATE "")
foreach(dep IN LISTS ccsynth_third_party_order)
  if(dep IN_LIST ccsynth_third_party)
    string(APPEND CCSYNTH_FIND_DEPENDENCIES "${ccsynth_find_${dep}}\n")
    if(DEFINED ccsynth_pc_${dep})
      string(APPEND ccsynth_pc_libs " ${ccsynth_pc_${dep}}")
    else()
      list(APPEND CCSYNTH_PC_REQUIRES_PRIVATE ${ccsynth_pc_requires_${dep}})
    endif()
  endif()
endforeach()
set(CCSYNTH_PC_LIBS "${ccsynth_pc_libs}")
list(JOIN CCSYNTH_PC_REQUIRES_PRIVATE ", " CCSYNTH_PC_REQUIRES_PRIVATE)
set(CCSYNTH_COMPONENTS "${ccsynth_library_modules}")

# --- CMake package: find_package(ccsynth CONFIG) gives ccsynth::ccsynth and ccsynth::<module>.
install(EXPORT ccsynthTargets NAMESPACE ccsynth:: DESTINATION ${ccsynth_cmake_dir}
        FILE ccsynthTargets.cmake)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ccsynthConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ccsynthConfig.cmake
                              INSTALL_DESTINATION ${ccsynth_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ccsynthConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ccsynthConfig.cmake
              ${PROJECT_BINARY_DIR}/ccsynthConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/FindZ3.cmake
        DESTINATION ${ccsynth_cmake_dir})

# --- pkg-config: relocatable (prefix from the .pc file's own place), so `cmake --install
# --prefix P` works whatever CMAKE_INSTALL_PREFIX was at configure time.
file(RELATIVE_PATH CCSYNTH_PC_PREFIX_FROM_PCFILEDIR
     /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REGEX REPLACE "/$" "" CCSYNTH_PC_PREFIX_FROM_PCFILEDIR "${CCSYNTH_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/ccsynth.pc.in ${PROJECT_BINARY_DIR}/ccsynth.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ccsynth.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# --- The executable, its man page (help2man) and its bash completion.
if(TARGET ccsynth)
  install(TARGETS ccsynth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

  find_program(CCSYNTH_HELP2MAN help2man)
  if(CCSYNTH_HELP2MAN)
    add_custom_command(
      OUTPUT ${PROJECT_BINARY_DIR}/man/ccsynth.1
      COMMAND ${CCSYNTH_HELP2MAN} --no-info --section=1
              "--name=synthesize, verify, simulate and run collective communication algorithms"
              --output=${PROJECT_BINARY_DIR}/man/ccsynth.1 $<TARGET_FILE:ccsynth>
      DEPENDS ccsynth
      COMMENT "Generating the man page ccsynth.1 with help2man"
      VERBATIM)
    add_custom_target(ccsynth_man ALL DEPENDS ${PROJECT_BINARY_DIR}/man/ccsynth.1)
    install(FILES ${PROJECT_BINARY_DIR}/man/ccsynth.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  else()
    message(STATUS "help2man not found: the man page ccsynth.1 is not built nor installed "
                   "(scripts/setup.sh installs help2man)")
  endif()

  add_custom_command(
    OUTPUT ${PROJECT_BINARY_DIR}/completions/ccsynth
    COMMAND ${CMAKE_COMMAND} -DCCSYNTH=$<TARGET_FILE:ccsynth>
            -DOUTPUT=${PROJECT_BINARY_DIR}/completions/ccsynth
            -P ${CMAKE_CURRENT_LIST_DIR}/ccsynth_completion.cmake
    DEPENDS ccsynth ${CMAKE_CURRENT_LIST_DIR}/ccsynth_completion.cmake
    COMMENT "Generating the bash completion of ccsynth from its --help"
    VERBATIM)
  add_custom_target(ccsynth_completion ALL DEPENDS ${PROJECT_BINARY_DIR}/completions/ccsynth)
  install(FILES ${PROJECT_BINARY_DIR}/completions/ccsynth
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()
