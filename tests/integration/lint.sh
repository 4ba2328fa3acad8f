#!/bin/sh
# tests/integration/lint.sh -- CI lint of the packaging and the contract with
# the npm tools the issue names: dockerfilelint on Dockerfile and
# `redocly lint` on openapi.yaml, run through `npx --yes`. Runs only where
# npm exists and its registry answers (bounded waits); otherwise it skips
# with a note and reports "0 passed, 0 failed". Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
LIMIT=${LINT_TIMEOUT:-300}
if ! command -v npx >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "skip: npm/npx not installed; dockerfilelint and redocly lint not run"
    echo "0 passed, 0 failed"
    exit 0
fi
if ! timeout 20 npm ping >/dev/null 2>&1; then
    echo "skip: npm registry unreachable; dockerfilelint and redocly lint not run"
    echo "0 passed, 0 failed"
    exit 0
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # run NAME command...
    name=$1
    shift
    if timeout "$LIMIT" "$@" >"$out" 2>&1; then
        pass=$((pass + 1))
        echo "ok: $name"
    else
        fail=$((fail + 1))
        echo "FAIL: $name"
        tail -n 40 "$out"
    fi
}
run "dockerfilelint Dockerfile" npx --yes dockerfilelint Dockerfile
run "redocly lint openapi.yaml" npx --yes @redocly/cli lint openapi.yaml
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
