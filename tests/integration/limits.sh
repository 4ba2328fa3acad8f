#!/bin/bash
# tests/integration/limits.sh -- every limit of issue 6 item 3, explicit and
# tested against the real build/mfud (and build/mfu where it applies):
#  1. body size: over --max-body -> 413 (with Content-Length and chunked);
#  2. JSON depth (API_MAX_DEPTH 64): deeper -> 422 with the pointer of the
#     first too-deep container, also at 3000 levels (jansson alone would say
#     400 "maximum parsing depth"), on /search, /roofline and in the CLI;
#  3. strings and keys up to API_MAX_STRING (4096) bytes, arrays up to
#     API_MAX_ARRAY (100000) elements, objects up to API_MAX_MEMBERS (4096):
#     beyond -> 422 with the pointer;
#  4. devices up to 2^20 (2^20 + 1 -> 422 /devices), layers up to 100000,
#     experts up to 65536 (IR and hf_config) -> 422 with their pointers;
#  5. search time budget: devices 2^20 with a default deadline_s (60) on a
#     daemon with --max-search-s 0.2 finishes in seconds with truncated true
#     and truncated_by "deadline_s"; the request's own deadline_s and
#     max_evaluations truncate too;
#  6. numbers are finite: pathological but valid requests answer 200 or
#     422, never 500, and their JSON has no NaN/Infinity;
#  7. slowloris: connections trickling a request header byte by byte are
#     closed after --conn-timeout (2 s) while a normal client is answered;
#  8. --max-conns: more idle connections than the limit do not stop an
#     established keep-alive client, and a new client is served once the
#     request deadline frees the slots; the daemon stays up.
# The queue limit (503 + Retry-After) is tested in http.sh ("503 when the
# queue is full"); not repeated here. Ends with "N passed, N failed"; ~20 s.
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFUD" ]; then echo "FAIL: $MFUD not built"; fail=1; finish; fi
# the interpreter itself, not a version manager's shim: ~0.07 s a start, not ~0.3
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -x "${PY:-}" ] || PY=python3
unset MFUD_MAX_BODY MFUD_MAX_CONNS MFUD_CONN_TIMEOUT MFUD_MAX_SEARCH_S MFUD_AUTH_TOKEN

LOG=$T/log
"$MFUD" --port 0 --db "$T/mfud.db" --workers 2 --max-body 262144 --max-conns 8 \
    --conn-timeout 2 --max-search-s 0.2 2>"$LOG" &
PID=$!
wait_port "$LOG"
if [ -z "$PORT" ]; then bad "daemon did not start"; cat "$LOG"; finish; fi
BASE=http://127.0.0.1:$PORT

# req METHOD PATH [curl args...] (tests/lib.sh) -> CODE, the body in $BODY,
# the headers in $HDR, every response recorded for the contract check below
post() { local p=$1 f=$2; shift 2; req POST "$p" -H 'Content-Type: application/json' --data-binary @"$f" "$@"; }
# jq-like: js FILE EXPR (d is the document)
js() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
perr() { js "$BODY" 'd["errors"][0]["pointer"]'; }
alive() { kill -0 "$PID" 2>/dev/null && [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$BASE/healthz")" = 200 ]; }

# gen NAME PYTHON-EXPR: write json.dumps(EXPR) to $T/NAME.json; base() is a
# small valid request (llama3-8b on 8 H100s), deep(n) n nested arrays; compact.
gen() {
    "$PY" - "$T/$1.json" "$2" <<'EOF'
import json, sys
def base(**kw):
    r = {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 8,
         "training": {"seq_len": 2048, "global_batch_tokens": 262144}, "search": {"top_k": 2}}
    r.update(kw)
    return r
def deep(n):  # n nested arrays, spliced in as text (json.dumps recurses)
    return "@DEEP%d@" % n
def ir(**kw):
    m = {"name": "t", "d_model": 1024, "vocab": 32000, "norm": "rmsnorm", "position": "rope",
         "layers": [{"count": 4, "attention": {"type": "mha", "n_heads": 8},
                     "mlp": {"type": "dense", "ffn_dim": 4096}}]}
    m.update(kw)
    return m
import re
v = eval(sys.argv[2])
t = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
t = re.sub(r'"@DEEP(\d+)@"', lambda m: "[" * int(m.group(1)) + "0" + "]" * int(m.group(1)), t)
open(sys.argv[1], "w").write(t)
EOF
}

