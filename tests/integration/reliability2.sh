#!/bin/bash
# tests/integration/reliability2.sh -- issue 14 (Reliability II), the items
# built so far, each a check that failed before:
#   3  the database file deleted while running: not ready, loudly logged, no
#      new job acknowledged;
#   5  a stored result corrupted on disk fails its checksum: never served,
#      recomputed from its stored input, the same answer again;
#   4  two daemons on one database file: the second refuses to start
#      (an exclusive lock, <db>.lock), the first keeps serving;
#   7  a second daemon on the same port: "address in use", exit non-zero;
#      sharing only with --reuse-port 1;
#   6  an oversized body sent without Expect: 100-continue is read and
#      dropped, so the client reads its 413 (it got a reset);
#   8  GET /results?offset beyond 10000 is refused (each skipped row cost
#      the loop thread): deep pages go by cursor;
#  11  no CORS headers unless --cors-origin; a POST body must say it is JSON
#      (form types, which pages of other origins send without preflight,
#      and a missing type answer 415);
#   9  /metrics%00x is no route (was served as /metrics); Transfer-Encoding
#      other than chunked answers 501 at once (hung until the timeout); two
#      different Content-Length values answer 400;
#  10  a running search's progress and evaluated never go back (they did at
#      every shard), polled through a multi-second search;
#  12  --auth-token= (empty) and --wait nan are refused; the token can come
#      from a file (not visible in ps).
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFUD" ]; then echo "FAIL: $MFUD not built"; fail=1; finish; fi
for t in python3 curl; do
    command -v $t >/dev/null 2>&1 || { skip "reliability2.sh ($t not installed)"; finish; }
done

start() { # start LOG args...; sets PID, PORT, BASE
    local log=$1; shift
    : >"$log"
    "$MFUD" --log-level info "$@" 2>"$log" &
    PID=$!
    wait_port "$log"
}

# ---- 4: one daemon per database file ----------------------------------------------
start "$T/a.log" --port 0 --db "$T/one.db" --workers 1
APID=$PID
ABASE=$BASE
check "daemon A starts" [ -n "$PORT" ]
APORT=$PORT
"$MFUD" --port 0 --db "$T/one.db" 2>"$T/b.log" &
BPID=$!
for _ in $(seq 1 100); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$BPID" 2>/dev/null; then
    bad "daemon B on A's database is still running"
    kill -9 "$BPID"
else
    wait "$BPID"; rc=$?
    check "daemon B on A's database exits non-zero" [ "$rc" -ne 0 ]
    check "... saying the database is in use, with A's pid" grep -q "in use by another process pid $APID" "$T/b.log"
fi
check "A still serves" [ "$(curl -s -o /dev/null -w '%{http_code}' "$ABASE/healthz")" = 200 ]

# ---- 7: a port in use is an error --------------------------------------------------
"$MFUD" --port "$APORT" --db "$T/two.db" 2>"$T/c.log" &
CPID=$!
for _ in $(seq 1 100); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$CPID" 2>/dev/null; then
    bad "daemon C on A's port is still running (SO_REUSEPORT?)"
    kill -9 "$CPID"
else
    wait "$CPID"; rc=$?
    check "daemon C on A's port exits non-zero" [ "$rc" -ne 0 ]
    check "... saying the address is in use" grep -qi "address already in use" "$T/c.log"
