# tests/lib.sh -- shared by the bash test scripts (sourced, never run):
# the scratch folder, the daemon's pid, the pass/fail tally and its closing
# "N passed, N failed" line. Call after `cd` to the repository root.
set -u
BUILD=${BUILD:-build}
MFUD=$BUILD/mfud
MFU=$BUILD/mfu
T=$(mktemp -d)
PID=""
pass=0
fail=0
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
ok() { pass=$((pass + 1)); }
# skip "name (reason)": a check or a part not run, on a line tests/run.sh
# shows and counts; never skip silently
skip() { echo "SKIPPED: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# check "name" test-args...: one check, passed when the command succeeds
check() { local name=$1; shift; if "$@"; then ok; else bad "$name"; fi; }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}
# wait_port LOG [SECONDS]: wait (10 s unless said) for the daemon $PID to
# write its "msg=listening ... port=N" line to LOG; sets PORT (empty if it
# never did) and BASE.
wait_port() {
    PORT=""
    for _ in $(seq 1 $((${2:-10} * 20))); do
        PORT=$(sed -n 's/.*msg=listening.* port=\([0-9]*\).*/\1/p' "$1" | head -n 1)
        [ -n "$PORT" ] && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    BASE=http://127.0.0.1:$PORT
}
# stop_term [SECONDS]: SIGTERM to the daemon $PID, then wait (10 s unless
# said) for it to exit; sets RC to its exit status, 124 if it is still
# running (then PID stays set, for cleanup's kill -9; else it is emptied).
stop_term() {
    kill -TERM "$PID"
    RC=124
    for _ in $(seq 1 $((${1:-10} * 10))); do
        if ! kill -0 "$PID" 2>/dev/null; then wait "$PID"; RC=$?; break; fi
        sleep 0.1
    done
    [ "$RC" = 124 ] || PID=""
}
