# Installation of every component (included by the top-level CMakeLists.txt):
#
#   include/mlbridge/...                   headers
#   lib/libmlbridge*.{a,so}                libraries
#   bin/mlbridge-phase-service-llvmN       the phase-ordering compiler service
#   bin/mlbridge-pipeline-clang-llvmN      clang with a pipeline in process
#   lib/mlbridge/                          the LLVM, MLIR and GCC plugins
#                                          (mlbridge-inline-advisor-llvmN.so,
#                                          mlbridge-mlir-tiling-llvmN.so), the
#                                          runner modules, bundled ONNX Runtime
#   libexec/mlbridge/                      the demo's deployment replay program
#   lib/cmake/mlbridge/                    the CMake package, one export set
#                                          per component
#   lib/pkgconfig/mlbridge.pc, mlbridge-c.pc
#   share/mlbridge/native.json             what `mlbridge config` reads, and
#   share/mlbridge/llvmN.json              the parts built for LLVM N
#
# Nothing installed points into the source or build tree: bundled ONNX
# Runtime binaries are installed beside mlbridge and found through RUNPATHs
# relative to $ORIGIN.

set(MLBRIDGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mlbridge)
set(MLBRIDGE_PRIVATE_LIBDIR ${CMAKE_INSTALL_LIBDIR}/mlbridge)
set(MLBRIDGE_LIBEXECDIR ${CMAKE_INSTALL_LIBEXECDIR}/mlbridge)
set(MLBRIDGE_COMPONENTS core c)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mlbridge
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Core.
install(TARGETS mlbridge EXPORT mlbridgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT mlbridgeTargets NAMESPACE mlbridge::
        DESTINATION ${MLBRIDGE_CMAKE_DIR})

# The RUNPATH that finds ONNX Runtime from a directory of the install tree
# (relative to lib/), empty without ONNX Runtime.
function(mlbridge_ort_runpath out from_dir)
  if(NOT MLBRIDGE_ENABLE_ONNXRUNTIME)
    set(${out} "" PARENT_SCOPE)
  elseif(MLBRIDGE_ORT_BUNDLED)
    file(RELATIVE_PATH rel "/p/${from_dir}" "/p/${MLBRIDGE_PRIVATE_LIBDIR}")
    if(rel STREQUAL "")
      set(${out} "$ORIGIN" PARENT_SCOPE)
    else()
      set(${out} "$ORIGIN/${rel}" PARENT_SCOPE)
    endif()
  else()
    set(${out} ${MLBRIDGE_ORT_LIBDIR} PARENT_SCOPE)
  endif()
endfunction()

# C API.
mlbridge_ort_runpath(c_runpath ${CMAKE_INSTALL_LIBDIR})
set_target_properties(mlbridge_c PROPERTIES INSTALL_RPATH "${c_runpath}")
install(TARGETS mlbridge_c EXPORT mlbridgeCTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT mlbridgeCTargets NAMESPACE mlbridge::
        DESTINATION ${MLBRIDGE_CMAKE_DIR})

if(MLBRIDGE_ENABLE_GRPC)
  list(APPEND MLBRIDGE_COMPONENTS grpc)
  install(TARGETS mlbridge_grpc EXPORT mlbridgeGrpcTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT mlbridgeGrpcTargets NAMESPACE mlbridge::
          DESTINATION ${MLBRIDGE_CMAKE_DIR})
endif()

if(MLBRIDGE_ENABLE_ONNXRUNTIME)
  list(APPEND MLBRIDGE_COMPONENTS onnx)
  install(TARGETS mlbridge_onnx mlbridge_onnxruntime EXPORT mlbridgeOnnxTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT mlbridgeOnnxTargets NAMESPACE mlbridge::
          DESTINATION ${MLBRIDGE_CMAKE_DIR})
  if(MLBRIDGE_ORT_BUNDLED)
    install(FILES ${MLBRIDGE_ORT_LIBRARY} DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR}
            RENAME libonnxruntime.so.1)
  endif()
  if(TARGET mlbridge-example-deploy-replay)
    mlbridge_ort_runpath(replay_runpath ${MLBRIDGE_LIBEXECDIR})
    set_target_properties(mlbridge-example-deploy-replay PROPERTIES
                          INSTALL_RPATH "${replay_runpath}")
    install(TARGETS mlbridge-example-deploy-replay
            RUNTIME DESTINATION ${MLBRIDGE_LIBEXECDIR})
    set(MLBRIDGE_MANIFEST_DEPLOY_REPLAY
        ",\n  \"deploy_replay\": \"${MLBRIDGE_LIBEXECDIR}/mlbridge-example-deploy-replay\"")
  endif()
