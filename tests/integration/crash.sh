#!/bin/bash
# tests/integration/crash.sh -- crash safety (issue 6 item 4). Rounds of:
# a burst of distinct asynchronous searches against build/mfud (one worker,
# every job held by MFUD_TEST_JOB_DELAY_MS so most stay queued), kill -9 at a
# random moment during or after the burst, `PRAGMA integrity_check` on the
# file the dead daemon left, restart on the same database. Then, with the
# delay off, every job that was acknowledged (202, or 200) must complete,
# and every stored result must equal a fresh computation of the same request
# by `build/mfu search`.
#
# Compared: the whole result document, except search.elapsed_s (wall time
# of the search, different on every run). Strings, integers, booleans, keys
# and array lengths must be identical; reals to a relative 1e-14, because
# `mfu` prints reals with 15 significant digits (JSON_REAL_PRECISION(15) in
# cli/mfu.c) while the daemon stores jansson's default 17 -- the values
# are the same doubles, only the printing differs. (None of these requests
# can hit a search time budget, so `truncated` and the counts are
# deterministic too.)
#
# Ends with "N passed, N failed"; exits non-zero on any failure. < 60 s.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
ROUNDS=${CRASH_ROUNDS:-4}
BURST=${CRASH_BURST:-6}
for b in "$MFUD" "$MFU"; do
    if [ ! -x "$b" ]; then echo "FAIL: $b not built"; fail=1; finish; fi
done
if ! command -v sqlite3 >/dev/null 2>&1; then
    skip "crash.sh (sqlite3 not installed: Debian package sqlite3)"
    finish
fi

DB=$T/var/mfud.db
LOG=$T/mfud.log
start() { # start [args...]; sets PID, BASE
    : >"$LOG.cur"
    "$MFUD" --port 0 --db "$DB" --log-level info --workers 1 "$@" 2>"$LOG.cur" &
    PID=$!
    wait_port "$LOG.cur"
    cat "$LOG.cur" >>"$LOG"
    if [ -z "$PORT" ]; then
        bad "daemon did not start"
        tail -n 20 "$LOG.cur"
        finish
    fi
}
kill9() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""; }

MODELS=(llama3-8b mistral-7b qwen3-8b gemma-7b)
DEVS=(8 16 32 64 128)
body_of() { # body_of K -> a distinct request for each K
    local k=$1
    local m=${MODELS[$((k % 4))]} d=${DEVS[$(((k / 4) % 5))]} s=$((2048 << ((k / 20) % 2)))
    printf '{"model": {"preset": "%s"}, "hardware": {"preset": "h100-sxm"}, "devices": %d, "training": {"seq_len": %d, "global_batch_tokens": 1048576}, "search": {"top_k": 5}}' "$m" "$d" "$s"
}

t0=$(date +%s)
k=0
: >"$T/accepted"
for round in $(seq 1 "$ROUNDS"); do
    MFUD_TEST_JOB_DELAY_MS=400 start
    # The burst: BURST distinct searches at once, each answered 202 at once.
    cpids=""
    for i in $(seq 1 "$BURST"); do
        body_of $k >"$T/req.$k"
        (
            code=$(curl -s -o "$T/resp.$k" -w '%{http_code}' --max-time 10 \
                -H 'Content-Type: application/json' -H 'Prefer: respond-async' \
                --data-binary @"$T/req.$k" "$BASE/search")
            echo "$code" >"$T/code.$k"
        ) &
        cpids="$cpids $!"
        k=$((k + 1))
    done
    # Kill during the burst on odd rounds, after it on even ones.
    if [ $((round % 2)) -eq 1 ]; then sleep "0.$((RANDOM % 3 + 1))"; else wait $cpids; sleep 0.$((RANDOM % 5 + 1)); fi
    kill9
    wait $cpids
    check "round $round: integrity_check after kill -9" \
        [ "$(sqlite3 "$DB" 'PRAGMA integrity_check' 2>&1)" = ok ]
