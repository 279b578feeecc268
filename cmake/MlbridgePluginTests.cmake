# The tests of this build's compiler plugins in stock compilers (tests/llvm,
# tests/gcc, tests/mlir): pytest, told the plugin's path and, in a sanitizer
# build, the runtimes to LD_PRELOAD into the uninstrumented compiler
# (opt-19, clang-19, cc1, mlir-opt-19).

# mlbridge_sanitizer_preload(OUT): those runtimes, ':'-separated; empty
# without MLBRIDGE_SANITIZE.
function(mlbridge_sanitizer_preload out)
  set(preload "")
  if(MLBRIDGE_SANITIZE)
    foreach(runtime libasan.so libubsan.so)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime}
                      OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
      list(APPEND preload ${path})
    endforeach()
    string(REPLACE ";" ":" preload "${preload}")
  endif()
  set(${out} "${preload}" PARENT_SCOPE)
endfunction()

# mlbridge_add_plugin_test(NAME VARIABLE TARGET TESTS...): the ctest NAME runs
# pytest on TESTS (files or directories) with $VARIABLE set to the plugin
# TARGET builds and $VARIABLE_PRELOAD to the sanitizer runtimes. These are
# the longest tests of a tree: a high COST (1000 unless the caller sets about
# its seconds) makes ctest -j start them first.
function(mlbridge_add_plugin_test name variable target)
  mlbridge_sanitizer_preload(preload)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -E env
            ${variable}=$<TARGET_FILE:${target}>
            ${variable}_PRELOAD=${preload}
            ${MLBRIDGE_TEST_PYTHON} -m pytest -q -p no:cacheprovider ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 900 COST 1000)
endfunction()
