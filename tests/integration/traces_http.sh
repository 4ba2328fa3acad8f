#!/bin/bash
# tests/integration/traces_http.sh -- profiler traces over HTTP (issue 12):
# POST /traces (gzip and plain, the marker, the limits, malformed traces),
# GET /traces/{id}, a search whose measured.trace names an uploaded trace
# (a copy of the configuration's own predicted trace with its GEMMs 20 %
# slower: the gap lands on gemm), a calibration run with a trace, an unknown
# id, durability across kill -9; every response against openapi.yaml.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFUD" ] || [ ! -x "$MFU" ]; then echo "FAIL: $MFUD or $MFU not built"; fail=1; finish; fi
if ! command -v python3 >/dev/null 2>&1; then skip "traces_http.sh (python3 not installed: Debian package python3)"; finish; fi
if ! command -v curl >/dev/null 2>&1; then skip "traces_http.sh (curl not installed: Debian package curl)"; finish; fi

LOG=$T/mfud.log
start() {
    : >"$LOG"
    "$MFUD" --port 0 --db "$T/var/mfud.db" --log-level info --max-trace-bytes 1000000 "$@" 2>"$LOG" &
    PID=$!
    wait_port "$LOG"
    [ -n "$PORT" ] || { bad "the daemon did not start"; cat "$LOG"; finish; }
}
# every response recorded in $REC for the contract (req, hdr, json: tests/lib.sh)
GZ=tests/data/traces/kineto-rocm-mi250-toy.json.gz

start

# ---- upload, gzipped ----------------------------------------------------------
req POST /traces --data-binary @"$GZ" -H 'Content-Type: application/gzip'
check "POST /traces (gzip): 201" [ "$CODE" = 201 ]
ID=$(json "$BODY" 'd["id"]')
check "201: Location is /traces/{id}" [ "$(hdr Location)" = "/traces/$ID" ]
check "201: the measurement is the result, two steps" [ "$(json "$BODY" 'd["result"]["format"], len(d["result"]["steps"])')" = "chrome-trace 2" ]
check "the same as mfu trace reads from the file" python3 -c "
import json, subprocess, sys
a = json.load(open(sys.argv[1]))['result']
b = json.loads(subprocess.run([sys.argv[2], 'trace', sys.argv[3]], capture_output=True, text=True).stdout)
assert a == b, (a['summary'], b['summary'])" "$BODY" "$MFU" "$GZ"
req POST /traces --data-binary @"$GZ" -H 'Content-Type: application/gzip'
check "the same upload again: 200, the same id" [ "$CODE $(json "$BODY" 'd["id"]')" = "200 $ID" ]
req GET "/traces/$ID"
check "GET /traces/{id}: 200 done" [ "$CODE $(json "$BODY" 'd["status"]')" = "200 done" ]
ET=$(hdr ETag)
req GET "/traces/$ID" -H "If-None-Match: $ET"
check "GET /traces/{id} with its ETag: 304" [ "$CODE" = 304 ]

# ---- plain JSON, a marker ------------------------------------------------------
gzip -dc "$GZ" >"$T/plain.json"
req POST /traces --data-binary @"$T/plain.json" -H 'Content-Type: application/json'
check_sh "POST /traces (plain JSON): 201, another id (other bytes)" '[ "$1" = 201 ] && [ -n "$2" ] && [ "$2" != "$3" ]' \
    "$CODE" "$(json "$BODY" 'd["id"]')" "$ID"
check "plain and gzipped measure the same" [ "$(json "$BODY" 'd["result"]["summary"]["step_time_s"]')" = "$(json "$T/b.1" 'd["result"]["summary"]["step_time_s"]')" ]
req POST '/traces?marker=ProfilerStep%231' --data-binary @"$GZ" -H 'Content-Type: application/gzip'
check "?marker=ProfilerStep#1: one step, its own id" [ "$CODE $(json "$BODY" 'len(d["result"]["steps"])')" = "201 1" ]

# ---- refusals --------------------------------------------------------------------
req POST /traces --data-binary @"$GZ" -H 'Content-Type: text/plain'
check "text/plain: 415" [ "$CODE" = 415 ]
printf '{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1, "dur": 5}' >"$T/trunc.json"
req POST /traces --data-binary @"$T/trunc.json" -H 'Content-Type: application/json'
check_sh "a truncated trace: 422 naming the byte" '[ "$1" = 422 ] && grep -q "byte [0-9]" "$2"' "$CODE" "$BODY"
req POST /traces -H 'Content-Type: application/json' --data-binary ''
check "an empty body: 400" [ "$CODE" = 400 ]
head -c 1200000 /dev/zero >"$T/big"
req POST /traces --data-binary @"$T/big" -H 'Content-Type: application/octet-stream'
check "beyond --max-trace-bytes: 413" [ "$CODE" = 413 ]
req POST '/traces?marker=' --data-binary @"$GZ" -H 'Content-Type: application/gzip'
check "an empty marker: 400" [ "$CODE" = 400 ]

# ---- a search with measured.trace ------------------------------------------------
# the configuration examples/measured.json ran, its own prediction drawn as a
# trace (pinned search, rank 1), GEMMs made 20 % slower and the step longer by
# as much: the run that "measured" it
python3 - "$T" <<'EOF'
import json, sys
t = sys.argv[1]
r = json.load(open('examples/measured.json'))
c = r['measured']['config']
fix = dict(c['parallel'])
fix.update({k: c[k] for k in ('schedule', 'vpp', 'mbs', 'recompute')})
json.dump(dict(r, search={'fix': fix, 'top_k': 1}, measured=None) if False else
          {k: v for k, v in dict(r, search={'fix': fix, 'top_k': 1}).items() if k != 'measured'},
          open(t + '/pinned.json', 'w'))