done
n_sent=$k
n_acc=0
for j in $(seq 0 $((n_sent - 1))); do
    c=$(cat "$T/code.$j" 2>/dev/null)
    case "$c" in
    200 | 202)
        id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/resp.$j" 2>/dev/null)
        if [ -n "$id" ]; then echo "$j $id" >>"$T/accepted"; n_acc=$((n_acc + 1)); else bad "request $j: $c without an id"; fi
        ;;
    000 | "") ;; # the connection died with the daemon: nothing was promised
    *) bad "request $j answered $c" ;;
    esac
done
echo "sent $n_sent searches in $ROUNDS rounds, $n_acc acknowledged (202/200) before the kills"
check "some searches were acknowledged" [ "$n_acc" -gt 0 ]

# Restart without the delay: every acknowledged job must complete.
start --workers 2
check "restart re-queued interrupted jobs" grep -q 'msg=requeued jobs=' "$LOG.cur"
deadline=$(($(date +%s) + 40))
pending=$(cut -d' ' -f2 "$T/accepted")
while [ -n "$pending" ] && [ "$(date +%s)" -lt "$deadline" ]; do
    left=""
    for id in $pending; do
        curl -s -o "$T/res.$id" --max-time 10 "$BASE/results/$id"
        st=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$T/res.$id" 2>/dev/null)
        [ "$st" = done ] || left="$left $id"
    done
    pending=$left
    [ -n "$pending" ] && sleep 0.2
done
for id in $pending; do bad "job ${id:0:12} did not complete: $(head -c 300 "$T/res.$id")"; done
n_left=$(echo $pending | wc -w)
check "every acknowledged job completed ($((n_acc - n_left)) of $n_acc)" [ "$n_left" -eq 0 ]

# Every stored result equals a fresh computation.
while read -r j id; do
    [ -f "$T/res.$id" ] || continue
    if ! "$MFU" search "$T/req.$j" >"$T/fresh.$j" 2>"$T/fresh.err"; then
        bad "mfu search failed on request $j: $(head -c 200 "$T/fresh.err")"
        continue
    fi
    if python3 - "$T/res.$id" "$T/fresh.$j" <<'PY'; then ok; else bad "request $j (${id:0:12}): stored result differs from build/mfu search"; fi
import json, sys
stored = json.load(open(sys.argv[1]))
fresh = json.load(open(sys.argv[2]))
if stored.get("status") != "done":
    sys.exit(1)
s = stored["result"]
for d in (s, fresh):
    d.get("search", {}).pop("elapsed_s", None)
bad = []
def diff(a, b, path=""):
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        # the CLI prints 15 significant digits, the daemon stores 17
        if abs(a - b) > 1e-14 * max(abs(a), abs(b)):
            bad.append(f"  {path}: stored {a!r} fresh {b!r}")
        return
    if type(a) != type(b) or not isinstance(a, (dict, list)):
        if a != b:
            bad.append(f"  {path or '/'}: stored {json.dumps(a)[:80]} fresh {json.dumps(b)[:80]}")
        return
    if isinstance(a, dict):
        if set(a) != set(b):
            bad.append(f"  {path or '/'}: keys differ: {sorted(set(a) ^ set(b))}")
        keys = set(a) & set(b)
    else:
        if len(a) != len(b):
            bad.append(f"  {path or '/'}: length {len(a)} vs {len(b)}")
        keys = range(min(len(a), len(b)))
    for k in keys:
        diff(a[k], b[k], f"{path}/{k}")
diff(s, fresh)
if bad:
    print("\n".join(bad[:10]))
    sys.exit(1)
PY
done <"$T/accepted"

# A clean stop (10 s at most: a daemon that outlives it is a failure, and
# kill -9 ends it rather than a wait that never returns), then the file
# once more.
stop_term 10
check "the daemon stops on SIGTERM within 10 s" [ -z "$PID" ]
[ -n "$PID" ] && kill9
check "integrity_check after the final clean stop" [ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ]
check "no row left queued or running" [ "$(sqlite3 "$DB" "SELECT count(*) FROM results WHERE status IN ('queued','running')")" = 0 ]
echo "crash test took $(($(date +%s) - t0)) s"
if [ "$fail" -ne 0 ]; then echo "--- daemon log (tail)"; tail -n 20 "$LOG"; fi
finish
