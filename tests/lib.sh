# tests/lib.sh -- shared by the bash test scripts (sourced, never run):
# the scratch folder, the daemon's pid, the pass/fail tally and its closing
# "N passed, N failed" line; the daemon's port and its stop; HTTP requests
# recorded for the contract check. Call after `cd` to the repository root.
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
# check_sh "name" 'condition' args...: one check of a shell condition over
# $1.. (the args), e.g. '[ "$1" = 422 ] && [ "$2" = /runs ]': `check NAME
# [ a ] && [ b ]` would check only a (the shell ends check's arguments at &&)
check_sh() { local name=$1 cond=$2; shift 2; if bash -c "$cond" _ "$@"; then ok; else bad "$name"; fi; }
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
# add_checker NAME LINES command...: run a checker that ends with the line
# "N passed, N failed" and add its counts to this script's, showing the
# first LINES of its other lines; sets LINE to its last line. No such line:
# one failure ("NAME did not run") and the tail of its output shown.
add_checker() {
    local name=$1 lines=$2 out p f
    shift 2
    out=$("$@" 2>&1)
    echo "$out" | grep -v '^[0-9]* passed' | head -n "$lines"
    LINE=$(echo "$out" | tail -n 1)
    p=$(echo "$LINE" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    f=$(echo "$LINE" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    if [ -z "$p" ]; then bad "$name did not run"; echo "$out" | tail -n 5; else pass=$((pass + p)); fail=$((fail + f)); fi
}
# req METHOD PATH [curl args...]: one request to the daemon at $BASE; sets
# CODE, BODY and HDR (files numbered by N: the body, the headers) and adds
# the response to $REC (METHOD PATH CODE CONTENT-TYPE HDR BODY, a line, tab
# separated), which tests/integration/oas_check.py and
# tools/lint/schema_check.cjs check against openapi.yaml.
N=0
REC=$T/responses.tsv
req() {
    local method=$1 path=$2; shift 2
    N=$((N + 1))
    BODY=$T/b.$N
    HDR=$T/h.$N
    : >"$BODY"
    CODE=$(curl -s -X "$method" -o "$BODY" -D "$HDR" -w '%{http_code}' --max-time 60 "$@" "$BASE$path")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$method" "$path" "$CODE" "$(hdr Content-Type)" "$HDR" "$BODY" >>"$REC"
}
# hdr NAME: the value of header NAME in $HDR (the last response's headers)
hdr() { grep -i "^$1:" "$HDR" | head -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }
# json FILE EXPR: jq-like, prints the Python expression EXPR of d, the JSON in FILE
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
