#!/usr/bin/env bash
# Installs the build tree $1, moves the installed package elsewhere (nothing
# may point back into the source or build tree), then builds and runs
# consumers of every component it has: with find_package(mlbridge COMPONENTS
# ...) and with pkg-config (C++ core and the C API from C), an MLIR tool on
# mlbridge_mlir, and loads the installed LLVM plugin into opt-N (the
# build's LLVM major). Where mount namespaces are available
# (root), everything is built and run a second time with the source tree
# hidden (an empty tmpfs mounted over it).
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
fail() { echo "install consumer: $*" >&2; exit 1; }
if [[ "${MLBRIDGE_CONSUMER_HIDDEN:-}" == 1 ]]; then
  # The second pass (below): the first pass's directory and prefix.
  ROOT="$MLBRIDGE_CONSUMER_ROOT"
  TMP="$MLBRIDGE_CONSUMER_TMP"
  PREFIX="$TMP/prefix"
else
  HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  ROOT="$(cd "$HERE/../.." && pwd)"
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
  cmake --install "$BUILD" --prefix "$TMP/staging/prefix" >/dev/null
  cp -r "$HERE" "$TMP/src" # the consumer's own sources, outside the source tree
  mv "$TMP/staging/prefix" "$TMP/prefix"
  PREFIX="$TMP/prefix"
fi

# Nothing installed refers to the source tree, the build tree or the staging
# prefix: text files (CMake, pkg-config, manifest) and RUNPATHs.
for where in "$ROOT" "$BUILD" "$TMP/staging"; do
  if grep -rlI --exclude='*.h' -- "$where" "$PREFIX" >/dev/null; then
    fail "installed files refer to $where: $(grep -rlI --exclude='*.h' -- "$where" "$PREFIX" | head -3)"
  fi
done
while IFS= read -r lib; do
  runpath="$(readelf -d "$lib" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p')"
  case "$runpath" in
    *"$ROOT"*|*"$BUILD"*) fail "$lib has RUNPATH $runpath" ;;
  esac
done < <(find "$PREFIX" -name '*.so*' -type f)

# The components: native.json's and those of the LLVM major's parts
# (share/mlbridge/llvmN.json, one per major installed).
COMPONENTS="$(python3 -c 'import glob, json, sys; names = [c for f in [sys.argv[1]] + sorted(glob.glob(sys.argv[2])) for c in json.load(open(f))["components"]]; print(";".join(c for c in dict.fromkeys(names) if c != "core"))' "$PREFIX/share/mlbridge/native.json" "$PREFIX/share/mlbridge/llvm*.json")"
LLVM_MAJOR="$(python3 -c 'import glob, json, sys; print(max((json.load(open(f))["llvm_major"] for f in glob.glob(sys.argv[1])), default=""))' "$PREFIX/share/mlbridge/llvm*.json")"
FLAGS=""
SANITIZED=0
if grep -q '^MLBRIDGE_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  FLAGS="-fsanitize=address,undefined"
  SANITIZED=1
fi
# clang refuses C++ flags in a C compilation; a sanitized build's runtime is
# GCC's, so those are checked with cc.
CC_FOR_C=clang-19
if ((SANITIZED)) || ! command -v clang-19 >/dev/null; then CC_FOR_C=cc; fi

