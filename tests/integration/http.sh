#!/bin/bash
# tests/integration/http.sh -- drive the real build/mfud over HTTP on
# 127.0.0.1 with an ephemeral port and a temporary database:
#   POST -> 202 -> poll with ETag -> 304 -> done -> same POST -> 200 (cache
#   hit counted in /metrics); CSV and slicing; every error status with its
#   pointer; 64 concurrent identical POSTs make one job; kill -9 with jobs
#   queued, restart on the same DB, they complete; SIGTERM shuts down
#   cleanly; /metrics passes promtool (when installed); and every response
#   recorded here is validated against openapi.yaml (oas_check.py).
# Ends with "N passed, N failed"; exits non-zero on any failure.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh

if [ ! -x "$MFUD" ]; then
    echo "FAIL: $MFUD not built"
    echo "0 passed, 1 failed"
    exit 1
fi

# ---- daemon control ---------------------------------------------------------
LOG=$T/mfud.log
start() { # start [extra args...]; sets PID and PORT
    : >"$LOG.cur"
    STARTED_AFTER=$(date +%s.%N) # process_start_time_seconds lies between these two
    "$MFUD" --port 0 --db "$T/var/mfud.db" --log-level info "$@" 2>"$LOG.cur" &
    PID=$!
    wait_port "$LOG.cur"
    STARTED_BEFORE=$(date +%s.%N)
    cat "$LOG.cur" >>"$LOG"
    if [ -z "$PORT" ]; then
        echo "FAIL: daemon did not start"; cat "$LOG.cur"
        echo "$pass passed, $((fail + 1)) failed"
        exit 1
    fi
    BASE=http://127.0.0.1:$PORT
}
stop_kill() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""; }

