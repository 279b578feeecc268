# The trained models mlbridge ships (python/mlbridge/models/*.onnx, listed
# by mlbridge.models), each AOT-compiled into a loadable module for the
# plugins' aot runner: <build>/models/mlbridge-model-<name>.so, installed
# into lib/mlbridge/ and listed in the manifest (`mlbridge config --model
# <name> --aot`). Built when mlbridge-aot is (MLBRIDGE_ENABLE_AOT).

set(MLBRIDGE_SHIPPED_MODELS inlining-size pipeline-size)
set(MLBRIDGE_MODEL_TARGETS "")
if(MLBRIDGE_ENABLE_AOT)
  foreach(name IN LISTS MLBRIDGE_SHIPPED_MODELS)
    set(target mlbridge-model-${name})
    mlbridge_add_aot_model(${target}
      MODEL ${PROJECT_SOURCE_DIR}/python/mlbridge/models/${name}.onnx SHARED)
    set_target_properties(${target} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/models)
    list(APPEND MLBRIDGE_MODEL_TARGETS ${target})
  endforeach()
endif()