fi
check "A still answers every GET (no second listener takes some)" bash -c "
for i in \$(seq 1 20); do [ \"\$(curl -s -o /dev/null -w '%{http_code}' '$ABASE/healthz')\" = 200 ] || exit 1; done"

# ---- 9: paths and framing -----------------------------------------------------------
check "/metrics%00x: 404, not the metrics" [ "$(curl -s -o /dev/null -w '%{http_code}' "$ABASE/metrics%00x")" = 404 ]
check "/metrics: 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$ABASE/metrics")" = 200 ]
out=$(python3 - "$APORT" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
def first_line(data):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    t = time.time()
    s.sendall(data)
    b = b""
    try:
        while b"\r\n" not in b:
            c = s.recv(4096)
            if not c:
                break
            b += c
    except socket.timeout:
        return "timeout"
    return "%s %.1f" % (b.split(b"\r\n")[0].split(b" ")[1].decode() if b else "closed", time.time() - t)
print(first_line(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"))
print(first_line(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 2\r\nContent-Length: 7\r\n\r\n{}"))
EOF
)
te=$(echo "$out" | sed -n 1p)
cl=$(echo "$out" | sed -n 2p)
check "Transfer-Encoding: gzip, chunked: 501 at once (got $te)" bash -c "[ '${te%% *}' = 501 ] && awk 'BEGIN{exit !(${te##* } < 1.0)}'"
check "two different Content-Length values: 400 (got $cl)" [ "${cl%% *}" = 400 ]

# ---- 10: progress never goes back ------------------------------------------------------
# DeepSeek-V3 on 16,384 H800 over a batch range: longer than its 4 s deadline on one worker
BODY='{"model": {"preset": "deepseek-v3"}, "hardware": {"preset": "h800"}, "devices": 16384, "training": {"seq_len": 4096, "global_batch_tokens": 67108864}, "search": {"batch_seqs": [1024, 32768], "top_k": 3, "deadline_s": 4}}'
ID=$(curl -s "$ABASE/search" -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d "$BODY" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
python3 - "$ABASE" "$ID" >"$T/poll.txt" <<'EOF'
import json, sys, time, urllib.request
base, i = sys.argv[1], sys.argv[2]
t0 = time.time()
while time.time() - t0 < 120:
    d = json.load(urllib.request.urlopen("%s/results/%s" % (base, i)))
    print(d["status"], d["progress"], d["evaluated"])
    if d["status"] in ("done", "failed"):
        break
    time.sleep(0.05)
EOF
check "the search ran and was polled while running ($(grep -c running "$T/poll.txt") polls)" \
    [ "$(grep -c running "$T/poll.txt")" -ge 5 ]
check "progress and evaluated never went back" python3 -c "
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith('running')]
p = [float(r[1]) for r in rows]; e = [int(r[2]) for r in rows]
assert all(b >= a for a, b in zip(p, p[1:])), p
assert all(b >= a for a, b in zip(e, e[1:])), e" "$T/poll.txt"
kill "$APID"; wait "$APID" 2>/dev/null; PID=""

# ---- 6: an oversized body sent without Expect: the client reads the 413 ---------------------
start "$T/l.log" --port 0 --db "$T/big/m.db" --workers 1
check "1, 2, 8, 64 MiB + 1 without Expect (Python http.client): each reads its 413" python3 - "$PORT" <<'EOF'
import http.client, sys
for mb in (1, 2, 8, 64):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
    c.request("POST", "/search", body=b"x" * (mb * 1048576 + 1), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 413, (mb, r.status)
EOF
# ---- 11: no CORS unless asked for; POST bodies must say JSON -----------------------------------
check "no Access-Control-Allow-Origin by default" bash -c "! curl -s -D - -o /dev/null '$BASE/healthz' -H 'Origin: http://evil.example' | grep -qi '^Access-Control-Allow-Origin'"
check "a form's content type (a page of another origin may send it without preflight): 415" \
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type: application/x-www-form-urlencoded' --data-binary @examples/roofline.json)" = 415 ]
check "text/plain: 415" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type: text/plain' --data-binary @examples/roofline.json)" = 415 ]
check "no content type: 415" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type:' --data-binary @examples/roofline.json)" = 415 ]
check "application/json: 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type: application/json' --data-binary @examples/roofline.json)" = 200 ]

# ---- 8: deep offsets go by cursor ------------------------------------------------------------
check "GET /results?offset=10001: 400 (page by cursor)" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/results?offset=10001")" = 400 ]
check "GET /results?offset=10000: 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/results?offset=10000")" = 200 ]
kill "$PID"; wait "$PID" 2>/dev/null; PID=""

# ---- 3: the database file deleted while running ------------------------------------------
start "$T/h.log" --port 0 --db "$T/gone/m.db" --workers 1
check "a search before: 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/search" -H 'Content-Type: application/json' -H 'Prefer: wait=30' -d @examples/search.json)" = 200 ]
rm -f "$T/gone/m.db" "$T/gone/m.db-wal" "$T/gone/m.db-shm"
lost=0
for _ in $(seq 1 40); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/readyz")" = 503 ] && { lost=1; break; }; sleep 0.1; done
check "deleted: /readyz not ready within 4 s" [ "$lost" = 1 ]
check "deleted: said loudly in the log" grep -q "database file lost" "$T/h.log"
check "deleted: a new search is not acknowledged (503)" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/search" -H 'Content-Type: application/json' -d @examples/search-async.json)" = 503 ]
kill "$PID"; wait "$PID" 2>/dev/null; PID=""

