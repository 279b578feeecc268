#!/usr/bin/env bash
# Runs the C tiling example (tiling.c) with every runner and checks that they
# all make the Python policy's decisions: the pipe runner asks the policy
# itself (tiling_policy.py:decide, served by `mlbridge serve`), the AOT model
# (linked in and as a module) and ONNX Runtime run its ONNX form. No nest may
# fall back to the heuristic, the decisions must not all be equal, and a
# runner that cannot be made must leave the heuristic's tiles.
#
#   check_tiling.sh EXAMPLE PYTHON POLICY_FILE MODULE [ONNX_MODEL]
set -euo pipefail
EXAMPLE="$1" PYTHON="$2" POLICY="$3" MODULE="$4" ONNX="${5:-}"
TMP="$(mktemp -d)"
SERVER=""
cleanup() {
  if [[ -n "$SERVER" ]]; then kill -9 "$SERVER" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "check_tiling: $*" >&2; exit 1; }

# The Python policy over pipes (mlgo protocol, one session).
mkfifo -m 600 "$TMP/channel.in" "$TMP/channel.out"
"$PYTHON" -m mlbridge serve --pipe "$TMP/channel" --policy "$POLICY:decide" \
  --timeout 30 &
SERVER=$!
"$EXAMPLE" pipe "$TMP/channel" > "$TMP/pipe.txt"
wait "$SERVER" || fail "the Python policy host failed"
SERVER=""
cat "$TMP/pipe.txt"
if grep -q fallback "$TMP/pipe.txt"; then fail "pipe: a nest fell back"; fi
[[ "$(cut -d' ' -f3 "$TMP/pipe.txt" | sort -u | wc -l)" -ge 3 ]] ||
  fail "the policy chose fewer than 3 different tiles"

# The same decisions in-process.
check_same() {
  local name="$1"; shift
  "$EXAMPLE" "$@" > "$TMP/$name.txt"
  diff -u "$TMP/pipe.txt" "$TMP/$name.txt" || fail "$name differs from the policy"
}
check_same aot aot
check_same aot-module aot-module "$MODULE"
if [[ -n "$ONNX" ]]; then check_same onnx onnx "$ONNX"; fi

# No model: every nest gets the heuristic's tile, and the run still succeeds.
"$EXAMPLE" aot-module "$TMP/missing.so" > "$TMP/none.txt"
[[ "$(grep -c 'fallback: ' "$TMP/none.txt")" -eq "$(wc -l < "$TMP/pipe.txt")" ]] ||
  fail "a missing model did not fall back on every nest"
! cmp -s <(cut -d' ' -f1-3 "$TMP/none.txt") <(cut -d' ' -f1-3 "$TMP/pipe.txt") ||
  fail "the heuristic and the policy agree everywhere: the test shows nothing"
echo "check_tiling: pipe, aot, aot-module${ONNX:+, onnx} agree; fallback works"
