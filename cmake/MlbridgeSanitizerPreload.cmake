# mlbridge_sanitizer_preload(OUT): in a sanitizer build, the runtimes to
# LD_PRELOAD into an uninstrumented compiler (opt-19, clang-19, cc1) that
# loads one of this build's plugins, ':'-separated; empty otherwise.
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