# ---- requests: every response is recorded for the contract check ----------
# (req, hdr and json: tests/lib.sh)
metric() { # metric NAME-with-labels -> value (0 if absent)
    curl -s "$BASE/metrics" | awk -v m="$1" '$1 == m { print $2; f = 1 } END { if (!f) print 0 }'
}
wait_done() { # wait_done ID [seconds] -> 0 when done
    local id=$1 lim=${2:-120} i
    for i in $(seq 1 $((lim * 10))); do
        local s
        s=$(curl -s "$BASE/results/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null)
        [ "$s" = done ] && return 0
        [ "$s" = failed ] && return 1
        sleep 0.1
    done
    return 1
}

REQ='{"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 64, "training": {"seq_len": 8192, "global_batch_tokens": 4194304}}'
req_dev() { echo "{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": $1, \"training\": {\"seq_len\": 8192, \"global_batch_tokens\": 4194304}}"; }
JSONH=(-H 'Content-Type: application/json')

start --workers 2 --max-body 65536 --cors-origin http://dash.example

# ---- operations ------------------------------------------------------------
req GET /healthz; check "healthz 200" [ "$CODE" = 200 ]
req GET /livez; check "livez 200" [ "$CODE" = 200 ]
req GET /readyz; check "readyz 200" [ "$CODE" = 200 ]
req GET /openapi.yaml; check "openapi.yaml served" cmp -s "$BODY" openapi.yaml
req GET /presets/models; check "presets/models 200" [ "$CODE" = 200 ]
check "presets/models lists llama3-8b" grep -q '"llama3-8b"' "$BODY"
req GET /presets/hardware; check "presets/hardware 200" [ "$CODE" = 200 ]
check "presets/hardware lists h100-sxm" grep -q '"h100-sxm"' "$BODY"
req OPTIONS /search -H 'Origin: http://dash.example' -H 'Access-Control-Request-Method: POST'
check "OPTIONS 204" [ "$CODE" = 204 ]
check "CORS exposes ETag, Location, Retry-After" \
    bash -c "grep -i '^Access-Control-Expose-Headers:' '$HDR' | grep -q 'ETag' && grep -i '^Access-Control-Expose-Headers:' '$HDR' | grep -q 'Location' && grep -i '^Access-Control-Expose-Headers:' '$HDR' | grep -q 'Retry-After'"
check "CORS allows Prefer" bash -c "grep -i '^Access-Control-Allow-Headers:' '$HDR' | grep -qi prefer"
check "CORS names the one origin configured (--cors-origin), not *" [ "$(hdr Access-Control-Allow-Origin)" = "http://dash.example" ]

# ---- POST -> 202 -> poll with ETag -> 304 -> done -> POST -> 200 cached ------
hits0=$(metric 'mfud_cache_lookups_total{result="hit"}')
parses0=$(metric mfud_request_parses_total)
req POST /search "${JSONH[@]}" -H 'Prefer: respond-async' -d "$REQ"
check "respond-async gives 202" [ "$CODE" = 202 ]
LOC=$(hdr Location)
ID=$(json "$BODY" 'd["id"]')
check "202 Location is /results/{id}" [ "$LOC" = "/results/$ID" ]
check "202 has Retry-After" [ -n "$(hdr Retry-After)" ]
check "202 status queued|running" grep -Eq '"status":"(queued|running)"' "$BODY"
saw304=0
done_=0
ETAG=""
for _ in $(seq 1 1200); do
    if [ -n "$ETAG" ]; then req GET "$LOC" -H "If-None-Match: $ETAG"; else req GET "$LOC"; fi
    if [ "$CODE" = 304 ]; then saw304=1; continue; fi
    [ "$CODE" = 200 ] || break
    ETAG=$(hdr ETag)
    if grep -q '"status":"done"' "$BODY"; then done_=1; break; fi
    grep -q '"status":"failed"' "$BODY" && break
    sleep 0.1
done
check "job finished (done)" [ "$done_" = 1 ]
# parsed once: on the HTTP thread; the worker runs the prepared request
parses1=$(metric mfud_request_parses_total)
check "one search, one parse ($parses0 -> $parses1)" [ "$parses1" -eq $((parses0 + 1)) ]
check "done has a result" grep -q '"result":{' "$BODY"
cp "$BODY" "$T/result.json"
req GET "$LOC" -H "If-None-Match: $ETAG"
check "If-None-Match on the done result gives 304" [ "$CODE" = 304 ]
check "304 has an empty body" [ ! -s "$BODY" ]
[ "$saw304" = 1 ] && echo "note: saw a 304 while the job ran"
# Done results are served from the in-memory cache (a shared, prebuilt
# response): HEAD, a list of tags, and the same bytes on every GET.
curl -s -I --max-time 10 "$BASE$LOC" >"$T/head.hdr"
check "HEAD on the done result: 200 with the same ETag" bash -c "head -n 1 '$T/head.hdr' | grep -q ' 200' && grep -qi '^ETag: $ETAG' '$T/head.hdr'"
check "done result is cacheable (immutable)" bash -c "grep -qi '^Cache-Control: .*immutable' '$T/head.hdr'"
req GET "$LOC" -H "If-None-Match: W/\"nope\", $ETAG"
check "If-None-Match with a list containing the tag gives 304" [ "$CODE" = 304 ]
req GET "$LOC"
check "a second GET returns the same bytes" cmp -s "$BODY" "$T/result.json"
req POST /search "${JSONH[@]}" -d "$REQ"
check "same POST answers 200" [ "$CODE" = 200 ]
check "cached POST carries the same id" [ "$(json "$BODY" 'd["id"]')" = "$ID" ]
check "cached POST has the result" grep -q '"result":{' "$BODY"
hits1=$(metric 'mfud_cache_lookups_total{result="hit"}')
check "cache hit counted in /metrics ($hits0 -> $hits1)" [ "$hits1" -eq $((hits0 + 1)) ]
# key order and 4096 vs 4096.0 give the same id
req POST /search "${JSONH[@]}" -d '{"devices": 64.0, "training": {"global_batch_tokens": 4194304, "seq_len": 8192}, "hardware": {"preset": "h100-sxm"}, "model": {"preset": "llama3-8b"}}'
check "reordered / 64.0 request hits the same id" [ "$(json "$BODY" 'd["id"]')" = "$ID" ]

# ---- CSV and slicing ---------------------------------------------------------
req GET "/results/$ID" -H 'Accept: text/csv'
check "CSV 200" [ "$CODE" = 200 ]
check "CSV content type" bash -c "grep -qi '^Content-Type: text/csv' '$HDR'"
NCONF=$(json "$T/result.json" 'len(d["result"]["configs"])')
check "CSV has a header and one row per config" [ "$(grep -c . "$BODY")" -eq $((NCONF + 1)) ]
req GET "/results/$ID?top_k=1"
check "top_k=1 gives one config" [ "$(json "$BODY" 'len(d["result"]["configs"])')" = 1 ]
if [ "${NCONF:-0}" -ge 2 ]; then
    req GET "/results/$ID?top_k=1&offset=1"
    check "offset=1 gives the second config" \
        [ "$(json "$BODY" 'json.dumps(d["result"]["configs"][0], sort_keys=True)')" = "$(json "$T/result.json" 'json.dumps(d["result"]["configs"][1], sort_keys=True)')" ]
fi
req GET "/results/$ID?top_k=-1"
check "bad top_k 400" [ "$CODE" = 400 ]
check "bad top_k: its own problem type" [ "$(json "$BODY" 'd["type"]')" = /problems/invalid-query-parameter ]
check "bad top_k: the parameter is named" grep -q 'query parameter top_k' "$BODY"
req GET "/results?limit=1000"
check "bad limit: 400 /problems/invalid-query-parameter" \
    [ "$CODE:$(json "$BODY" 'd["type"]')" = 400:/problems/invalid-query-parameter ]

# ---- /results list -----------------------------------------------------------
req GET "/results?limit=1"
check "list 200" [ "$CODE" = 200 ]
check "list item has summary fields" [ "$(json "$BODY" '",".join(k for k in ("model","hardware","devices","best_mfu","status") if k in d["items"][0])')" = "model,hardware,devices,best_mfu,status" ]
check "list model name" [ "$(json "$BODY" 'd["items"][0]["model"]')" = llama3-8b ]

# ---- errors, each with its pointer -----------------------------------------
perr() { json "$BODY" 'd["errors"][0]["pointer"]'; }
ptype() { hdr Content-Type | cut -d';' -f1; }
req POST /search "${JSONH[@]}" -d '{"model": '
MALFORMED_N=$N
check "malformed JSON 400" [ "$CODE" = 400 ]
check "400 is problem+json" [ "$(ptype)" = application/problem+json ]
check "400 pointer is the document" [ "$(perr)" = "" ]
req POST /search -H 'Content-Type: text/plain' -d "$REQ"
check "415 for text/plain" [ "$CODE" = 415 ]
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big.json"
req POST /search "${JSONH[@]}" --data-binary @"$T/big.json"
check "413 over --max-body" [ "$CODE" = 413 ]
check "413 is problem+json" [ "$(ptype)" = application/problem+json ]
req POST /search "${JSONH[@]}" -d "$(req_dev 0)"
check "422 for devices 0" [ "$CODE" = 422 ]
check "422 points at /devices" [ "$(perr)" = /devices ]
req POST /search "${JSONH[@]}" -d '{"model": {"preset": "no-such-model"}, "hardware": {"preset": "h100-sxm"}, "devices": 8}'
check "422 for an unknown preset" [ "$CODE" = 422 ]
check "422 points into /model" bash -c "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(e[\"pointer\"].startswith(\"/model\") for e in d[\"errors\"]) else 1)' '$BODY'"
req POST /search "${JSONH[@]}" -d '[1, 2]'
check "422 for a non-object body" [ "$CODE" = 422 ]
req GET /no/such/route
check "404 unknown route" [ "$CODE" = 404 ]
check "404 is problem+json" [ "$(ptype)" = application/problem+json ]
req GET "/results/$(printf '0%.0s' $(seq 1 64))"
check "404 unknown id" [ "$CODE" = 404 ]
req DELETE /search
check "405 wrong method" [ "$CODE" = 405 ]
check "405 has Allow" [ -n "$(hdr Allow)" ]
req GET /search
check "405 GET /search" [ "$CODE" = 405 ]

check "malformed JSON and a bad query parameter have distinct types" \
    [ "$(json "$T/b.$MALFORMED_N" 'd["type"]')" = /problems/malformed-json ]

# ---- problem types resolve: GET /problems/{type} -----------------------------
# the names are the contract's (components/schemas/ProblemType)
TYPES=$(python3 -c '
import sys; sys.path.insert(0, "tests/integration")
import oas_check
d = oas_check.parse_yaml(open("openapi.yaml").read())
print(" ".join(t.rsplit("/", 1)[1] for t in d["components"]["schemas"]["ProblemType"]["enum"]))')
check "the contract names 11 problem types ($TYPES)" [ "$(echo $TYPES | wc -w)" -eq 11 ]
for t in $TYPES; do
    req GET "/problems/$t"
    check "GET /problems/$t: 200 text/markdown" \
        [ "$CODE:$(hdr Content-Type | cut -d';' -f1)" = 200:text/markdown ]
    check "/problems/$t names its type" grep -q "type: \`/problems/$t\`" "$BODY"
done
req GET /problems/invalid-request -H 'Accept: text/html,application/xhtml+xml'
check "a browser gets the page as HTML" \
    bash -c "[ '$CODE' = 200 ] && grep -qi '^Content-Type: text/html' '$HDR' && grep -q '<pre># Invalid request' '$BODY'"
req GET /problems/no-such-type
check "an unknown problem type: 404 /problems/not-found" \
    [ "$CODE:$(json "$BODY" 'd["type"]')" = 404:/problems/not-found ]
# every problem type this run met is one with a page (the schema's enum
# checks the same for every recorded problem in oas_check.py below)
for f in $(awk -F'\t' '$4 ~ /problem\+json/ {print $6}' "$REC"); do
    t=$(json "$f" 'd["type"]')
    check "problem type $t of $(basename "$f") resolves" \
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE$t")" = 200 ]
done

# ---- roofline -----------------------------------------------------------------
req POST /roofline "${JSONH[@]}" -d "$REQ"
check "roofline 200" [ "$CODE" = 200 ]
req POST /roofline "${JSONH[@]}" -d "$(req_dev -3)"
check "roofline invalid 422 (or 200 if devices unused)" [ "$CODE" = 422 -o "$CODE" = 200 ]

# ---- 64 concurrent identical POSTs create one job ---------------------------
created0=$(metric mfud_jobs_created_total)
R64=$(req_dev 128)
cpids=""
for i in $(seq 1 64); do
    curl -s -o "$T/c64.$i" -w '%{http_code}\n' --max-time 60 -H 'Content-Type: application/json' \
        -d "$R64" "$BASE/search" >"$T/c64code.$i" &
    cpids="$cpids $!"
done
wait $cpids
created1=$(metric mfud_jobs_created_total)
check "64 identical POSTs created one job ($created0 -> $created1)" [ "$created1" -eq $((created0 + 1)) ]
ids=$(for i in $(seq 1 64); do json "$T/c64.$i" 'd["id"]'; done | sort -u | wc -l)
check "64 identical POSTs share one id" [ "$ids" -eq 1 ]
codes=$(cat "$T"/c64code.* | sort -u | tr '\n' ' ')
check "64 identical POSTs answered 200/202 ($codes)" bash -c "[ -z \"\$(cat $T/c64code.* | grep -v -e 200 -e 202)\" ]"

# ---- /metrics passes promtool ------------------------------------------------
req GET /metrics
check "metrics 200" [ "$CODE" = 200 ]
check "metrics has the latency histogram" grep -q '^mfud_http_request_duration_seconds_bucket' "$BODY"
check "metrics counts evaluated configurations" bash -c "awk '\$1==\"mfud_search_configurations_evaluated_total\" && \$2>0 {f=1} END {exit !f}' '$BODY'"
if command -v promtool >/dev/null 2>&1; then
    if promtool check metrics <"$BODY" >"$T/promtool.out" 2>&1; then ok; else bad "promtool check metrics"; cat "$T/promtool.out"; fi
else
    skip "http.sh promtool check metrics (promtool not installed: Debian package prometheus)"
fi
# the standard process metrics (Prometheus "Writing client libraries",
# Process metrics), read from /proc
pm() { awk -v m="$1" '$1 == m { print $2 }' "$BODY"; }
for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
         process_virtual_memory_max_bytes process_open_fds process_max_fds process_start_time_seconds; do
    check "metrics has $m" [ -n "$(pm $m)" ]
    check "$m has its HELP and TYPE" bash -c "grep -q '^# HELP $m ' '$BODY' && grep -q '^# TYPE $m ' '$BODY'"
done
check "process_cpu_seconds_total is a counter" grep -q '^# TYPE process_cpu_seconds_total counter' "$BODY"
# /proc/stat's btime is whole seconds: the start may read up to 1 s early
check "process_start_time_seconds is when the daemon started ($STARTED_AFTER <= $(pm process_start_time_seconds) <= $STARTED_BEFORE)" \
    python3 -c "import sys; a, t, b = map(float, sys.argv[1:]); sys.exit(0 if a - 1.5 <= t <= b + 0.5 else 1)" \
    "$STARTED_AFTER" "$(pm process_start_time_seconds)" "$STARTED_BEFORE"
check "process_open_fds > 0 and <= process_max_fds" \
    python3 -c "import sys; o, m = map(float, sys.argv[1:]); sys.exit(0 if 0 < o <= m else 1)" "$(pm process_open_fds)" "$(pm process_max_fds)"
check "process_open_fds is the daemon's /proc/PID/fd count (+-10)" \
    python3 -c "import sys; o, n = map(float, sys.argv[1:]); sys.exit(0 if abs(o - n) <= 10 else 1)" "$(pm process_open_fds)" "$(ls /proc/$PID/fd | wc -l)"
check "process_resident_memory_bytes in (1 MB, process_virtual_memory_bytes]" \
    python3 -c "import sys; r, v = map(float, sys.argv[1:]); sys.exit(0 if 1e6 < r <= v else 1)" "$(pm process_resident_memory_bytes)" "$(pm process_virtual_memory_bytes)"
check "process_resident_memory_bytes is the daemon's VmRSS (within 20 %)" \
    python3 -c "import sys; r, k = map(float, sys.argv[1:]); sys.exit(0 if abs(r - 1024 * k) <= 0.2 * r else 1)" "$(pm process_resident_memory_bytes)" "$(awk '/^VmRSS:/ {print $2}' /proc/$PID/status)"
check "process_cpu_seconds_total > 0 after the searches" \
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$(pm process_cpu_seconds_total)"

# ---- 503 when the queue is full ----------------------------------------------
stop_kill
MFUD_TEST_JOB_DELAY_MS=3000 start --workers 1 --queue-limit 2
req POST /search "${JSONH[@]}" -H 'Prefer: respond-async' -d "$(req_dev 256)"
check "queue slot 1: 202" [ "$CODE" = 202 ]
req POST /search "${JSONH[@]}" -H 'Prefer: respond-async' -d "$(req_dev 512)"
check "queue slot 2: 202" [ "$CODE" = 202 ]
req POST /search "${JSONH[@]}" -H 'Prefer: respond-async' -d "$(req_dev 1024)"
check "queue full: 503" [ "$CODE" = 503 ]
check "503 has Retry-After" [ -n "$(hdr Retry-After)" ]
check "503 is problem+json" [ "$(ptype)" = application/problem+json ]
req GET /readyz
check "readyz 503 while the queue is full" [ "$CODE" = 503 ]

# ---- kill -9 with jobs queued; restart; they complete -----------------------
stop_kill
MFUD_TEST_JOB_DELAY_MS=2000 start --workers 1
K_IDS=""
for d in 16 32 48; do
    req POST /search "${JSONH[@]}" -H 'Prefer: respond-async' -d "$(req_dev $d)"
    check "crash-test job $d accepted (202)" [ "$CODE" = 202 ]
    K_IDS="$K_IDS $(json "$BODY" 'd["id"]')"
done
sleep 0.3
stop_kill
start --workers 1
check "restart re-queued the jobs" grep -q 'msg=requeued jobs=' "$LOG.cur"
for id in $K_IDS; do
    check "job ${id:0:12} completes after kill -9" wait_done "$id" 120
done
# the 256/512 jobs of the queue test were also persisted and complete
req GET "/results?limit=100"
check "no job left queued or running" [ "$(json "$BODY" 'sum(1 for i in d["items"] if i["status"] in ("queued","running"))')" = 0 ]

# ---- answers people act on (issue 11) -----------------------------------------
# distinct layouts with tiers, time and cost to train
L70='"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "training": {"seq_len": 8192, "global_batch_tokens": 16777216, "tokens": 15e12}'
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d "{$L70, \"devices\": 1024, \"search\": {\"top_k\": 10}, \"cost\": {\"price_per_device_hour\": 2.5}}"
check "distinct search answers 200" [ "$CODE" = 200 ]
check "top 10 are 10 distinct layouts" [ "$(json "$BODY" 'len({tuple(c["parallel"][a] for a in ("dp","fsdp","tp","ep","pp","cp")) for c in d["result"]["configs"]})')" = 10 ]
check "each row has a tier and its variants" [ "$(json "$BODY" 'all("tier" in c and c["variants"] >= 1 and "variants_search" in c for c in d["result"]["configs"])')" = True ]
check "time to train with cost and energy" [ "$(json "$BODY" 'all(c["time_to_train"]["cost"] > 0 and c["time_to_train"]["energy_mwh"] > 0 for c in d["result"]["configs"])')" = True ]
# nothing fits: 200, configs [], the closest and the fewest devices
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d '{"model": {"preset": "llama3-405b"}, "hardware": {"preset": "h100-sxm"}, "devices": 8, "training": {"seq_len": 8192, "global_batch_tokens": 16777216}}'
check "no-fit search answers 200" [ "$CODE" = 200 ]
check "no-fit: configs empty, fewest_devices named" [ "$(json "$BODY" 'len(d["result"]["configs"]) == 0 and d["result"]["no_fit"]["fewest_devices"] > 8')" = True ]
# a measured run given as a table gives it (a layout without sp, zero or
# recompute: Llama-3-70B's replicated state alone, 70.6 B / 16 parameters x
# 18 B, is 79 GB a GPU): the schedule follows vpp and the switches whose
# defaults cannot fit are inferred and named (the contract's
# MeasuredResult.inferred, checked with every recorded response)
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d '{"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 32, "training": {"seq_len": 4096, "global_batch_tokens": 1048576}, "search": {"top_k": 1, "frameworks": ["megatron"]}, "measured": {"config": {"parallel": {"dp": 2, "tp": 4, "pp": 4}, "vpp": 2}, "step_time_s": 1}}'
check "measured run without a schedule answers 200" [ "$CODE" = 200 ]
check "measured: interleaved, fitting, zero inferred" [ "$(json "$BODY" 'd["result"]["measured"]["config"]["schedule"] == "interleaved" and d["result"]["measured"]["config"]["feasible"] and "zero" in d["result"]["measured"]["inferred"]')" = True ]
# the answer's configuration given back as the run's (its figures not
# read): the same configuration, nothing inferred; a misspelt switch in it
# is a 422 at its pointer, not passed over
RANK1=$(json "$BODY" 'json.dumps(d["result"]["configs"][0])')
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d "{\"model\": {\"preset\": \"llama3-70b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": 32, \"training\": {\"seq_len\": 4096, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 1, \"frameworks\": [\"megatron\"]}, \"measured\": {\"config\": $RANK1, \"step_time_s\": 1}}"
check "an answer's configuration given back answers 200" [ "$CODE" = 200 ]
check "given back: the same configuration, nothing inferred" [ "$(json "$BODY" 'd["result"]["measured"]["config"]["expected"]["step_time_s"] == d["result"]["configs"][0]["expected"]["step_time_s"] and "inferred" not in d["result"]["measured"]')" = True ]
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d '{"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 32, "training": {"seq_len": 4096, "global_batch_tokens": 1048576}, "measured": {"config": {"parallel": {"dp": 2, "tp": 4, "pp": 4}, "vp": 2}, "step_time_s": 1}}'
check "a misspelt measured switch is a 422 at its pointer" [ "$CODE $(perr)" = "422 /measured/config/vp" ]
# a comparison: one job, one table, each variant stored as its own search
CMP="{\"base\": {$L70, \"devices\": 512, \"search\": {\"top_k\": 1}}, \"vary\": {\"hardware\": [{\"preset\": \"h100-sxm\"}, {\"preset\": \"b200\"}], \"devices\": [256, 512]}}"
req POST /compare "${JSONH[@]}" -H 'Prefer: respond-async' -d "$CMP"
check "POST /compare respond-async gives 202" [ "$CODE" = 202 ]
CID=$(json "$BODY" 'd["id"]')
check "compare 202 Location is /results/{id}" [ "$(hdr Location)" = "/results/$CID" ]
check "comparison completes" wait_done "$CID" 60
req GET "/results/$CID"
check "comparison has 4 rows" [ "$(json "$BODY" 'len(d["result"]["variants"])')" = 4 ]
SID=$(json "$BODY" 'd["result"]["variants"][3]["search_id"]')
req GET "/results/$SID"
check "a variant is a stored search of its own" [ "$(json "$BODY" 'd["status"] == "done" and d["result"]["devices"] == 512')" = True ]
req POST /compare "${JSONH[@]}" -d "$CMP"
check "same comparison answers 200 from the cache" [ "$CODE" = 200 ]
req POST /compare "${JSONH[@]}" -d "{\"base\": {$L70, \"devices\": 512}, \"vary\": {\"devices\": [512, 0]}}"
check "bad variant: 422 at /vary/devices/1" bash -c "[ '$CODE' = 422 ] && grep -q '\"/vary/devices/1\"' '$BODY'"
req GET /compare
check "GET /compare is 405" [ "$CODE" = 405 ]

# ---- every example request, answered by its route --------------------------
# (recorded: the answers are validated against the contract below)
for f in examples/*.json; do
    [ -f "$f" ] || continue
    route=$(python3 tests/integration/example_kind.py "$f")
    [ -n "$route" ] || continue # not a request (e.g. a HuggingFace config.json)
    route=/$route
    req POST "$route" "${JSONH[@]}" -H 'Prefer: wait=60' --data-binary @"$f"
    check "example $f: POST $route 200 ($CODE)" [ "$CODE" = 200 ]
done

# ---- pictures and the predicted trace of a done result (issues 12, 13) --------
req POST /search "${JSONH[@]}" -H 'Prefer: wait=60' -d "{$L70, \"devices\": 1024, \"search\": {\"top_k\": 3}}"
RID=$(json "$BODY" 'd["id"]')
for ch in gap memory timeline; do
    req GET "/results/$RID/charts/$ch.svg?rank=2"
    check "chart $ch: 200 image/svg+xml" bash -c "[ '$CODE' = 200 ] && grep -qi '^Content-Type: image/svg+xml' '$HDR'"
    check "chart $ch parses as XML with a title" python3 -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert r.tag.endswith('svg') and r.find('{http://www.w3.org/2000/svg}title') is not None" "$BODY"
done
ET=$(hdr ETag)
req GET "/results/$RID/charts/timeline.svg?rank=2" -H "If-None-Match: $ET"
check "chart: 304 with its ETag" [ "$CODE" = 304 ]
req GET "/results/$RID/charts/gap.svg?rank=9"
check "chart of a rank the result does not hold: 404" [ "$CODE" = 404 ]
req GET "/results/$RID/charts/gap.svg?rank=x"
check "chart with a bad rank: 400" [ "$CODE" = 400 ]
req GET "/results/$RID/trace"
check "predicted trace: 200 JSON with ProfilerStep#1" bash -c "[ '$CODE' = 200 ] && grep -q 'ProfilerStep#1' '$BODY'"
cp "$BODY" "$T/pred.trace.json"
check "the predicted trace reads back (mfu trace) with the step's expected time" python3 -c "
import json, subprocess, sys
res = json.load(open(sys.argv[2]))['result']['configs'][0]['expected']['step_time_s'] if False else None
out = json.loads(subprocess.run([sys.argv[1], 'trace', sys.argv[3]], capture_output=True, text=True).stdout)
fig = json.load(open(sys.argv[3]))['otherData']['figures']
assert abs(out['steps'][0]['step_time_s'] - fig['step_time_s']) <= 1e-6 * fig['step_time_s']
" "$MFU" "$BODY" "$T/pred.trace.json"
req GET "/results/$CID/charts/compare.svg"
check "comparison chart: 200 SVG" bash -c "[ '$CODE' = 200 ] && grep -q '<svg' '$BODY'"
req GET "/results/$RID/charts/compare.svg"
check "comparison chart of a search: 404" [ "$CODE" = 404 ]

# ---- SIGTERM: clean shutdown -------------------------------------------------
stop_term
check "SIGTERM exits 0 (rc=$RC)" [ "$RC" = 0 ]
if command -v sqlite3 >/dev/null 2>&1; then
    check "database passes integrity_check" [ "$(sqlite3 "$T/var/mfud.db" 'PRAGMA integrity_check')" = ok ]
    check "schema version recorded" [ "$(sqlite3 "$T/var/mfud.db" 'PRAGMA user_version')" -ge 1 ]
else
    skip "http.sh database integrity_check (sqlite3 not installed: Debian package sqlite3)"
fi

# ---- every response against openapi.yaml -----------------------------------
add_checker oas_check 40 python3 tests/integration/oas_check.py openapi.yaml "$REC"
echo "note: oas_check.py over $(wc -l <"$REC") responses: $LINE"

# ---- the same responses as a strictly typed client reads them ---------------
# ajv (JSON Schema 2020-12) with integers told from reals, as Go's
# encoding/json and Rust's serde tell them (tools/lint/schema_check.cjs)
if ! command -v node >/dev/null 2>&1; then
    skip "http.sh strict-typed schema check (node not installed: sh docker/deps.sh installs it)"
elif [ ! -d tools/lint/node_modules/ajv ]; then
    skip "http.sh strict-typed schema check (tools/lint/node_modules missing: sh docker/deps.sh installs it)"
else
    add_checker schema_check.cjs 40 node tools/lint/schema_check.cjs openapi.yaml "$REC"
    echo "note: schema_check.cjs (ajv, strict integers): $LINE"
fi

if [ "$fail" -ne 0 ]; then echo "--- daemon log (tail)"; tail -n 30 "$LOG.cur"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
