#!/bin/sh
# tests/run.sh -- run every test program given as argument, then every
# tests/golden and tests/integration script; each prints a line
# "N passed, N failed". Sum them and end with the total on its own line.
# Exit non-zero if anything failed or a program crashed.
# RUN_SCRIPTS overrides the list of scripts (globs allowed), e.g. the TSan run
# (mk/sanitize.mk) skips the golden suite.
BUILD=${BUILD:-build}
total_p=0; total_f=0; status=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
run_one() {
    name=$1; shift
    "$@" >"$log" 2>&1; rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
        status=1
        echo "--- $name (exit $rc)"; cat "$log"
    fi
    printf '%-40s %s\n' "$name" "${line:-no result line (exit $rc)}"
    total_p=$((total_p + p)); total_f=$((total_f + f))
}
for t in "$@"; do run_one "$(basename "$t")" "$t"; done
for t in ${RUN_SCRIPTS:-tests/golden/run.sh tests/integration/*.sh}; do
    [ -f "$t" ] || continue
    run_one "$t" env BUILD="$BUILD" sh "$t"
done
echo "$total_p passed, $total_f failed"
exit $status
