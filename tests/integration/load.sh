#!/bin/bash
# tests/integration/load.sh -- bounded load on loopback (issue 6 item 5):
# wrk at 256 concurrent connections for a few seconds against build/mfud,
# mixing cached GET /results/{id} (60%), cache-hit POST /search (25%) and
# new, distinct searches with Prefer: respond-async (15%; a per-thread
# counter makes every body unique). Pass criteria:
#   - 0 socket errors (connect, read, write, timeout);
#   - no 5xx other than the designed 503, and every 503 carries Retry-After
#     (new searches fill the queue: --queue-limit 64, one worker);
#   - every status is one the contract allows on these routes (200/202/503);
#   - RSS after the run <= RSS before + 64 MiB (LOAD_RSS_SLACK_KB): the
#     rendered-result cache is capped at 16 MiB here (--mem-cache), so the
#     bound is what the rest may grow by, not the default 64 MiB cache;
#   - the daemon still answers /healthz and a cached GET afterwards, and
#     SIGTERM then stops it cleanly.
# Prints the figures. Ends with "N passed, N failed"; about 15 s.
#   LOAD_DURATION=5s LOAD_CONNS=256 LOAD_THREADS=2
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
DURATION=${LOAD_DURATION:-5s}
CONNS=${LOAD_CONNS:-256}
THREADS=${LOAD_THREADS:-2}
SLACK_KB=${LOAD_RSS_SLACK_KB:-65536}
if [ ! -x "$MFUD" ]; then echo "FAIL: $MFUD not built"; fail=1; finish; fi
if ! command -v wrk >/dev/null 2>&1; then
    skip "load.sh (wrk not installed: Debian package wrk)"
    finish
fi
# wrk needs one descriptor per connection; the daemon too.
ulimit -n 4096 2>/dev/null || true

"$MFUD" --port 0 --db "$T/mfud.db" --workers 1 --queue-limit 64 --max-conns 1024 --mem-cache 16777216 \
    --log-level info 2>"$T/log" &
PID=$!
wait_port "$T/log"
if [ -z "$PORT" ]; then bad "daemon did not start"; cat "$T/log"; finish; fi
BASE=http://127.0.0.1:$PORT

# Warm the cache: four finished results, their ids and bodies.
IDS=()
for d in 8 16 32 64; do
    body="{\"model\": {\"preset\": \"llama3-8b\"}, \"hardware\": {\"preset\": \"h100-sxm\"}, \"devices\": $d, \"training\": {\"seq_len\": 2048, \"global_batch_tokens\": 1048576}, \"search\": {\"top_k\": 10}}"
    printf '%s' "$body" >"$T/cached.$d.json"
    id=$(curl -s --max-time 60 -H 'Content-Type: application/json' -H 'Prefer: wait=60' \
        --data-binary @"$T/cached.$d.json" "$BASE/search" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"] if d.get("status")=="done" else "")' 2>/dev/null)
    if [ -z "$id" ]; then bad "warm-up search devices=$d did not finish"; finish; fi
    IDS+=("$id")
done
# Touch every path once so lazily allocated state is in the "before" RSS.
for id in "${IDS[@]}"; do curl -s -o /dev/null "$BASE/results/$id"; curl -s -o /dev/null -H 'Accept: text/csv' "$BASE/results/$id"; done
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status"; }
RSS0=$(rss)

cat >"$T/mix.lua" <<LUA
local ids = {"${IDS[0]}", "${IDS[1]}", "${IDS[2]}", "${IDS[3]}"}
local bodies = {}
local threads = {}
local counter = 0
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  for i, d in ipairs({8, 16, 32, 64}) do
    local f = io.open("$T/cached." .. d .. ".json", "r")
    bodies[i] = f:read("*a")
    f:close()
  end
  counts = {}
  no_retry_after = 0
  kinds = {get = 0, hit = 0, new = 0}
  math.randomseed(tid * 7919 + os.time())
end
local json_h = {["Content-Type"] = "application/json"}
local async_h = {["Content-Type"] = "application/json", ["Prefer"] = "respond-async"}
function request()
  local r = math.random()
  if r < 0.60 then
    kinds.get = kinds.get + 1
    return wrk.format("GET", "/results/" .. ids[math.random(4)])
  elseif r < 0.85 then
    kinds.hit = kinds.hit + 1
    return wrk.format("POST", "/search", json_h, bodies[math.random(4)])
  end
  kinds.new = kinds.new + 1
  counter = counter + 1
  local gbt = 2048 * (600 + tid * 1000000 + counter)
  local body = '{"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, ' ..
    '"devices": 8, "training": {"seq_len": 2048, "global_batch_tokens": ' .. gbt ..
    '}, "search": {"top_k": 3}}'
  return wrk.format("POST", "/search", async_h, body)
end
function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  if status == 503 and headers["Retry-After"] == nil then
    no_retry_after = no_retry_after + 1
  end
end
function done(summary, latency, requests)
  local total = {}
  local nra = 0
  local k = {get = 0, hit = 0, new = 0}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("counts")) do total[s] = (total[s] or 0) + n end
    nra = nra + t:get("no_retry_after")
    local tk = t:get("kinds")
    for name, n in pairs(tk) do k[name] = k[name] + n end
  end
  local e = summary.errors
  io.write(string.format("RESULT requests=%d seconds=%.2f rps=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  io.write(string.format("SOCKET connect=%d read=%d write=%d timeout=%d\n",
    e.connect, e.read, e.write, e.timeout))
  io.write(string.format("MIX get=%d hit_post=%d new_post=%d\n", k.get, k.hit, k.new))
  for s, n in pairs(total) do io.write(string.format("STATUS %d %d\n", s, n)) end
  io.write(string.format("NO_RETRY_AFTER %d\n", nra))
