# mlbridge_add_aot_model: compile an ONNX model ahead of time, at build time,
# into a static library with no runtime dependency.
#
#   mlbridge_add_aot_model(<target> MODEL <file.onnx>
#                          [CLASS <CppClass>] [NAMESPACE <ns>]
#                          [INPUT_SHAPES <name>=<d0>,<d1>... ...]
#                          [OPTIONS <mlbridge-aot options>...]
#                          [DEPENDS <files>...] [SHARED])
#
# Runs mlbridge-aot (MLBRIDGE_AOT_COMMAND: the mlbridge-aot program, found on
# PATH or in the source tree's .venv) to generate <CppClass>.h, .cpp and
# .weights.bin in the target's binary directory, and builds them into the
# static library <target>, whose include directory carries the header. The
# weights file holds the model's constants when they are too big to be C++
# arrays (it is empty otherwise); the source pulls it in with the assembler
# (.incbin, by absolute path) and changes whenever it does (it carries its
# SHA-256), and the object depends on it too. OPTIONS are passed to
# mlbridge-aot as they are (e.g. --max-memory 4294967296,
# --inline-weights-limit 0). The class defaults to the model file's name in
# CamelCase, the namespace to mlbridge_models.
# With SHARED, <target> is a loadable module instead, exporting the model's C
# interface as mlbridge_aot_model_v1_entry (for dlopen: the C API's
# mlbridge_aot_runner_load, the LLVM plugin's -mlbridge-runner=aot).
# Generated code is compiled with optimisation (-O3, floating-point
# contraction) even in debug builds: it is a model, not code to step through.

if(NOT MLBRIDGE_AOT_COMMAND)
  find_program(MLBRIDGE_AOT_COMMAND mlbridge-aot
    HINTS ${CMAKE_CURRENT_LIST_DIR}/../.venv/bin ${PROJECT_SOURCE_DIR}/.venv/bin
    DOC "The mlbridge-aot program (pip install 'mlbridge[aot]')")
endif()

function(mlbridge_add_aot_model TARGET)
  cmake_parse_arguments(ARG "SHARED" "MODEL;CLASS;NAMESPACE"
                        "INPUT_SHAPES;OPTIONS;DEPENDS" ${ARGN})
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "mlbridge_add_aot_model(${TARGET}): MODEL is required")
  endif()
  if(NOT MLBRIDGE_AOT_COMMAND)
    message(FATAL_ERROR "mlbridge_add_aot_model(${TARGET}): mlbridge-aot not "
            "found; install the Python package (pip install 'mlbridge[aot]') "
            "or set MLBRIDGE_AOT_COMMAND")
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE)
  if(ARG_CLASS)
    set(class ${ARG_CLASS})
  else()
    get_filename_component(stem "${model}" NAME_WE)
    string(REGEX REPLACE "[^A-Za-z0-9]+" ";" words "${stem}")
    set(class "")
    foreach(word IN LISTS words)
      string(SUBSTRING "${word}" 0 1 first)
      string(SUBSTRING "${word}" 1 -1 rest)
      string(TOUPPER "${first}" first)
      string(APPEND class "${first}${rest}")
    endforeach()
  endif()
  set(namespace mlbridge_models)
  if(ARG_NAMESPACE)
    set(namespace ${ARG_NAMESPACE})
  endif()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${TARGET}_aot)
  set(shape_args "")
  foreach(shape IN LISTS ARG_INPUT_SHAPES)
    list(APPEND shape_args --input-shape ${shape})
  endforeach()
  set(weights ${out_dir}/${class}.weights.bin)
  add_custom_command(
    OUTPUT ${out_dir}/${class}.h ${out_dir}/${class}.cpp ${weights}
    COMMAND ${MLBRIDGE_AOT_COMMAND} ${model} -o ${out_dir} --class ${class}
            --namespace ${namespace} --always-write-weights ${shape_args}
            ${ARG_OPTIONS}
    DEPENDS ${model} ${ARG_DEPENDS} ${MLBRIDGE_AOT_GENERATOR_SOURCES}
    COMMENT "mlbridge-aot: ${ARG_MODEL} -> ${class}"
    VERBATIM)
  set_source_files_properties(${out_dir}/${class}.cpp PROPERTIES
    OBJECT_DEPENDS ${weights})
  if(ARG_SHARED)
    add_library(${TARGET} MODULE ${out_dir}/${class}.cpp ${out_dir}/${class}.h)
    target_compile_definitions(${TARGET} PRIVATE MLBRIDGE_AOT_ENTRY_POINT)
    set_target_properties(${TARGET} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden)
  else()
    add_library(${TARGET} STATIC ${out_dir}/${class}.cpp ${out_dir}/${class}.h)
  endif()
  target_include_directories(${TARGET} PUBLIC ${out_dir})
  target_compile_features(${TARGET} PUBLIC cxx_std_17)
  set_target_properties(${TARGET} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${TARGET} PRIVATE -O3 -ffp-contract=fast)
  endif()
endfunction()
