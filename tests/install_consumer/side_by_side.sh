#!/usr/bin/env bash
# Two LLVM majors in one prefix (docs/llvm-versions.md): build tree $1
# installed whole, build tree $2's parts for another LLVM major installed
# beside them as their own component. For each major, a consumer of
# find_package(mlbridge COMPONENTS llvm) with MLBRIDGE_LLVM_VERSION=N links
# that major's library and runs it, and gets that major's plugin, which loads
# into opt-N; `mlbridge config` (the venv's, $3) names both.
set -euo pipefail
MAIN="$(cd "$1" && pwd)"
OTHER="$(cd "$2" && pwd)"
MLBRIDGE="$3"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() { echo "side by side: $*" >&2; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
PREFIX="$TMP/prefix"
major_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["llvm_major"])' "$1"; }
cmake --install "$MAIN" --prefix "$PREFIX" >/dev/null
main_major="$(major_of "$(ls "$MAIN"/llvm[0-9]*.json)")"
other_major="$(sed -n 's/^MLBRIDGE_LLVM_VERSION:STRING=//p' "$OTHER/CMakeCache.txt")"
[[ -n "$other_major" && "$other_major" != "$main_major" ]] || fail "no second major in $OTHER"
cmake --install "$OTHER" --component "llvm$other_major" --prefix "$PREFIX" >/dev/null

majors="$(MLBRIDGE_PREFIX="$PREFIX" "$MLBRIDGE" config --llvm-majors)"
want="$(printf '%s\n' "$main_major" "$other_major" | sort -rn | tr '\n' ' ' | sed 's/ $//')"
[[ "$majors" == "$want" ]] || fail "mlbridge config --llvm-majors: '$majors', not '$want'"

printf 'define internal i32 @f(i32 %%x) {\n  %%y = add i32 %%x, 1\n  ret i32 %%y\n}\ndefine i32 @g(i32 %%x) {\n  %%r = call i32 @f(i32 %%x)\n  ret i32 %%r\n}\n' >"$TMP/in.ll"
for major in "$main_major" "$other_major"; do
  out="$TMP/consumer-$major"
  cmake -S "$HERE" -B "$out" -G Ninja -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCONSUMER_COMPONENTS=llvm -DMLBRIDGE_LLVM_VERSION="$major" >/dev/null
  cmake --build "$out" >/dev/null
  [[ "$(cat "$out/llvm_major.txt")" == "$major" ]] || fail "the package chose LLVM $(cat "$out/llvm_major.txt"), not $major"
  "$out/llvm_consumer" | grep -qx "llvm ok $major" || fail "the LLVM $major consumer"
  plugin="$(cat "$out/plugin_path.txt")"
  [[ "$plugin" == "$PREFIX/lib/mlbridge/mlbridge-inline-advisor-llvm$major.so" ]] || fail "plugin $plugin"
  [[ "$(MLBRIDGE_PREFIX="$PREFIX" "$MLBRIDGE" config --plugin --llvm "$major")" == "$plugin" ]] \
    || fail "mlbridge config --plugin --llvm $major"
  "opt-$major" -load-pass-plugin="$plugin" -passes='default<Oz>' \
    -mlbridge-runner=echo:inlining_default -mlbridge-stats="$out/stats.jsonl" \
    "$TMP/in.ll" -S -o /dev/null
  grep -q '"decisions":1' "$out/stats.jsonl" || fail "the LLVM $major plugin decided nothing"
done
echo "side by side: LLVM $main_major and $other_major in one prefix: consumers, plugins, mlbridge config OK"
