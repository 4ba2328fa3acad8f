#!/bin/sh
# tests/run.sh -- run every test program given as argument, then every
# tests/golden and tests/integration script; each prints a line
# "N passed, N failed". Sum them and end with the total on its own line:
# "N passed, N failed, N skipped" (the "N passed, N failed" prefix is what
# other tooling greps).
#
# Skips are never silent: a test that cannot run part or all of its checks
# (a tool not installed, no network) prints one line per skipped part,
#   SKIPPED: name (reason)
# which is shown here and counted. A script that reports "0 passed, 0 failed"
# without such a line ran nothing: it is shown and counted as skipped too,
# with its first line of output as the reason.
# A line a test starts with "REPORT: " (figures a reader of the run should
# see, e.g. the replicas test's counts) is shown under its result line.
# Each result line ends with the seconds its program took (where CI's time
# goes: .ci/run must stay under 20 minutes).
# Exit non-zero if anything failed, a program crashed or printed no result line.
# RUN_SCRIPTS overrides the list of scripts (globs allowed), e.g. the TSan run
# (mk/sanitize.mk) skips the golden suite.
BUILD=${BUILD:-build}
total_p=0; total_f=0; total_s=0; status=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
run_one() {
    name=$1; shift
    t0=$(date +%s)
    "$@" >"$log" 2>&1; rc=$?
    secs=$(($(date +%s) - t0))
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
    # a crash, or no result line at all, is a failure
    if { [ "$rc" -ne 0 ] || [ -z "$line" ]; } && [ "$f" -eq 0 ]; then f=1; fi
    if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
        status=1
        echo "--- $name (exit $rc)"; cat "$log"
    fi
    s=$(grep -c '^SKIPPED: ' "$log")
    if [ "$s" -eq 0 ] && [ -n "$line" ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        why=$(grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$log" | head -n 1)
        echo "SKIPPED: $name (ran no checks${why:+: $why})" >>"$log"
        s=1
    fi
    printf '%-40s %s (%d s)\n' "$name" "${line:-no result line (exit $rc)}" "$secs"
    grep '^SKIPPED: ' "$log"
    grep '^REPORT: ' "$log"
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
}
for t in "$@"; do run_one "$(basename "$t")" "$t"; done
for t in ${RUN_SCRIPTS:-tests/golden/run.sh tests/integration/*.sh}; do
    [ -f "$t" ] || continue
    run_one "$t" env BUILD="$BUILD" sh "$t"
done
echo "$total_p passed, $total_f failed, $total_s skipped"
exit $status