# ---- 1. body size -------------------------------------------------------------
echo "[section 1 at ${SECONDS}s]" >&2
gen big '"{\"model\": \"" + "x" * 300000 + "\"}"'
# Expect: 100-continue, as clients send with large bodies: the 413 comes on
# the headers alone. (Without it the answer races the upload: the daemon
# answers and closes while curl is still sending, and a loaded machine can
# turn that into a reset, curl code 000.)
post /search "$T/big.json" -H 'Expect: 100-continue'
check "413 over --max-body (Content-Length) ($CODE)" [ "$CODE" = 413 ]
check "413 is problem+json" bash -c "grep -qi '^Content-Type: application/problem+json' '$HDR'"
req POST /search -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big.json"
check "413 over --max-body (chunked, no Content-Length) ($CODE)" [ "$CODE" = 413 ]

# ---- 2. depth -----------------------------------------------------------------
echo "[section 2 at ${SECONDS}s]" >&2
# top-level object 1, /model 2, /model/x 3: deep(62) under it is level 64
gen d64 'base(model={"preset": "llama3-8b", "x": deep(62)})'
gen d65 'base(model={"preset": "llama3-8b", "x": deep(63)})'
gen d3000 'base(model={"preset": "llama3-8b", "x": deep(3000)})'
P65="/model/x$(printf '/0%.0s' $(seq 1 62))"
post /search "$T/d64.json"
check "64 levels: not a depth error ($CODE)" bash -c "! grep -q 'deeper than' '$BODY'"
post /search "$T/d65.json"
check "65 levels: 422 ($CODE)" [ "$CODE" = 422 ]
check "65 levels: pointer at the 65th container" [ "$(perr)" = "$P65" ]
check "65 levels: detail names the limit" bash -c "grep -q 'deeper than 64 levels' '$BODY'"
post /search "$T/d3000.json"
check "3000 levels: 422, not jansson's 400 ($CODE)" [ "$CODE" = 422 ]
check "3000 levels: same pointer" [ "$(perr)" = "$P65" ]
post /roofline "$T/d3000.json"
check "/roofline 3000 levels: 422 ($CODE)" [ "$CODE" = 422 ]
if [ -x "$MFU" ]; then
    "$MFU" key "$T/d3000.json" >/dev/null 2>"$T/cli.err"; rc=$?
    check "CLI: too deep exits 2 ($rc)" [ "$rc" = 2 ]
    check "CLI: same pointer" [ "$(js "$T/cli.err" 'd["errors"][0]["pointer"]')" = "$P65" ]
fi

# ---- 3. strings, keys, arrays, objects ------------------------------------------
echo "[section 3 at ${SECONDS}s]" >&2
gen s1 'base(search={"rank_by": "e" * 4097})'
post /search "$T/s1.json"
check "string of 4097 bytes: 422 ($CODE)" [ "$CODE" = 422 ]
check "string: pointer /search/rank_by" [ "$(perr)" = /search/rank_by ]
check "string: detail names the limit" bash -c "grep -q 'limit of 4096' '$BODY'"
gen s2 'base(search={"rank_by": "e" * 4096})'
post /search "$T/s2.json"
check "string of 4096 bytes: not a length error ($CODE)" bash -c "[ '$CODE' = 422 ] && ! grep -q 'longer than' '$BODY'"
gen k1 'base(hardware={"preset": "h100-sxm", "k" * 5000: 1})'
post /search "$T/k1.json"
check "key of 5000 bytes: 422 ($CODE)" [ "$CODE" = 422 ]
check "key: pointer under /hardware/" [ "$(perr | cut -c1-13)" = /hardware/kkk ]
gen a1 'base(model=ir(layers=[0] * 100001))'
post /search "$T/a1.json"
check "array of 100001: 422 ($CODE)" [ "$CODE" = 422 ]
check "array: pointer /model/layers" [ "$(perr)" = /model/layers ]
gen o1 'base(measured={"k%d" % i: i for i in range(4097)})'
post /search "$T/o1.json"
check "object of 4097 members: 422 ($CODE)" [ "$CODE" = 422 ]
check "object: pointer /measured" [ "$(perr)" = /measured ]

# ---- 4. devices, layers, experts ---------------------------------------------------
echo "[section 4 at ${SECONDS}s]" >&2
gen dev1 'base(devices=2**20 + 1)'
post /search "$T/dev1.json"
check "devices 2^20+1: 422 /devices ($CODE)" bash -c "[ '$CODE' = 422 ] && [ '$(perr)' = /devices ]"
gen lay1 'base(model=ir(layers=[{"count": 100001, "attention": {"type": "mha", "n_heads": 8}, "mlp": {"type": "dense", "ffn_dim": 4096}}]))'
post /search "$T/lay1.json"
check "layers 100001 (IR): 422 ($CODE)" [ "$CODE" = 422 ]
check "layers: pointer /model/layers/0/count ($(perr))" [ "$(perr)" = /model/layers/0/count ]
gen lay2 'base(model={"hf_config": {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 100001, "num_attention_heads": 8, "intermediate_size": 4096, "vocab_size": 32000}})'
post /search "$T/lay2.json"
check "layers 100001 (hf_config): 422 /model/hf_config/num_hidden_layers ($CODE $(perr))" \
    bash -c "[ '$CODE' = 422 ] && [ '$(perr)' = /model/hf_config/num_hidden_layers ]"
