#!/bin/bash
# tests/integration/security.sh -- security basics (issue 6 item 6):
#  1. build/mfud binds 127.0.0.1 by default (the kernel's table of listening
#     sockets, /proc/net/tcp{,6}, shows 127.0.0.1:PORT and nothing else);
#  2. SQL only through prepared statements: names full of quotes and SQL go
#     through a search into the database and come back verbatim; the file
#     passes integrity_check and its table and schema are intact;
#  3. no request data reaches a format string: "%s%n%x" in bodies, names,
#     JSON keys, paths, query parameters and headers; answers are sane JSON
#     that echo the text verbatim, the daemon stays up, logs are sane;
#  4. request bodies never reach the log above debug level (a unique marker
#     sent in every kind of body is absent from stderr at --log-level info);
#  5. bearer-token auth on non-GET routes (--auth-token and MFUD_AUTH_TOKEN):
#     401 + WWW-Authenticate without or with a wrong token, accepted with the
#     right one; GET and CORS preflight need none; the token is never logged.
# Ends with "N passed, N failed"; a few seconds.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFUD" ]; then echo "FAIL: $MFUD not built"; fail=1; finish; fi
# Defaults must come from the daemon, not from the caller's environment.
unset MFUD_BIND MFUD_AUTH_TOKEN MFUD_LOG_LEVEL MFUD_PORT MFUD_DB

LOG=$T/log
start() { # start [args...]; sets PID, PORT, BASE; stderr in $LOG
    : >"$LOG"
    "$MFUD" --port 0 --db "$T/mfud.db" --workers 1 "$@" 2>"$LOG" &
    PID=$!
    wait_port "$LOG"
    if [ -z "$PORT" ]; then bad "daemon did not start ($*)"; cat "$LOG"; finish; fi
    BASE=http://127.0.0.1:$PORT
}
stop() {
    kill -TERM "$PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=""
}
# req METHOD PATH [curl args...] (tests/lib.sh) -> CODE, the body in $BODY,
# the headers in $HDR, every response recorded for the contract check at
# the end
is_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$BODY" 2>/dev/null; }
alive() { kill -0 "$PID" 2>/dev/null && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/healthz")" = 200 ]; }
JSONH=(-H 'Content-Type: application/json')

# A valid search whose model and hardware carry NAME (json.dumps quotes it;
# names are limited to 47 bytes by the request validation).
ir_req() { # ir_req NAME [devices] -> JSON text
    python3 -c '
import json, sys
name, dev = sys.argv[1], int(sys.argv[2])
print(json.dumps({
  "model": {"name": name, "d_model": 1024, "vocab": 32000, "tie_embeddings": False,
            "norm": "rmsnorm", "position": "rope",
            "layers": [{"count": 4, "attention": {"type": "mha", "n_heads": 8},
                        "mlp": {"type": "dense", "ffn_dim": 4096}}]},
  "hardware": {"preset": "h100-sxm", "name": name},
  "devices": dev, "training": {"seq_len": 2048, "global_batch_tokens": 262144},
  "search": {"top_k": 2}}))' "$1" "${2:-8}"
}

# ---- 1. default bind address -------------------------------------------------
start
hexport=$(printf '%04X' "$PORT")
listen4=$(awk -v p=":$hexport" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp)
listen6=$(awk -v p=":$hexport" '$4 == "0A" && substr($2, length($2) - 4) == p { print $2 }' /proc/net/tcp6 2>/dev/null)
check "listens on 127.0.0.1:$PORT by default (/proc/net/tcp: ${listen4:-none})" [ "$listen4" = "0100007F:$hexport" ]
check "no other listening socket on port $PORT (IPv6: ${listen6:-none})" [ -z "$listen6" ]
check "startup log says bind=127.0.0.1" grep -q 'msg=listening bind=127.0.0.1 ' "$LOG"
if command -v ss >/dev/null 2>&1; then
    check "ss agrees: 127.0.0.1:$PORT" bash -c "ss -ltnH 'sport = :$PORT' | awk '{print \$4}' | grep -qx '127.0.0.1:$PORT'"
else
    skip "security.sh ss cross-check (ss not installed: Debian package iproute2)"
fi

# ---- 2. SQL strings stored verbatim (prepared statements) -------------------
SQLS=(
    "x'); DROP TABLE results; --"
    "' OR '1'='1"
    "\"; DELETE FROM results; --"
    "x'); UPDATE results SET status='failed'; --"
    "; PRAGMA user_version = 99; --"
)
i=0
SQL_IDS=()
for s in "${SQLS[@]}"; do
    i=$((i + 1))
    ir_req "$s" $((8 * i)) >"$T/sql.$i.json"
    req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' --data-binary @"$T/sql.$i.json"
    check "SQL name $i: search answered 200 ($CODE)" [ "$CODE" = 200 ]
    got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["result"]["model"]["name"])' "$BODY" 2>/dev/null)
    check "SQL name $i: echoed verbatim" [ "$got" = "$s" ]
    SQL_IDS+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$BODY" 2>/dev/null)")