end
LUA

echo "load: mfud on 127.0.0.1:$PORT, wrk -t$THREADS -c$CONNS -d$DURATION ($(nproc) CPUs), RSS before ${RSS0} kB"
wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --timeout 10s -s "$T/mix.lua" "$BASE" >"$T/wrk.out" 2>&1
wrk_rc=$?
RSS1=$(rss)
grep -E '^(RESULT|SOCKET|MIX|STATUS|NO_RETRY_AFTER)' "$T/wrk.out" | sed 's/^/  /'
check "wrk ran (rc $wrk_rc)" [ "$wrk_rc" = 0 ]
read -r _ c r w to <<<"$(grep '^SOCKET' "$T/wrk.out" | sed 's/[a-z]*=//g')"
check "0 socket errors (connect ${c:-?} read ${r:-?} write ${w:-?} timeout ${to:-?})" \
    [ "${c:-1}" = 0 -a "${r:-1}" = 0 -a "${w:-1}" = 0 -a "${to:-1}" = 0 ]
n_req=$(sed -n 's/^RESULT requests=\([0-9]*\).*/\1/p' "$T/wrk.out")
check "requests were served (${n_req:-0})" [ "${n_req:-0}" -gt 1000 ]
unexpected=$(awk '$1 == "STATUS" && $2 != 200 && $2 != 202 && $2 != 503 { printf "%s:%s ", $2, $3 }' "$T/wrk.out")
check "only 200/202/503 answered${unexpected:+ (also $unexpected)}" [ -z "$unexpected" ]
n5xx=$(awk '$1 == "STATUS" && $2 >= 500 && $2 != 503 { n += $3 } END { print n + 0 }' "$T/wrk.out")
check "0 5xx other than 503 ($n5xx)" [ "$n5xx" = 0 ]
nra=$(sed -n 's/^NO_RETRY_AFTER \([0-9]*\)/\1/p' "$T/wrk.out")
check "every 503 has Retry-After (${nra:-?} without)" [ "${nra:-1}" = 0 ]
n202=$(awk '$1 == "STATUS" && $2 == 202 { print $3 }' "$T/wrk.out")
check "new searches were accepted (${n202:-0} x 202)" [ "${n202:-0}" -gt 0 ]
echo "  RSS before ${RSS0} kB, after ${RSS1} kB (+$((RSS1 - RSS0)) kB; bound +${SLACK_KB} kB)"
check "RSS after <= RSS before + ${SLACK_KB} kB" [ "$RSS1" -le $((RSS0 + SLACK_KB)) ]
check "daemon alive after the load" kill -0 "$PID"
check "healthz 200 after the load" [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/healthz")" = 200 ]
check "cached GET 200 after the load" [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$BASE/results/${IDS[0]}")" = 200 ]
# SIGTERM with the queue still full: a clean, prompt exit.
stop_term
check "SIGTERM after the load exits 0 within 10 s (rc $RC)" [ "$RC" = 0 ]
if grep -q 'level=error' "$T/log"; then bad "errors in the daemon log"; grep 'level=error' "$T/log" | head -n 5; fi
if [ "$fail" -ne 0 ]; then echo "--- wrk"; tail -n 20 "$T/wrk.out"; echo "--- daemon log (tail)"; tail -n 10 "$T/log"; fi
finish