gen exp1 'base(model=ir(layers=[{"count": 4, "attention": {"type": "mha", "n_heads": 8}, "mlp": {"type": "moe", "n_experts": 65537, "top_k": 2, "expert_ffn_dim": 1024}}]))'
post /search "$T/exp1.json"
check "experts 65537 (IR): 422 /model/layers/0/mlp/n_experts ($CODE $(perr))" \
    bash -c "[ '$CODE' = 422 ] && [ '$(perr)' = /model/layers/0/mlp/n_experts ]"
gen exp2 'base(model={"preset": "mixtral-8x7b", "num_local_experts": 65537})'
post /search "$T/exp2.json"
check "experts 65537 (hf_config override): 422 ($CODE $(perr))" \
    bash -c "[ '$CODE' = 422 ] && [ '$(perr)' = /model/num_local_experts ]"

# ---- 5. search space and time budget --------------------------------------------------
echo "[section 5 at ${SECONDS}s]" >&2
# a space no search covers in 0.2 s: 2^20 devices, a batch range of a
# million sequences, every configuration (not only launchable ones)
gen huge 'base(model={"preset": "llama3-70b"}, devices=2**20, training={"seq_len": 8192}, search={"top_k": 3, "batch_seqs": [1, 1000000], "frameworks": ["any"]})'
t0=$(date +%s.%N)
post /search "$T/huge.json" -H 'Prefer: wait=20'
t1=$(date +%s.%N)
secs=$("$PY" -c "print(round($t1 - $t0, 2))")
check "devices 2^20, server cap 0.2 s: 200 in ${secs}s ($CODE)" bash -c "[ '$CODE' = 200 ] && "$PY" -c 'import sys; sys.exit(0 if $secs < 10 else 1)'"
check "cap: truncated true, truncated_by deadline_s" \
    [ "$(js "$BODY" 'd["result"]["search"]["truncated"], d["result"]["search"]["truncated_by"]')" = "(True, 'deadline_s')" ]
check "cap: the space size is reported ($(js "$BODY" 'd["result"]["search"]["space_size"]'))" \
    [ "$(js "$BODY" 'd["result"]["search"]["space_size"] > d["result"]["search"]["evaluated"] > 0')" = True ]
gen huge2 'base(model={"preset": "llama3-70b"}, devices=2**20, training={"seq_len": 8192}, search={"top_k": 3, "batch_seqs": [1, 1000000], "frameworks": ["any"], "deadline_s": 3600})'
id1=$(js "$BODY" 'd["id"]')
post /search "$T/huge2.json" -H 'Prefer: wait=20'
check "deadline_s 3600 clamped to the cap: the default's job, a cache hit ($CODE)" \
    bash -c "[ '$CODE' = 200 ] && [ '$(js "$BODY" 'd["id"]')' = '$id1' ]"
gen me 'base(devices=1024, search={"top_k": 3, "max_evaluations": 100})'
post /search "$T/me.json" -H 'Prefer: wait=20'
check "max_evaluations: truncated_by max_evaluations ($CODE)" \
    [ "$(js "$BODY" 'd["result"]["search"]["truncated_by"]')" = max_evaluations ]
gen dl 'base(model={"preset": "deepseek-v3"}, devices=2**20, training={"seq_len": 4096, "global_batch_tokens": 16777216}, search={"top_k": 3, "deadline_s": 0.05, "frameworks": ["any"], "batch_seqs": [1, 100000]})'
post /search "$T/dl.json" -H 'Prefer: wait=20'
check "request deadline_s 0.05 on 2^20 devices (MoE): truncated_by deadline_s ($CODE)" \
    [ "$(js "$BODY" 'd["result"]["search"]["truncated_by"]')" = deadline_s ]