done
req GET "/results?limit=100"
check "list 200 after SQL names" [ "$CODE" = 200 ]
n_items=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$BODY" 2>/dev/null)
check "all ${#SQLS[@]} rows listed ($n_items)" [ "$n_items" = "${#SQLS[@]}" ]
python3 - "$BODY" "${SQLS[@]}" <<'PY' && ok || bad "listed model names are the SQL strings verbatim"
import json, sys
d = json.load(open(sys.argv[1]))
names = sorted(i["model"] for i in d["items"])
sys.exit(0 if names == sorted(sys.argv[2:]) and all(i["status"] == "done" for i in d["items"]) else 1)
PY
# An id that is SQL: a 404 by route, never a query.
req GET "/results/'%20OR%20'1'='1"
check "SQL in the result path: 404" [ "$CODE" = 404 ]
req GET "/results?cursor=1.'%20OR%201=1%20--"
check "SQL in the cursor: 400" [ "$CODE" = 400 ]
stop
if command -v sqlite3 >/dev/null 2>&1; then
    check "integrity_check ok after SQL strings" [ "$(sqlite3 "$T/mfud.db" 'PRAGMA integrity_check')" = ok ]
    check "schema version intact" [ "$(sqlite3 "$T/mfud.db" 'PRAGMA user_version')" = 2 ]
    check "rows intact (${#SQLS[@]} done)" [ "$(sqlite3 "$T/mfud.db" "SELECT count(*) FROM results WHERE status = 'done'")" = "${#SQLS[@]}" ]
    check "only the results table" [ "$(sqlite3 "$T/mfud.db" "SELECT group_concat(name) FROM sqlite_master WHERE type = 'table'")" = results ]
    # read back with bound parameters too (python's sqlite3)
    n_verbatim=$(python3 - "$T/mfud.db" "${SQLS[@]}" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(sum(c.execute("SELECT count(*) FROM results WHERE model = ?", (s,)).fetchone()[0] == 1
          for s in sys.argv[2:]))
PY
)
    check "every SQL name stored verbatim in the model column ($n_verbatim of ${#SQLS[@]})" [ "$n_verbatim" = "${#SQLS[@]}" ]
else
    skip "security.sh database checks after SQL strings (sqlite3 not installed: Debian package sqlite3)"
fi

# ---- 3 and 4. format strings; bodies never logged above debug --------------
MARK="BM$$-$RANDOM$RANDOM"
FMT='%s%s%n%n%x%p%9999d'
start --log-level info
# a valid search whose names carry the format string and the marker
ir_req "$FMT $MARK" 64 >"$T/fmt.json"
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' --data-binary @"$T/fmt.json"
check "format-string names: search 200 ($CODE)" [ "$CODE" = 200 ]
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["result"]["model"]["name"])' "$BODY" 2>/dev/null)
check "format-string name echoed verbatim" [ "$got" = "$FMT $MARK" ]
# invalid values: the unknown preset is named back in the problem
req POST /search "${JSONH[@]}" -d "{\"model\": {\"preset\": \"$FMT $MARK\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8}"
check "format-string preset: 422 ($CODE)" [ "$CODE" = 422 ]
check "422 is JSON" is_json
check "422 detail does not expand the format" bash -c "! grep -q '(null)' '$BODY' && ! grep -q '(nil)' '$BODY'"
# an unknown key with the format string: named in the pointer
req POST /search "${JSONH[@]}" -d "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 8, \"$FMT$MARK\": 1}"
check "format-string key: 4xx ($CODE)" [ "${CODE:0:1}" = 4 ]
check "format-string key answer is JSON" is_json
if [ "$CODE" = 422 ]; then
    check "the pointer names the key verbatim" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(e["pointer"] == "/" + sys.argv[2] for e in d["errors"]) else 1)' "$BODY" "$FMT$MARK"