endif()

if(MLBRIDGE_ENABLE_TORCH)
  list(APPEND MLBRIDGE_COMPONENTS torch)
  install(TARGETS mlbridge_torch EXPORT mlbridgeTorchTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT mlbridgeTorchTargets NAMESPACE mlbridge::
          DESTINATION ${MLBRIDGE_CMAKE_DIR})
endif()

# The parts built against one LLVM major (src/llvm, src/mlir): the install
# component llvmN, with their own export sets and manifest, so that builds
# for two majors install into one prefix side by side
# (cmake --install BUILD --component llvm16; docs/llvm-versions.md).
if(MLBRIDGE_ENABLE_LLVM OR MLBRIDGE_ENABLE_MLIR)
  set(llvm_component llvm${MLBRIDGE_LLVM_MAJOR})
  set(MLBRIDGE_LLVM_MANIFEST_PARTS "")
  set(MLBRIDGE_LLVM_MANIFEST_COMPONENTS "")
endif()

if(MLBRIDGE_ENABLE_LLVM)
  list(APPEND MLBRIDGE_LLVM_MANIFEST_COMPONENTS llvm)
  mlbridge_ort_runpath(plugin_runpath ${MLBRIDGE_PRIVATE_LIBDIR})
  set_target_properties(mlbridge-inline-advisor PROPERTIES
                        INSTALL_RPATH "${plugin_runpath}")
  install(TARGETS mlbridge_llvm mlbridge-inline-advisor
          EXPORT mlbridgeLlvm${MLBRIDGE_LLVM_MAJOR}Targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${llvm_component}
          LIBRARY DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR}
                  COMPONENT ${llvm_component})
  install(EXPORT mlbridgeLlvm${MLBRIDGE_LLVM_MAJOR}Targets NAMESPACE mlbridge::
          DESTINATION ${MLBRIDGE_CMAKE_DIR} COMPONENT ${llvm_component})
  mlbridge_ort_runpath(service_runpath ${CMAKE_INSTALL_BINDIR})
  set_target_properties(mlbridge-phase-service PROPERTIES
                        INSTALL_RPATH "${service_runpath}")
  install(TARGETS mlbridge-phase-service
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${llvm_component})
  string(APPEND MLBRIDGE_LLVM_MANIFEST_PARTS
    ",\n  \"plugin\": \"${MLBRIDGE_PRIVATE_LIBDIR}/$<TARGET_FILE_NAME:mlbridge-inline-advisor>\""
    ",\n  \"phase_service\": \"${CMAKE_INSTALL_BINDIR}/$<TARGET_FILE_NAME:mlbridge-phase-service>\"")
  if(TARGET mlbridge-pipeline-clang)
    set_target_properties(mlbridge-pipeline-clang PROPERTIES
                          INSTALL_RPATH "${service_runpath}")
    install(TARGETS mlbridge-pipeline-clang
            RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
            COMPONENT ${llvm_component})
    string(APPEND MLBRIDGE_LLVM_MANIFEST_PARTS
      ",\n  \"pipeline_clang\": \"${CMAKE_INSTALL_BINDIR}/$<TARGET_FILE_NAME:mlbridge-pipeline-clang>\"")
  endif()
endif()

if(MLBRIDGE_ENABLE_MLIR)
  # The MLIR plugin opens its runner modules from its own directory.
  list(APPEND MLBRIDGE_LLVM_MANIFEST_COMPONENTS mlir)
  mlbridge_ort_runpath(mlir_runpath ${MLBRIDGE_PRIVATE_LIBDIR})
  set_target_properties(mlbridge-mlir-tiling PROPERTIES
                        INSTALL_RPATH "${mlir_runpath}")
  install(TARGETS mlbridge_mlir EXPORT mlbridgeMlir${MLBRIDGE_LLVM_MAJOR}Targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${llvm_component})
  install(EXPORT mlbridgeMlir${MLBRIDGE_LLVM_MAJOR}Targets NAMESPACE mlbridge::
          DESTINATION ${MLBRIDGE_CMAKE_DIR} COMPONENT ${llvm_component})
  install(TARGETS mlbridge-mlir-tiling
          LIBRARY DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR}
                  COMPONENT ${llvm_component})
  string(APPEND MLBRIDGE_LLVM_MANIFEST_PARTS
    ",\n  \"mlir_plugin\": \"${MLBRIDGE_PRIVATE_LIBDIR}/$<TARGET_FILE_NAME:mlbridge-mlir-tiling>\"")
endif()