EOF
"$MFU" search "$T/pinned.json" --export-trace "$T/pred.json" >"$T/pinned.out"
check "the pinned search draws its configuration" [ -s "$T/pred.json" ]
python3 - "$T" <<'EOF'
import json, sys
t = sys.argv[1]
d = json.load(open(t + '/pred.json'))
import bisect
ev = [e for e in d['traceEvents'] if e['name'] != 'ProfilerStep#1']
gemms = sorted((e['ts'] + e['dur'], 0.2 * e['dur']) for e in ev if 'gemm' in e['name'])
ends = [g[0] for g in gemms]
acc = [0.0]
for g in gemms:
    acc.append(acc[-1] + g[1])
extra = acc[-1]
for e in ev:
    # every event after a GEMM's end moves by what the GEMMs before it grew
    k = bisect.bisect_right(ends, e['ts'] + 1e-9)
    grow = 0.2 * e['dur'] if 'gemm' in e['name'] else 0.0
    e['ts'] += acc[k]
    e['dur'] += grow
for e in d['traceEvents']:
    if e['name'] == 'ProfilerStep#1':
        e['dur'] += extra
json.dump(d, open(t + '/slow.json', 'w'))
json.dump({'gemm_extra_s': extra * 1e-6}, open(t + '/slow.expect.json', 'w'))
EOF
req POST /traces --data-binary @"$T/slow.json" -H 'Content-Type: application/json'
check "the slow run's trace: 201" [ "$CODE" = 201 ]
SLOW=$(json "$BODY" 'd["id"]')
python3 - "$T" "$SLOW" <<'EOF'
import json, sys
t, sid = sys.argv[1], sys.argv[2]
r = json.load(open('examples/measured.json'))
del r['measured']['step_time_s']
r['measured']['trace'] = sid
json.dump(r, open(t + '/msearch.json', 'w'))
r['measured']['trace'] = '0' * 64
json.dump(r, open(t + '/munknown.json', 'w'))
EOF
req POST /search --data-binary @"$T/msearch.json" -H 'Content-Type: application/json' -H 'Prefer: wait=60'
check "POST /search with measured.trace (an id): 200 done" [ "$CODE $(json "$BODY" 'd["status"]')" = "200 done" ]
check "the gap lands on gemm (the 20 % added), nothing else moves" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['result']['measured']
want = json.load(open(sys.argv[2]))['gemm_extra_s']
gap = {g['name']: g['seconds'] for g in d['trace']['gap']}
assert abs(gap['gemm'] - want) <= 1e-6 * max(1.0, want), (gap['gemm'], want)
assert all(abs(v) < 1e-6 for k, v in gap.items() if k != 'gemm'), gap
assert d['trace']['difference']['largest'] == 'gemm'
assert any(k.startswith('comm_') and k[5:] in ('tp', 'dp', 'pp', 'cp', 'ep', 'fsdp') for k in gap), gap
assert abs(d['step_time_s'] - d['trace']['step_time_s']) < 1e-9" "$BODY" "$T/slow.expect.json"
req POST /search --data-binary @"$T/munknown.json" -H 'Content-Type: application/json'
check "an unknown trace id: 422 at /measured/trace" [ "$CODE $(json "$BODY" 'd["errors"][0]["pointer"]')" = "422 /measured/trace" ]

req POST /roofline --data-binary @"$T/msearch.json" -H 'Content-Type: application/json'
check "POST /roofline with measured: 422 at /measured (it belongs to a configuration: /search)" [ "$CODE $(json "$BODY" 'd["errors"][0]["pointer"]')" = "422 /measured" ]

# ---- a calibration run with a trace ------------------------------------------------
python3 - "$T" "$SLOW" <<'EOF'
import json, sys
t, sid = sys.argv[1], sys.argv[2]
r = json.load(open(t + '/msearch.json'))
json.dump({'runs': [{'id': 'traced', 'request': r}], 'parameters': ['gemm_scale', 'step_overhead_s']},
          open(t + '/cal.json', 'w'))
EOF
req POST /calibrate --data-binary @"$T/cal.json" -H 'Content-Type: application/json'
check "POST /calibrate, a run with measured.trace: 200 with its GEMM time fitted" [ "$CODE $(json "$BODY" '"gemm" in d["runs"][0]["trace_components"]')" = "200 True" ]
check "... GEMMs 20 % slower: gemm_scale down by 1/1.2 (within 2 %)" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = {q['name']: q for q in d['parameters']}['gemm_scale']
r = p['value'] / p['prior']
assert abs(r * 1.2 - 1) < 0.02, r" "$BODY"

# ---- durable: kill -9, restart, still there ----------------------------------------
kill -9 "$PID"; wait "$PID" 2>/dev/null; PID=""
start
req GET "/traces/$ID"
check "after kill -9 and a restart: GET /traces/{id} 200" [ "$CODE" = 200 ]

kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""

# ---- the contract ---------------------------------------------------------------------
add_checker oas_check 20 python3 tests/integration/oas_check.py openapi.yaml "$REC"
if command -v node >/dev/null 2>&1 && [ -d tools/lint/node_modules/ajv ]; then
    add_checker schema_check.cjs 20 node tools/lint/schema_check.cjs openapi.yaml "$REC"
else
    skip "traces_http.sh strict-typed schema check (node or tools/lint/node_modules missing)"
fi
if [ "$fail" -ne 0 ]; then echo "--- daemon log (tail)"; tail -n 20 "$LOG"; fi
finish
