# Which LLVM the LLVM and MLIR components build against (docs/llvm-versions.md).
#
#   -DMLBRIDGE_LLVM_VERSION=16    Debian's llvm-16-dev (/usr/lib/llvm-16)
#   -DMLBRIDGE_LLVM_VERSION=19    Debian's llvm-19-dev (the default)
#   -DLLVM_DIR=.../lib/cmake/llvm any build of a supported major
#
# The differences between majors are in src/llvm/compat/ and
# src/mlir/compat/; a major not in MLBRIDGE_LLVM_MAJORS is refused here.

set(MLBRIDGE_LLVM_MAJORS 16 19)
set(MLBRIDGE_LLVM_VERSION "" CACHE STRING
    "LLVM major of the LLVM and MLIR components: 16 or 19 (empty: the major of LLVM_DIR, else 19)")

# find_package(LLVM) for the chosen major; on success LLVM_FOUND, LLVM_DIR and
# MLBRIDGE_LLVM_MAJOR (in the caller's scope); else a warning and
# LLVM_FOUND false.
macro(mlbridge_find_llvm)
  if(MLBRIDGE_LLVM_VERSION)
    set(_mlbridge_want ${MLBRIDGE_LLVM_VERSION})
  elseif(LLVM_DIR)
    set(_mlbridge_want "")
  else()
    set(_mlbridge_want 19)
  endif()
  if(_mlbridge_want AND NOT _mlbridge_want IN_LIST MLBRIDGE_LLVM_MAJORS)
    message(FATAL_ERROR "MLBRIDGE_LLVM_VERSION=${_mlbridge_want}: supported "
                        "LLVM majors are ${MLBRIDGE_LLVM_MAJORS}")
  endif()
  # No version in find_package: LLVM's version file wants major.minor.
  if(_mlbridge_want)
    find_package(LLVM CONFIG QUIET
                 HINTS /usr/lib/llvm-${_mlbridge_want}/lib/cmake/llvm)
  else()
    find_package(LLVM CONFIG QUIET)
  endif()
  if(LLVM_FOUND AND _mlbridge_want AND
     NOT LLVM_VERSION_MAJOR EQUAL _mlbridge_want)
    message(WARNING "MLBRIDGE_LLVM_VERSION=${_mlbridge_want} but LLVM_DIR is "
                    "LLVM ${LLVM_PACKAGE_VERSION} (${LLVM_DIR}): building "
                    "without the LLVM integration")
    set(LLVM_FOUND FALSE)
  elseif(NOT LLVM_FOUND)
    message(WARNING "LLVM ${_mlbridge_want} not found (Debian: apt install "
                    "llvm-${_mlbridge_want}-dev): building without the LLVM "
                    "integration")
  elseif(NOT LLVM_VERSION_MAJOR IN_LIST MLBRIDGE_LLVM_MAJORS)
    message(WARNING "LLVM ${LLVM_PACKAGE_VERSION} at ${LLVM_DIR}: supported "
                    "majors are ${MLBRIDGE_LLVM_MAJORS}; building without the "
                    "LLVM integration")
    set(LLVM_FOUND FALSE)
  else()
    set(MLBRIDGE_LLVM_MAJOR ${LLVM_VERSION_MAJOR})
    message(STATUS "LLVM ${LLVM_PACKAGE_VERSION}: ${LLVM_DIR}")
  endif()
endmacro()
