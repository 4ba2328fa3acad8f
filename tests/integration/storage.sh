#!/bin/bash
# tests/integration/storage.sh -- issue 14 items 1 and 2: the database cannot
# be written (a full disk; here the file-size limit, `ulimit -S -f`, which
# also used to kill the daemon with SIGXFSZ). Every acknowledged search
# keeps its answer: a finished result that cannot be written is held in
# memory and served; /readyz says not ready; new searches get 503 with
# Retry-After; once writes work again (the limit raised with prlimit, no
# restart) the held results are written, /readyz is ready again and, after a
# kill -9 and a restart, every acknowledged result is there.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFUD" ]; then echo "FAIL: $MFUD not built"; fail=1; finish; fi
for t in python3 curl prlimit; do
    command -v $t >/dev/null 2>&1 || { skip "storage.sh ($t not installed; prlimit: Debian package util-linux)"; finish; }
done

DB=$T/db/m.db
mkdir -p "$T/db"
# 1 MiB per file (soft limit, so it can be raised again)
(ulimit -S -f 1024; exec "$MFUD" --port 0 --db "$DB" --workers 2 --log-level info) 2>"$T/d.log" &
PID=$!
wait_port "$T/d.log"
[ -n "$PORT" ] || { bad "the daemon did not start"; cat "$T/d.log"; finish; }
code() { curl -s -o "$T/body" -D "$T/hdr" -w '%{http_code}' "$@"; }
ready() { curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz"; }
search() { # search DEVICES -> HTTP code; the body in $T/body
    code "$BASE/search" -H 'Content-Type: application/json' -H 'Prefer: wait=60' -d "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": $1, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304}, \"search\": {\"top_k\": 50, \"distinct\": \"none\"}}"
}

# big results until a write fails: each answered 200 meanwhile
ACKED=""
HELD=""
for d in 8 16 24 32 40 48 56 64 72 80 88 96; do
    c=$(search $d)
    if [ "$c" = 200 ]; then
        ACKED="$ACKED $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/body")"
    fi
    if [ "$(ready)" = 503 ]; then HELD=$(echo $ACKED | awk '{print $NF}'); break; fi
    check "search on $d devices before any write failed: 200 (got $c)" [ "$c" = 200 ]
done
check "the daemon survives a write past the file-size limit (no SIGXFSZ)" kill -0 "$PID"
check "a write failed: /readyz not ready" [ -n "$HELD" ]
check "the log says the result is held" grep -q "result held in memory" "$T/d.log"
c=$(code "$BASE/results/$HELD")
check "GET the held result: 200 done, with its configurations" bash -c "[ $c = 200 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d[\"status\"] == \"done\" and d[\"result\"][\"configs\"]' '$T/body'"
c=$(search 200)
check "a new search while held: 503" [ "$c" = 503 ]
check "... with Retry-After" grep -qi '^Retry-After:' "$T/hdr"

# writes work again: no restart
prlimit --pid "$PID" --fsize=unlimited:
ok_again=0
for _ in $(seq 1 50); do [ "$(ready)" = 200 ] && { ok_again=1; break; }; sleep 0.1; done
check "limit raised: /readyz ready again within 5 s" [ "$ok_again" = 1 ]
check "the log says the held result was written" grep -q "held result written" "$T/d.log"
c=$(search 200)
check "a new search afterwards: 200" [ "$c" = 200 ]
ACKED="$ACKED $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/body")"

# durable: kill -9, restart, every acknowledged result is there
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=""
"$MFUD" --port 0 --db "$DB" --workers 2 --log-level info 2>"$T/d2.log" &
PID=$!
wait_port "$T/d2.log"
n=0; good=0
for id in $ACKED; do
    n=$((n + 1))
    s=$(curl -s "$BASE/results/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null)
    [ "$s" = done ] && good=$((good + 1))
done
check_sh "after kill -9 and a restart: all $n acknowledged results done ($good)" '[ "$1" -ge 3 ] && [ "$2" = "$1" ]' "$n" "$good"
kill "$PID"; wait "$PID" 2>/dev/null; PID=""
finish
