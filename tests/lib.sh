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
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# check "name" test-args...: one check, passed when the command succeeds
check() { local name=$1; shift; if "$@"; then ok; else bad "$name"; fi; }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}
