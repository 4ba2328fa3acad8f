#!/bin/sh
# tests/integration/recipe.sh -- launch recipes (issue 11, item 2): runs
# tests/integration/recipe.py, which searches a few known layouts with
# build/mfu and checks each configuration's Megatron-LM argv against
# Megatron-LM's argument list, its torchtitan TOML against torchtitan's
# keys and its MaxText overrides against base.yml's (tests/data/*.txt),
# value by value. Needs python3 with tomllib (3.11+); otherwise it skips
# with a note. Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "SKIPPED: recipe (python3 missing)"
    echo "0 passed, 0 failed"
    exit 0
fi
if ! "$PY" -c 'import tomllib' >/dev/null 2>&1; then
    echo "SKIPPED: recipe (python3 has no tomllib; 3.11 or later needed)"
    echo "0 passed, 0 failed"
    exit 0
fi
if [ ! -x "$BUILD/mfu" ]; then
    echo "FAIL: $BUILD/mfu not built"
    echo "0 passed, 1 failed"
    exit 1
fi
exec "$PY" tests/integration/recipe.py "$BUILD/mfu" .
