#!/bin/bash
# tests/ci/valgrind.sh -- valgrind memcheck (`make valgrind`, issue 6 item 1):
#  1. every unit test binary given as argument runs under memcheck;
#  2. a short daemon session: $BUILD/mfud under memcheck on a temporary DB and
#     an ephemeral port; a few requests (health, presets, metrics, a roofline,
#     a small search that completes, its result as JSON and CSV, error
#     answers), then SIGTERM.
# Each run must pass its own checks, exit as it should, and have 0 memcheck
# errors and 0 definitely/indirectly lost blocks (--errors-for-leak-kinds, so
# leaks count as errors and fail --error-exitcode). "Possibly lost" and "still
# reachable" are not errors: libuv's pool threads are never joined by design
# (libuv has no API to stop its pool), so what they hold at exit is reachable.
# Ends with "N passed, N failed"; exits non-zero on any failure.
# Usage: [BUILD=dir] bash tests/ci/valgrind.sh build/tests/test_*
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
ok() { pass=$((pass + 1)); echo "ok: $*"; } # lib.sh's, but saying what passed

if ! command -v valgrind >/dev/null 2>&1; then
    echo "FAIL: valgrind is not installed (docker/deps.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
fi
VG=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --num-callers=30
    --track-fds=no --child-silent-after-fork=yes)
# summary LOGFILE -> "errors=N definite=N indirect=N"
summary() {
    local e d i
    e=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$1" | tail -n 1 | tr -d ,)
    d=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$1" | tail -n 1 | tr -d ,)
    i=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$1" | tail -n 1 | tr -d ,)
    echo "errors=${e:-?} definite=${d:-0} indirect=${i:-0}"
}
clean() { # clean LOGFILE: 0 errors and 0 bytes definitely/indirectly lost
    grep -q 'ERROR SUMMARY: 0 errors' "$1" &&
        ! grep -Eq '(definitely|indirectly) lost: [1-9]' "$1"
}
show() { echo "--- memcheck log $1 (first 120 lines)"; head -n 120 "$1"; }
# verdict WHAT RC LOGFILE OUTFILE LINES: one check, passed when the run (begun
# at $t0) exited 0 with a clean memcheck log; else the last LINES lines of
# its output and the log are shown
verdict() {
    local s
    s=$(summary "$3")
    if [ "$2" -eq 0 ] && clean "$3"; then
        ok "$1 (exit 0); $s ($(($(date +%s) - t0)) s)"
    else
        bad "$1 (exit $2); $s"
        tail -n "$5" "$4"
        show "$3"
    fi
}

# ---- 1. unit tests ----------------------------------------------------------
# test_search's full workload is ~40x slower under memcheck; MFU_TEST_QUICK asks
# the tests that read it for a smaller (still covering) workload.
for t in "$@"; do
    name=$(basename "$t")
    log=$T/$name.vg
    t0=$(date +%s)
    MFU_TEST_QUICK=1 "${VG[@]}" --log-file="$log" "$t" >"$T/$name.out" 2>&1
    rc=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$T/$name.out" | tail -n 1)
    verdict "$name under memcheck: ${line:-no result line}" "$rc" "$log" "$T/$name.out" 30
done

# ---- 2. a short daemon session ----------------------------------------------
if [ ! -x "$MFUD" ]; then
    bad "$MFUD not built"
    echo "$pass passed, $fail failed"
    exit 1
fi
DLOG=$T/mfud.log
VGLOG=$T/mfud.vg
t0=$(date +%s)
"${VG[@]}" --log-file="$VGLOG" "$MFUD" --port 0 --db "$T/mfud.db" --workers 2 --http-threads 2 \
    --log-level info 2>"$DLOG" &
PID=$!
wait_port "$DLOG" 60 # memcheck starts slowly
if [ -z "$PORT" ]; then
    bad "mfud under memcheck did not start"
    cat "$DLOG"
    show "$VGLOG"
    echo "$pass passed, $fail failed"
    exit 1
fi
BASE=http://127.0.0.1:$PORT
code() { # code EXPECTED METHOD PATH [curl args...]: request, check the status
    local want=$1 method=$2 path=$3 got
    shift 3
    got=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 120 -X "$method" "$@" "$BASE$path")
    if [ "$got" = "$want" ]; then ok "$method $path -> $got"; else bad "$method $path -> $got (want $want)"; head -c 600 "$T/body"; echo; fi
}
J=(-H 'Content-Type: application/json')
SMALL='{"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 8, "training": {"seq_len": 4096, "global_batch_tokens": 1048576}, "search": {"top_k": 3}}'

code 200 GET /healthz
code 200 GET /readyz
code 200 GET /presets/models
code 200 GET /presets/hardware
code 200 GET /openapi.yaml
code 200 POST /roofline "${J[@]}" -d "$SMALL"
poll() { # poll ID: wait until the job is done (or failed); sets ST
    ST=""
    for _ in $(seq 1 600); do
        ST=$(curl -s --max-time 60 "$BASE/results/$1" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p' | head -n 1)
        [ "$ST" = done ] || [ "$ST" = failed ] && return
        sleep 0.2
    done
}
getid() { sed -n 's/.*"id":"\([0-9a-f]\{64\}\)".*/\1/p' "$T/body" | head -n 1; }
# the search, answered synchronously when it finishes within the wait (200),
# else 202 and polled; then read back as JSON, a slice and CSV
got=$(curl -s -o "$T/body" -w '%{http_code}' --max-time 120 "${J[@]}" -H 'Prefer: wait=60' -d "$SMALL" "$BASE/search")
ID=$(getid)
poll "$ID"
if [ -n "$ID" ] && [ "$ST" = done ]; then ok "POST /search -> $got, done ($ID)"; else bad "POST /search -> $got, status $ST"; head -c 600 "$T/body"; echo; fi
code 200 GET "/results/$ID"
code 200 GET "/results/$ID?top_k=1"
code 200 GET "/results/$ID" -H 'Accept: text/csv'
code 200 POST /search "${J[@]}" -d "$SMALL"   # cache hit
code 200 GET /results
# an async job that goes through the queue and the pool, polled until done
code 202 POST /search "${J[@]}" -H 'Prefer: respond-async' -d "${SMALL/\"devices\": 8/\"devices\": 16}"
poll "$(getid)"
if [ "$ST" = done ]; then ok "async job done"; else bad "async job: status $ST"; fi
code 400 POST /search "${J[@]}" -d '{"model": '
code 422 POST /search "${J[@]}" -d '{"model": {"preset": "no-such"}, "hardware": {"preset": "h100-sxm"}, "devices": 8}'
code 415 POST /search -H 'Content-Type: text/plain' -d "$SMALL"
code 404 GET /no/such/route
code 405 DELETE /search
code 200 GET /metrics

stop_term 60
[ "$RC" = 124 ] && kill -9 "$PID" 2>/dev/null
PID=""
verdict "mfud session under memcheck" "$RC" "$VGLOG" "$DLOG" 20
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