fi
# malformed JSON whose text is the format string and the marker
req POST /search "${JSONH[@]}" -d "{\"x\": $FMT $MARK"
check "malformed body with format string: 400 ($CODE)" [ "$CODE" = 400 ]
check "400 is JSON" is_json
req POST /roofline "${JSONH[@]}" -d "{\"model\": {\"preset\": \"$MARK$FMT\"}, \"hardware\": {\"preset\": \"h100-sxm\"}}"
check "roofline with format string: 422 ($CODE)" [ "$CODE" = 422 ]
req POST /roofline "${JSONH[@]}" --data-binary @"$T/fmt.json"
check "roofline with format-string names: 200 ($CODE)" [ "$CODE" = 200 ]
# paths, query, headers
req GET "/results/%25s%25n%25x$MARK"
check "format string in the path: 404 ($CODE)" [ "$CODE" = 404 ]
check "404 is JSON" is_json
req GET "/results?limit=%25n%25s"
check "format string in a query: 400 ($CODE)" [ "$CODE" = 400 ]
check "400 (query) is JSON" is_json
req POST /search -H "Content-Type: $FMT" -d '{}'
check "format string as Content-Type: 415 ($CODE)" [ "$CODE" = 415 ]
req POST /search "${JSONH[@]}" -H "Prefer: wait=$FMT, $FMT" -H "If-None-Match: $FMT" --data-binary @"$T/fmt.json"
check "format strings in Prefer / If-None-Match: 200 ($CODE)" [ "$CODE" = 200 ]
req GET "/search" -H "Authorization: Bearer $FMT"
check "format string in Authorization on GET /search: 405 ($CODE)" [ "$CODE" = 405 ]
req "$FMT" /search
check "format string as the method: 4xx/5xx, no crash ($CODE)" [ "${CODE:-000}" != 000 ]
check "daemon alive after format strings" alive
stop
check "log lines are sane (no (null)/(nil) expansions)" bash -c "! grep -Eq '\\(null\\)|\\(nil\\)' '$LOG'"
check "every log line is key=value with ts= and level=" bash -c "! grep -v '^ts=[0-9TZ:.-]* level=[a-z]* ' '$LOG' | grep -q ."
n_mark=$(grep -c "$MARK" "$LOG")
check "request bodies never logged at info: marker absent ($n_mark lines)" [ "$n_mark" = 0 ]
[ "$n_mark" = 0 ] || grep "$MARK" "$LOG" | head -n 3

# ---- 5. bearer-token auth ----------------------------------------------------
TOKEN="s3cret-$RANDOM$RANDOM"
auth_checks() { # auth_checks LABEL
    local l=$1
    req POST /search "${JSONH[@]}" -d "$(ir_req auth 16)"
    check "$l: POST /search without a token: 401 ($CODE)" [ "$CODE" = 401 ]
    check "$l: 401 has WWW-Authenticate: Bearer" bash -c "grep -qi '^WWW-Authenticate: Bearer' '$HDR'"
    check "$l: 401 is problem+json" [ "$(hdr Content-Type | cut -d';' -f1)" = application/problem+json ]
    req POST /search "${JSONH[@]}" -H "Authorization: Bearer wrong-$TOKEN" -d "$(ir_req auth 16)"
    check "$l: wrong token: 401 ($CODE)" [ "$CODE" = 401 ]
    req POST /search "${JSONH[@]}" -H "Authorization: Bearer ${TOKEN%?}" -d "$(ir_req auth 16)"
    check "$l: token prefix: 401 ($CODE)" [ "$CODE" = 401 ]
    req POST /search "${JSONH[@]}" -H "Authorization: Basic $TOKEN" -d "$(ir_req auth 16)"
    check "$l: other scheme: 401 ($CODE)" [ "$CODE" = 401 ]
    req POST /roofline "${JSONH[@]}" --data-binary @"$T/fmt.json"
    check "$l: POST /roofline without a token: 401 ($CODE)" [ "$CODE" = 401 ]
    req POST /search "${JSONH[@]}" -H "Authorization: Bearer $TOKEN" -H 'Prefer: wait=60' -d "$(ir_req auth 16)"
    check "$l: right token: 200 ($CODE)" [ "$CODE" = 200 ]
    local id
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$BODY" 2>/dev/null)
    req POST /roofline "${JSONH[@]}" -H "Authorization: Bearer $TOKEN" --data-binary @"$T/fmt.json"
    check "$l: right token on /roofline: 200 ($CODE)" [ "$CODE" = 200 ]
    req GET "/results/$id"
    check "$l: GET /results/{id} needs no token: 200 ($CODE)" [ "$CODE" = 200 ]
    req GET /metrics
    check "$l: GET /metrics needs no token: 200 ($CODE)" [ "$CODE" = 200 ]
    req OPTIONS /search -H 'Origin: http://dash.example' -H 'Access-Control-Request-Method: POST'
    check "$l: CORS preflight needs no token: 204 ($CODE)" [ "$CODE" = 204 ]
}
start --auth-token "$TOKEN"
check "startup log says auth=bearer" grep -q 'auth=bearer' "$LOG"
auth_checks "--auth-token"
stop
check "the token is never logged (--auth-token)" bash -c "! grep -q -- '$TOKEN' '$LOG'"
MFUD_AUTH_TOKEN=$TOKEN start
auth_checks "MFUD_AUTH_TOKEN"
stop
check "the token is never logged (MFUD_AUTH_TOKEN)" bash -c "! grep -q -- '$TOKEN' '$LOG'"
# Without a token configured, POST needs none (the default).
start
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d "$(ir_req auth 16)"
check "no --auth-token: POST accepted without a token ($CODE)" [ "$CODE" = 200 ]
stop
# every answer above (the 401s, the hostile names' 200s and 422s) against openapi.yaml
add_checker oas_check 20 python3 tests/integration/oas_check.py openapi.yaml "$REC"
echo "note: oas_check.py over $(wc -l <"$REC") responses: $LINE"
finish