# consume OUT [CMAKE_ARGS...]: configures and builds the consumer sources
# ($TMP/src) into OUT against the installed package, runs every consumer and
# the pkg-config ones, loads the plugin; sets RAN to what ran.
consume() {
  local out="$1"
  shift
  cmake -S "$TMP/src" -B "$out" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCONSUMER_COMPONENTS="$COMPONENTS" -DCMAKE_CXX_FLAGS="$FLAGS" \
    -DCMAKE_C_FLAGS="$FLAGS" "$@" >/dev/null
  cmake --build "$out" >/dev/null
  "$out/consumer" | grep -q '"name":"x"' || fail "core consumer"
  RAN="core"
  if [[ -x "$out/grpc_consumer" ]]; then
    "$out/grpc_consumer" || fail "grpc consumer"
    RAN+=", grpc"
  fi
  if [[ -x "$out/onnx_consumer" && -n "$MODELS" ]]; then
    "$out/onnx_consumer" "$MODELS/mlp.onnx" "$MODELS/mlp.cases.bin" | grep -q '^onnx ok' \
      || fail "onnx consumer"
    RAN+=", onnx"
  fi
  if [[ -x "$out/mlir_consumer" ]]; then
    "$out/mlir_consumer" | grep -q '^mlir ok' || fail "mlir consumer"
    RAN+=", mlir"
  fi
  if [[ -x "$out/llvm_consumer" ]]; then
    "$out/llvm_consumer" | grep -qx "llvm ok $LLVM_MAJOR" || fail "LLVM consumer"
    RAN+=", llvm"
  fi
  if [[ -x "$out/c_consumer" ]]; then
    "$out/c_consumer" | grep -q '^c api ok' || fail "C consumer"
    RAN+=", C API"
  fi
  # The AOT consumer is built once, with mlbridge-aot (the first pass).
  if [[ -x "$TMP/build/aot_consumer" ]]; then
    "$TMP/build/aot_consumer" "$MODELS/mlp.cases.bin" | grep -q '^aot ok' || fail "aot consumer"
    RAN+=", aot"
  fi

  # pkg-config: the C++ core (the consumer chooses the standard) and the C
  # API from C (mlbridge-c.pc must not carry C++ flags).
  export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
  c++ -std=c++17 $FLAGS "$TMP/src/main.cpp" -o "$out/pc-consumer" \
    $(pkg-config --cflags --libs mlbridge) -Wl,-rpath,"$PREFIX/lib"
  "$out/pc-consumer" | grep -q '"name":"x"' || fail "pkg-config C++ consumer"
  if [[ -f "$PREFIX/lib/pkgconfig/mlbridge-c.pc" ]]; then
    "$CC_FOR_C" -std=c99 -Werror $FLAGS "$TMP/src/c_main.c" -o "$out/pc-c-consumer" \
      $(pkg-config --cflags --libs mlbridge-c) -Wl,-rpath,"$PREFIX/lib"
    "$out/pc-c-consumer" | grep -q '^c api ok' || fail "pkg-config C consumer"
  fi
  RAN+=", pkg-config"

  # The installed plugin, from the path the package gives, loads into opt-N
  # (not when sanitized: opt has no sanitizer runtime).
  if [[ -f "$out/plugin_path.txt" ]]; then
    local plugin
    plugin="$(cat "$out/plugin_path.txt")"
    [[ "$plugin" == "$PREFIX"/* && -f "$plugin" ]] || fail "plugin path $plugin"
    if ((!SANITIZED)) && command -v "opt-$LLVM_MAJOR" >/dev/null; then
      printf 'define internal i32 @f(i32 %%x) {\n  %%y = add i32 %%x, 1\n  ret i32 %%y\n}\ndefine i32 @g(i32 %%x) {\n  %%r = call i32 @f(i32 %%x)\n  ret i32 %%r\n}\n' >"$out/in.ll"
      rm -f "$out/stats.jsonl"
      "opt-$LLVM_MAJOR" -load-pass-plugin="$plugin" -passes='default<Oz>' \
        -mlbridge-runner=echo:inlining_default -mlbridge-stats="$out/stats.jsonl" \
        "$out/in.ll" -S -o /dev/null
      grep -q '"runner"' "$out/stats.jsonl" || fail "the installed plugin kept no statistics"
      RAN+=", plugin"
    fi
  fi
}

# Second pass, in a private mount namespace: the source tree (with the build
# tree and the venv) hidden under an empty tmpfs.
if [[ "${MLBRIDGE_CONSUMER_HIDDEN:-}" == 1 ]]; then
  MODELS="${MODELS_DIR:-}"
  mount -t tmpfs none "$ROOT"
  [[ "$BUILD" == "$ROOT"/* ]] || mount -t tmpfs none "$BUILD"
  [[ -z "$(ls -A "$ROOT")" ]] || fail "the source tree is still visible"
  consume "$TMP/build-hidden"
  echo "$RAN"
  exit 0
fi

# With the source tree's Python package, also compile an ONNX model at build
# time through the installed mlbridge_add_aot_model(), and run it in-process.
AOT_ARGS=()
MODELS=""
if [[ -x "$ROOT/.venv/bin/mlbridge-aot" ]]; then
  MODELS="$TMP/models"
  "$ROOT/.venv/bin/python" "$ROOT/tools/make_onnx_test_models.py" "$MODELS" >/dev/null
  AOT_ARGS=(-DAOT_MODEL="$MODELS/mlp.onnx"
            -DMLBRIDGE_AOT_COMMAND="$ROOT/.venv/bin/mlbridge-aot")
fi
consume "$TMP/build" "${AOT_ARGS[@]}"
echo "install consumer (moved prefix): $RAN OK"

# Only the requested components' dependencies are looked up: asking for the
# C API alone must work with gRPC and protobuf made unfindable.
cmake -S "$TMP/src" -B "$TMP/build-c-only" -G Ninja --no-warn-unused-cli -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCONSUMER_COMPONENTS=c -DCMAKE_DISABLE_FIND_PACKAGE_gRPC=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" >/dev/null \
  || fail "find_package(mlbridge COMPONENTS c) looked up other components' dependencies"
# A component that does not exist is refused at configure time.
if cmake -S "$TMP/src" -B "$TMP/build-bogus" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
     -DCONSUMER_COMPONENTS=bogus >"$TMP/bogus.log" 2>&1; then
  fail "find_package(mlbridge COMPONENTS bogus) succeeded"
fi
grep -q "no such component" "$TMP/bogus.log" || fail "no message for an unknown component"
echo "install consumer: find_package(mlbridge COMPONENTS c) needs no gRPC/LLVM; unknown components refused"

# The whole pass again with the source tree hidden, where that is possible.
if unshare -m true 2>/dev/null; then
  # LeakSanitizer's suppressions live in the source tree: a copy.
  cp "$ROOT/tests/lsan.supp" "$TMP/lsan.supp"
  hidden="$(LSAN_OPTIONS="suppressions=$TMP/lsan.supp" MLBRIDGE_CONSUMER_HIDDEN=1 MODELS_DIR="$MODELS" MLBRIDGE_CONSUMER_TMP="$TMP" \
    MLBRIDGE_CONSUMER_ROOT="$ROOT" unshare -m bash "$TMP/src/check.sh" "$BUILD")" \
    || fail "the pass with the source tree hidden failed"
  echo "install consumer (source tree hidden): $hidden OK"
else
  echo "install consumer: no mount namespaces here, the pass with the source tree hidden is skipped"
fi
