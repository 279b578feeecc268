# mlbridge_add_gtest_shards(TARGET SHARDS N TIMEOUT S [LABELS L...]): the
# GoogleTest executable TARGET as N ctest tests TARGET_shard0..N-1, each
# running its share of the cases in one process (GoogleTest's
# GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX). One process per case
# (gtest_discover_tests) paid the executable's start, about 1.5 s under the
# sanitizers with ONNX Runtime, LibTorch and gRPC loaded, for each of 250
# cases; shards pay it N times and still fill ctest -jN. A failing case is
# named in its shard's output (ctest --output-on-failure); run one case with
# TARGET --gtest_filter=Suite.Case.
function(mlbridge_add_gtest_shards target)
  cmake_parse_arguments(arg "" "SHARDS;TIMEOUT" "LABELS" ${ARGN})
  math(EXPR last "${arg_SHARDS} - 1")
  foreach(index RANGE ${last})
    set(name ${target}_shard${index})
    add_test(NAME ${name} COMMAND ${target} --gtest_brief=1)
    set_tests_properties(${name} PROPERTIES
      TIMEOUT ${arg_TIMEOUT}
      ENVIRONMENT "GTEST_TOTAL_SHARDS=${arg_SHARDS};GTEST_SHARD_INDEX=${index}")
    if(arg_LABELS)
      set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}")
    endif()
  endforeach()
endfunction()
