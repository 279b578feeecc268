#!/usr/bin/env bash
# Installs the build tree $1 into a temporary prefix, then builds and runs a
# consumer with find_package(mlbridge) and with pkg-config.
set -euo pipefail
BUILD="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
FLAGS=""
if grep -q '^MLBRIDGE_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  FLAGS="-fsanitize=address,undefined"
fi
# With the source tree's Python package, also compile an ONNX model at build
# time through the installed mlbridge_add_aot_model().
ROOT="$HERE/../.."
AOT_ARGS=()
if [[ -x "$ROOT/.venv/bin/mlbridge-aot" ]]; then
  "$ROOT/.venv/bin/python" "$ROOT/tools/make_onnx_test_models.py" "$TMP/models"
  AOT_ARGS=(-DAOT_MODEL="$TMP/models/mlp.onnx"
            -DMLBRIDGE_AOT_COMMAND="$ROOT/.venv/bin/mlbridge-aot")
fi
cmake -S "$HERE" -B "$TMP/build" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" \
  -DCMAKE_CXX_FLAGS="$FLAGS" "${AOT_ARGS[@]}" >/dev/null
cmake --build "$TMP/build" >/dev/null
"$TMP/build/consumer" | grep -q '"name":"x"'
if [[ -x "$TMP/build/grpc_consumer" ]]; then "$TMP/build/grpc_consumer"; fi
if ((${#AOT_ARGS[@]})); then
  "$TMP/build/aot_consumer" "$TMP/models/mlp.cases.bin" | grep -q '^aot ok'
fi
PKG_CONFIG_PATH="$TMP/prefix/lib/pkgconfig" c++ $FLAGS "$HERE/main.cpp" -o "$TMP/pc-consumer" \
  $(PKG_CONFIG_PATH="$TMP/prefix/lib/pkgconfig" pkg-config --cflags --libs mlbridge) \
  -Wl,-rpath,"$TMP/prefix/lib"
"$TMP/pc-consumer" | grep -q '"name":"x"'
echo "install consumer: find_package, pkg-config${AOT_ARGS:+ and mlbridge_add_aot_model} OK"
