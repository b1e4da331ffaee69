include(GNUInstallDirs)

# ccsynth/version.h (CCSYNTH_VERSION from project()) is generated into the build tree's include/
# and installed with the other headers. Targets that include it link ccsynth::version (a module
# would add it to its DEPS); it is exported, and part of ccsynth::ccsynth.
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.h.in ${PROJECT_BINARY_DIR}/include/ccsynth/version.h
               @ONLY)
add_library(ccsynth_version INTERFACE)
add_library(ccsynth::version ALIAS ccsynth_version)
set_target_properties(ccsynth_version PROPERTIES EXPORT_NAME version)
target_include_directories(ccsynth_version INTERFACE
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS ccsynth_version EXPORT ccsynthTargets)

# Shared compile settings for every ccsynth target.
add_library(ccsynth_options INTERFACE)
# -Wno-restrict: GCC 12 at -O3 reports false positives inside std::string (GCC bug 105329).
target_compile_options(ccsynth_options INTERFACE -Wall -Wextra -Wpedantic -Wno-sign-compare
                       $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
if(CCSYNTH_WARNINGS_AS_ERRORS)
  target_compile_options(ccsynth_options INTERFACE -Werror)
endif()
if(CCSYNTH_SANITIZE)
  # -fno-sanitize-recover: undefined behaviour aborts (fails the test or the fuzz run) instead of
  # printing a line that nobody reads.
  target_compile_options(ccsynth_options INTERFACE -fsanitize=address,undefined
                         -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(ccsynth_options INTERFACE -fsanitize=address,undefined
                      -fno-sanitize-recover=all)
endif()
if(CCSYNTH_BUILD_FUZZERS)
  # libFuzzer's coverage instrumentation in every module; fuzz/ links the fuzzer's main.
  target_compile_options(ccsynth_options INTERFACE -fsanitize=fuzzer-no-link)
endif()

# ccsynth_add_module(NAME SOURCES ... DEPS ...): the library target ccsynth_<NAME> with alias
# ccsynth::<NAME>, public headers under include/. Every module is installed and exported as
# ccsynth::<NAME> (cmake/ccsynth_install.cmake); the global property CCSYNTH_LIBRARY_MODULES lists
# them in the order they were added, CCSYNTH_MODULE_DEPS_<NAME> holds each one's DEPS.
function(ccsynth_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ccsynth_${name} STATIC ${ARG_SOURCES})
  add_library(ccsynth::${name} ALIAS ccsynth_${name})
  set_target_properties(ccsynth_${name} PROPERTIES EXPORT_NAME ${name})
  # The headers are C++20; a consumer of the installed package inherits that.
  target_compile_features(ccsynth_${name} PUBLIC cxx_std_20)
  target_include_directories(ccsynth_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # The warning flags are ours, not a consumer's: keep them out of the exported link interface.
  target_link_libraries(ccsynth_${name} PUBLIC ${ARG_DEPS} PRIVATE $<BUILD_INTERFACE:ccsynth_options>)
  if(CCSYNTH_SANITIZE)
    # Sanitized objects need the sanitizer runtimes wherever the installed libraries are linked.
    target_link_options(ccsynth_${name} INTERFACE $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
  endif()
  set_property(GLOBAL APPEND PROPERTY CCSYNTH_LIBRARY_MODULES ${name})
  set_property(GLOBAL PROPERTY CCSYNTH_MODULE_DEPS_${name} ${ARG_DEPS})
  install(TARGETS ccsynth_${name} EXPORT ccsynthTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# ccsynth_add_test(NAME SOURCES ... DEPS ...): a GoogleTest executable registered with CTest.
function(ccsynth_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main ccsynth_options)
  target_compile_definitions(${name} PRIVATE
    CCSYNTH_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    CCSYNTH_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  # NO_PRETTY_VALUES: parameterized tests name their cases (name generators), so CTest keeps
  # those names instead of appending "# GetParam() = <value>".
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 NO_PRETTY_VALUES PROPERTIES TIMEOUT 600)
endfunction()
