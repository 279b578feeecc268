#!/usr/bin/env bash
# Installs the build tree $1, moves the installed package elsewhere (nothing
# may point back into the source or build tree), then builds and runs
# consumers of every component it has: with find_package(mlbridge COMPONENTS
# ...) and with pkg-config (C++ core and the C API from C), and loads the
# installed LLVM plugin into opt-19.
set -euo pipefail
BUILD="$(cd "$1" && pwd)"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "install consumer: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$TMP/staging/prefix" >/dev/null
mv "$TMP/staging/prefix" "$TMP/prefix"
PREFIX="$TMP/prefix"

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

COMPONENTS="$(python3 -c 'import json,sys; print(";".join(c for c in json.load(open(sys.argv[1]))["components"] if c != "core"))' "$PREFIX/share/mlbridge/native.json")"
FLAGS=""
SANITIZED=0
if grep -q '^MLBRIDGE_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  FLAGS="-fsanitize=address,undefined"
  SANITIZED=1
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
cmake -S "$HERE" -B "$TMP/build" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCONSUMER_COMPONENTS="$COMPONENTS" -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DCMAKE_C_FLAGS="$FLAGS" "${AOT_ARGS[@]}" >/dev/null
cmake --build "$TMP/build" >/dev/null
"$TMP/build/consumer" | grep -q '"name":"x"' || fail "core consumer"
ran="core"
if [[ -x "$TMP/build/grpc_consumer" ]]; then
  "$TMP/build/grpc_consumer" || fail "grpc consumer"; ran+=", grpc"
fi
if [[ -x "$TMP/build/onnx_consumer" && -n "$MODELS" ]]; then
  "$TMP/build/onnx_consumer" "$MODELS/mlp.onnx" "$MODELS/mlp.cases.bin" | grep -q '^onnx ok' \
    || fail "onnx consumer"; ran+=", onnx"
fi
if [[ -x "$TMP/build/c_consumer" ]]; then
  "$TMP/build/c_consumer" | grep -q '^c api ok' || fail "C consumer"; ran+=", C API"
fi
if [[ -x "$TMP/build/aot_consumer" ]]; then
  "$TMP/build/aot_consumer" "$MODELS/mlp.cases.bin" | grep -q '^aot ok' || fail "aot consumer"
  ran+=", aot"
fi

# Only the requested components' dependencies are looked up: asking for the
# C API alone must work with gRPC and protobuf made unfindable.
cmake -S "$HERE" -B "$TMP/build-c-only" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCONSUMER_COMPONENTS=c -DCMAKE_DISABLE_FIND_PACKAGE_gRPC=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" >/dev/null \
  || fail "find_package(mlbridge COMPONENTS c) looked up other components' dependencies"
# A component that does not exist is refused at configure time.
if cmake -S "$HERE" -B "$TMP/build-bogus" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
     -DCONSUMER_COMPONENTS=bogus >"$TMP/bogus.log" 2>&1; then
  fail "find_package(mlbridge COMPONENTS bogus) succeeded"
fi
grep -q "no such component" "$TMP/bogus.log" || fail "no message for an unknown component"

# pkg-config: the C++ core (the consumer chooses the standard) and the C API
# from C (mlbridge-c.pc must not carry C++ flags).
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
c++ -std=c++17 $FLAGS "$HERE/main.cpp" -o "$TMP/pc-consumer" \
  $(pkg-config --cflags --libs mlbridge) -Wl,-rpath,"$PREFIX/lib"
"$TMP/pc-consumer" | grep -q '"name":"x"' || fail "pkg-config C++ consumer"
# clang refuses C++ flags in a C compilation; a sanitized build's runtime is
# GCC's, so those are checked with cc.
CC_FOR_C=clang-19
if ((SANITIZED)) || ! command -v clang-19 >/dev/null; then CC_FOR_C=cc; fi
if [[ -f "$PREFIX/lib/pkgconfig/mlbridge-c.pc" ]]; then
  "$CC_FOR_C" -std=c99 -Werror $FLAGS "$HERE/c_main.c" -o "$TMP/pc-c-consumer" \
    $(pkg-config --cflags --libs mlbridge-c) -Wl,-rpath,"$PREFIX/lib"
  "$TMP/pc-c-consumer" | grep -q '^c api ok' || fail "pkg-config C consumer"
fi
ran+=", pkg-config"

# The installed plugin, from the path the package gives, loads into opt-19
# (not when sanitized: opt-19 has no sanitizer runtime).
if [[ -f "$TMP/build/plugin_path.txt" ]]; then
  PLUGIN="$(cat "$TMP/build/plugin_path.txt")"
  [[ "$PLUGIN" == "$PREFIX"/* && -f "$PLUGIN" ]] || fail "plugin path $PLUGIN"
  if ((!SANITIZED)) && command -v opt-19 >/dev/null; then
    printf 'define internal i32 @f(i32 %%x) {\n  %%y = add i32 %%x, 1\n  ret i32 %%y\n}\ndefine i32 @g(i32 %%x) {\n  %%r = call i32 @f(i32 %%x)\n  ret i32 %%r\n}\n' >"$TMP/in.ll"
    opt-19 -load-pass-plugin="$PLUGIN" -passes='default<Oz>' \
      -mlbridge-runner=echo:inlining_default -mlbridge-stats="$TMP/stats.jsonl" \
      "$TMP/in.ll" -S -o /dev/null
    grep -q '"runner"' "$TMP/stats.jsonl" || fail "the installed plugin kept no statistics"
    ran+=", plugin"
  fi
fi
echo "install consumer (moved prefix): $ran OK"