# ---- 6. finite numbers ------------------------------------------------------------------
echo "[section 6 at ${SECONDS}s]" >&2
finite() { "$PY" -c '
import json, sys
def bad(x): raise ValueError(x)
json.load(open(sys.argv[1]), parse_constant=bad)' "$1" 2>/dev/null; }
n=0
for spec in \
    'base(hardware={"preset": "h100-sxm", "peak_flops": {"bf16": 1e6}})' \
    'base(hardware={"preset": "h100-sxm", "hbm_bandwidth": 1e-300})' \
    'base(hardware={"preset": "h100-sxm", "peak_flops": {"bf16": 1e300}})' \
    'base(model=ir(d_model=1, vocab=1, layers=[{"count": 1, "attention": {"type": "mha", "n_heads": 1}, "mlp": {"type": "dense", "ffn_dim": 1}}]), devices=1, training={"seq_len": 1, "global_batch_tokens": 1})' \
    'base(model=ir(d_model=2**24, vocab=2**24), devices=2**20, training={"seq_len": 2**24, "global_batch_tokens": 2**40}, search={"deadline_s": 0.05})' \
    'base(devices=997, training={"seq_len": 2**24, "global_batch_tokens": 2**24})'; do
    n=$((n + 1))
    gen "p$n" "$spec"
    for route in /roofline /search; do
        post "$route" "$T/p$n.json" -H 'Prefer: wait=20'
        check "pathological $n $route: 200/202/422, not $CODE" bash -c "[ '$CODE' = 200 ] || [ '$CODE' = 202 ] || [ '$CODE' = 422 ]"
        check "pathological $n $route: finite JSON" finite "$BODY"
    done
done

# ---- 7. slowloris -----------------------------------------------------------------------
echo "[section 7 at ${SECONDS}s]" >&2
# 6 connections send a partial request header, then one byte every 0.3 s (never
# idle for the 2 s timeout); each must be closed by the request deadline.
cat >"$T/slow.py" <<'EOF'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: ")
    socks.append(s)
t0, closed = time.time(), {}
while time.time() - t0 < 10 and len(closed) < n:
    time.sleep(0.3)
    for i, s in enumerate(socks):
        if i in closed: continue
        try:
            s.sendall(b"a")
            s.settimeout(0.001)
            try:
                if s.recv(100) == b"": closed[i] = time.time() - t0
            except socket.timeout: pass
        except OSError: closed[i] = time.time() - t0
print(len(closed), round(max(closed.values(), default=99), 2))
EOF
"$PY" "$T/slow.py" "$PORT" 6 >"$T/slow.out" &
SLOW=$!
sleep 0.5
ans=0
for _ in 1 2 3; do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/healthz")" = 200 ] && ans=$((ans + 1))
    sleep 0.3
done
check "a normal client is answered during the slowloris ($ans/3)" [ "$ans" = 3 ]
wait "$SLOW"
read -r nclosed tmax <"$T/slow.out"
check "all 6 trickling connections closed ($nclosed)" [ "$nclosed" = 6 ]
check "closed within conn-timeout + 1.5 s (${tmax}s)" "$PY" -c "import sys; sys.exit(0 if 2 <= $tmax <= 3.5 else 1)"
check "the daemon logged the closures" grep -q 'request not received in time' "$LOG"

# ---- 8. --max-conns -----------------------------------------------------------------------
echo "[section 8 at ${SECONDS}s]" >&2
# An established keep-alive client (1 of 8 slots) keeps being served while 12
# idle connections pile up beyond the limit; a new client is served once the
# request deadline frees their slots.
cat >"$T/conns.py" <<'EOF'
import http.client, socket, sys, time
port = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
def get():
    c.request("GET", "/healthz"); r = c.getresponse(); r.read(); return r.status
first = get()
idle = []
for _ in range(12):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        idle.append(s)
    except OSError:
        pass
time.sleep(0.2)
during = [get() for _ in range(5)]
t0 = time.time()
n = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
n.request("GET", "/healthz"); st = n.getresponse().status
print(first, sum(1 for x in during if x == 200), st, round(time.time() - t0, 2))
EOF
read -r first during newst newt <<<"$("$PY" "$T/conns.py" "$PORT" 2>/dev/null)"
check "established client: 200 before the flood (${first:-none})" [ "${first:-}" = 200 ]
check "established client: 5/5 answered during the flood (${during:-none})" [ "${during:-}" = 5 ]
check "new client served after the deadline frees slots (${newst:-none} in ${newt:-?}s)" \
    bash -c "[ '${newst:-}' = 200 ] && "$PY" -c 'import sys; sys.exit(0 if ${newt:-99} < 8 else 1)'"
check "daemon alive after all of the above" alive
check "no 500 logged" bash -c "! grep -q 'code=5[0-9][0-9]' '$LOG' || ! grep 'code=5[0-9][0-9]' '$LOG' | grep -vq 'code=503'"
# SIGTERM stops the watchdog thread and the daemon cleanly
kill -TERM "$PID"
rc=1
for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
if ! kill -0 "$PID" 2>/dev/null; then wait "$PID"; rc=$?; fi
check "SIGTERM: clean exit ($rc)" [ "$rc" = 0 ]
[ "$rc" = 0 ] && PID=""
# every answer above (the limits' 413s and 422s too) against openapi.yaml
add_checker oas_check 20 "$PY" tests/integration/oas_check.py openapi.yaml "$REC"
echo "note: oas_check.py over $(wc -l <"$REC") responses: $LINE"
finish