# ---- 5: a corrupted stored result is never served ----------------------------------------
start "$T/k.log" --port 0 --db "$T/crc/m.db" --workers 1 --mem-cache 0
curl -s "$BASE/search" -H 'Content-Type: application/json' -H 'Prefer: wait=30' -d @examples/search.json >"$T/orig.json"
CID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/orig.json")
kill "$PID"; wait "$PID" 2>/dev/null; PID=""
# one digit of the best MFU changed on disk
python3 - "$T/crc/m.db" "$CID" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
r = c.execute("SELECT result FROM results WHERE id = ?", (sys.argv[2],)).fetchone()[0]
i = r.index('"mfu":') + 8
r = r[:i] + ("1" if r[i] != "1" else "2") + r[i + 1:]
c.execute("UPDATE results SET result = ? WHERE id = ?", (r, sys.argv[2]))
c.commit()
EOF
start "$T/k2.log" --port 0 --db "$T/crc/m.db" --workers 1 --mem-cache 0
c=$(curl -s -o "$T/c1.json" -w '%{http_code}' "$BASE/results/$CID")
check "corrupted on disk: not served as done (got $c, $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status"))' "$T/c1.json"))" \
    bash -c "[ '$c' != 200 ] || python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"status\"] != \"done\"' '$T/c1.json'"
check "... said in the log" grep -q "failed its checksum" "$T/k2.log"
done_again=0
for _ in $(seq 1 100); do
    s=$(curl -s "$BASE/results/$CID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null)
    [ "$s" = done ] && { done_again=1; break; }
    sleep 0.1
done
check "... recomputed: done again within 10 s" [ "$done_again" = 1 ]
check "... and equal to the original answer" python3 -c "
import json, sys, urllib.request
a = json.load(open(sys.argv[1]))['result']
b = json.load(urllib.request.urlopen(sys.argv[2]))['result']
assert a['configs'] == b['configs']" "$T/orig.json" "$BASE/results/$CID"
kill "$PID"; wait "$PID" 2>/dev/null; PID=""

# ---- 12: small ones -----------------------------------------------------------------------
timeout 5 "$MFUD" --auth-token= --port 0 --db "$T/three.db" 2>"$T/d.log"
check "--auth-token= (empty): refused, exit 2" bash -c "[ $? = 2 ] && grep -q 'must not be empty' '$T/d.log'"
timeout 5 "$MFUD" --wait nan --port 0 --db "$T/three.db" 2>"$T/e.log"
check "--wait nan: refused, exit 2" [ $? = 2 ]
timeout 5 "$MFUD" --max-search-s nan --port 0 --db "$T/three.db" 2>"$T/e.log"
check "--max-search-s nan: refused, exit 2" [ $? = 2 ]
printf 's3cret-token\n' >"$T/token"
start "$T/f.log" --port 0 --db "$T/four.db" --auth-token-file "$T/token"
check "POST without the file's token: 401" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type: application/json' -d @examples/roofline.json)" = 401 ]
check "POST with it: 200" [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/roofline" -H 'Content-Type: application/json' -H 'Authorization: Bearer s3cret-token' -d @examples/roofline.json)" = 200 ]
check "the token is not in the daemon's command line" bash -c "! grep -q s3cret /proc/$PID/cmdline"
kill "$PID"; wait "$PID" 2>/dev/null; PID=""
timeout 5 "$MFUD" --port 0 --db "$T/five.db" --auth-token-file "$T/none" 2>"$T/g.log"
check "--auth-token-file of a missing file: exit 2" [ $? = 2 ]
finish