if(MLBRIDGE_ENABLE_LLVM OR MLBRIDGE_ENABLE_MLIR)
  # share/mlbridge/llvmN.json, read by `mlbridge config --llvm N`, and the
  # CMake package's record of where LLVM N (and its MLIR) was found.
  list(JOIN MLBRIDGE_LLVM_MANIFEST_COMPONENTS "\", \""
       MLBRIDGE_LLVM_MANIFEST_COMPONENT_LIST)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/llvm.json.in
                 ${PROJECT_BINARY_DIR}/llvm.json.in @ONLY)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/${llvm_component}.json
       INPUT ${PROJECT_BINARY_DIR}/llvm.json.in)
  install(FILES ${PROJECT_BINARY_DIR}/${llvm_component}.json
          DESTINATION ${CMAKE_INSTALL_DATADIR}/mlbridge
          COMPONENT ${llvm_component})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/mlbridgeLlvmMajor.cmake.in
                 ${PROJECT_BINARY_DIR}/mlbridgeLlvm${MLBRIDGE_LLVM_MAJOR}.cmake
                 @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/mlbridgeLlvm${MLBRIDGE_LLVM_MAJOR}.cmake
          DESTINATION ${MLBRIDGE_CMAKE_DIR} COMPONENT ${llvm_component})
endif()

if(MLBRIDGE_ENABLE_GCC)
  # The GCC plugin finds libmlbridge_c.so in lib/, above its directory.
  list(APPEND MLBRIDGE_COMPONENTS gcc)
  file(RELATIVE_PATH gcc_rel "/p/${MLBRIDGE_PRIVATE_LIBDIR}"
       "/p/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(mlbridge_gcc PROPERTIES
                        INSTALL_RPATH "$ORIGIN/${gcc_rel}")
  install(TARGETS mlbridge_gcc LIBRARY DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR})
  set(MLBRIDGE_MANIFEST_GCC_PLUGIN
      ",\n  \"gcc_plugin\": \"${MLBRIDGE_PRIVATE_LIBDIR}/mlbridge_gcc.so\"")
endif()

# The runner modules (src/modules), opened by the LLVM plugin from its own
# directory and by the C API from mlbridge/ beside it: both lib/mlbridge/.
mlbridge_ort_runpath(module_runpath ${MLBRIDGE_PRIVATE_LIBDIR})
foreach(module IN LISTS MLBRIDGE_RUNNER_MODULES)
  set_target_properties(${module} PROPERTIES INSTALL_RPATH "${module_runpath}")
  install(TARGETS ${module} LIBRARY DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR})
endforeach()

include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mlbridgeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mlbridgeConfig.cmake
  INSTALL_DESTINATION ${MLBRIDGE_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/mlbridgeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mlbridgeConfig.cmake
              ${PROJECT_BINARY_DIR}/mlbridgeConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MlbridgeProto.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MlbridgeAot.cmake
        DESTINATION ${MLBRIDGE_CMAKE_DIR})

# pkg-config: the C++ core (mlbridge.pc) and the C API (mlbridge-c.pc). Each
# locates the prefix relative to itself, so both work wherever the package
# is installed (cmake --install --prefix ...).
file(RELATIVE_PATH MLBRIDGE_PC_TO_PREFIX
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
foreach(pc mlbridge mlbridge-c)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
                 ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# The C++ host of LLVM's interactive protocol (core, with ONNX Runtime when built).
mlbridge_ort_runpath(host_runpath ${CMAKE_INSTALL_BINDIR})
set_target_properties(mlbridge-interactive-host PROPERTIES INSTALL_RPATH "${host_runpath}")
install(TARGETS mlbridge-interactive-host RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(MLBRIDGE_MANIFEST_INTERACTIVE_HOST
    ",\n  \"interactive_host\": \"${CMAKE_INSTALL_BINDIR}/mlbridge-interactive-host\"")

# The shipped models, AOT-compiled (cmake/MlbridgeModels.cmake).
set(MLBRIDGE_MANIFEST_MODELS "")
foreach(target IN LISTS MLBRIDGE_MODEL_TARGETS)
  install(TARGETS ${target} LIBRARY DESTINATION ${MLBRIDGE_PRIVATE_LIBDIR})
  string(REPLACE "mlbridge-model-" "model_" key ${target})
  string(REPLACE "-" "_" key ${key})
  string(APPEND MLBRIDGE_MANIFEST_MODELS
         ",\n  \"${key}\": \"${MLBRIDGE_PRIVATE_LIBDIR}/${target}.so\"")
endforeach()

# The manifest of the native half, read by `mlbridge config` (Python).
list(JOIN MLBRIDGE_COMPONENTS "\", \"" MLBRIDGE_MANIFEST_COMPONENTS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/native.json.in
               ${PROJECT_BINARY_DIR}/native.json @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/native.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/mlbridge)
