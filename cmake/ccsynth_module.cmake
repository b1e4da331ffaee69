# Shared compile settings for every ccsynth target.
add_library(ccsynth_options INTERFACE)
# -Wno-restrict: GCC 12 at -O3 reports false positives inside std::string (GCC bug 105329).
target_compile_options(ccsynth_options INTERFACE -Wall -Wextra -Wpedantic -Wno-sign-compare
                       -Wno-restrict)
if(CCSYNTH_WARNINGS_AS_ERRORS)
  target_compile_options(ccsynth_options INTERFACE -Werror)
endif()
if(CCSYNTH_SANITIZE)
  target_compile_options(ccsynth_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(ccsynth_options INTERFACE -fsanitize=address,undefined)
endif()

# ccsynth_add_module(NAME SOURCES ... DEPS ...): the library target ccsynth_<NAME> with alias
# ccsynth::<NAME>, public headers under include/.
function(ccsynth_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ccsynth_${name} STATIC ${ARG_SOURCES})
  add_library(ccsynth::${name} ALIAS ccsynth_${name})
  target_include_directories(ccsynth_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(ccsynth_${name} PUBLIC ${ARG_DEPS} PRIVATE ccsynth_options)
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
