# mlbridge_export_torch_models(DIR OUT): runs tools/export_torch_test_models.py
# (PyTorch's test policies as ONNX and TorchScript, with PyTorch's outputs) at
# configure time into DIR, with a Python that has torch (Debian's
# /usr/bin/python3 with python3-torch); OUT is ON when the models are there,
# OFF when no such Python exists. A failing export stops the configuration.
function(mlbridge_export_torch_models dir out)
  find_program(MLBRIDGE_TORCH_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
  execute_process(COMMAND ${MLBRIDGE_TORCH_PYTHON} -c "import torch"
                  RESULT_VARIABLE no_torch OUTPUT_QUIET ERROR_QUIET)
  if(NOT no_torch EQUAL 0)
    set(${out} OFF PARENT_SCOPE)
    return()
  endif()
  execute_process(
    COMMAND ${MLBRIDGE_TORCH_PYTHON}
            ${PROJECT_SOURCE_DIR}/tools/export_torch_test_models.py ${dir}
    RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tools/export_torch_test_models.py failed (${rc})")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/tools/export_torch_test_models.py)
  set(${out} ON PARENT_SCOPE)
endfunction()
