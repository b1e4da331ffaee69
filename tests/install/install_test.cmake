# cmake -P script run by CTest (tests/install/CMakeLists.txt): installs BUILD_DIR into
# WORK_DIR/prefix, checks the installed tree, then builds and runs
#   1. consumer/ (find_package(ccsynth CONFIG REQUIRED), links ccsynth::ccsynth);
#   2. pkgconfig_main.cc compiled with `pkg-config --cflags --libs ccsynth` only;
# and tries the bash completion.
cmake_minimum_required(VERSION 3.25)

# Runs a command; stops the test with its output when it fails. Its stdout goes to `out`.
function(run out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "FAILED (${rc}): ${command}\n${stdout}\n${stderr}")
  endif()
  set(${out} "${stdout}" PARENT_SCOPE)
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected a match of `${regex}`, got:\n${text}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# --- Install and look at the tree.
run(ignored ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(expected
  bin/ccsynth
  include/ccsynth/version.h
  include/ccsynth/core/algorithm.h
  include/ccsynth/compiler/compile.h
  ${LIBDIR}/libccsynth_core.a
  ${LIBDIR}/cmake/ccsynth/ccsynthConfig.cmake
  ${LIBDIR}/cmake/ccsynth/ccsynthConfigVersion.cmake
  ${LIBDIR}/cmake/ccsynth/ccsynthTargets.cmake
  ${LIBDIR}/pkgconfig/ccsynth.pc
  ${DATADIR}/bash-completion/completions/ccsynth)
if(MAN_PAGE)
  list(APPEND expected ${MANDIR}/man1/ccsynth.1)
endif()
foreach(file IN LISTS expected)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
# Compiler passes are private (src/compiler), so are our warning flags.
if(EXISTS ${prefix}/include/ccsynth/compiler/lowered.h)
  message(FATAL_ERROR "a private compiler header was installed: compiler/lowered.h")
endif()
file(GLOB targets_files ${prefix}/${LIBDIR}/cmake/ccsynth/ccsynthTargets*.cmake)
foreach(file IN LISTS targets_files)
  file(READ ${file} text)
  if(text MATCHES "ccsynth_options|${BUILD_DIR}")
    message(FATAL_ERROR "${file} refers to the build (ccsynth_options or the build tree)")
  endif()
endforeach()
run(version ${prefix}/bin/ccsynth --version)
expect_match("${version}" "^ccsynth [0-9]+\\.[0-9]+\\.[0-9]+" "ccsynth --version")

# --- 1. A CMake consumer.
set(flags "")
if(CXX_FLAGS)
  set(flags -DCMAKE_CXX_FLAGS=${CXX_FLAGS} -DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS})
endif()
run(ignored ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} ${flags})
run(ignored ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(output ${WORK_DIR}/consumer/consumer)
message(STATUS "consumer: ${output}")
expect_match("${output}" "allgather on dgx1: verified, [0-9.e+]+ us" "consumer output")

# --- 2. pkg-config only.
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
run(pc_flags ${PKG_CONFIG} --cflags --libs ccsynth)
message(STATUS "pkg-config --cflags --libs ccsynth: ${pc_flags}")
expect_match("${pc_flags}" "-lccsynth_core" "pkg-config --libs")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(extra UNIX_COMMAND "${CXX_FLAGS}")
run(ignored ${CXX} -std=c++20 ${extra} ${SOURCE_DIR}/pkgconfig_main.cc -o ${WORK_DIR}/pc_main
    ${pc_flags})
run(output ${WORK_DIR}/pc_main)
message(STATUS "pkg-config program: ${output}")
expect_match("${output}" "dgx1 has 8 ranks" "pkg-config program output")

# --- 3. The bash completion completes verbs and a verb's flags.
find_program(BASH bash)
if(BASH)
  set(completion ${prefix}/${DATADIR}/bash-completion/completions/ccsynth)
  # (Newlines, not semicolons: a semicolon would split the CMake argument.)
  run(words ${BASH} -c "source '${completion}'
    COMP_WORDS=(ccsynth sy)
    COMP_CWORD=1
    _ccsynth
    echo \"verbs: \${COMPREPLY[*]}\"
    COMP_WORDS=(ccsynth synth --to)
    COMP_CWORD=2
    _ccsynth
    echo \"flags: \${COMPREPLY[*]}\"")
  expect_match("${words}" "verbs: synth\n" "completion of `ccsynth sy`")
  expect_match("${words}" "flags: --topology\n" "completion of `ccsynth synth --to`")
endif()
