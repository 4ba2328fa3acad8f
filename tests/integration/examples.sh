#!/bin/bash
# tests/integration/examples.sh -- every file under examples/ runs and says
# something meaningful, so the examples the README points at cannot rot:
#   - each examples/*.json has a case here (a new file without one fails);
#   - through build/mfu: the exit code and a field of the answer (the ranked
#     layouts multiply to the devices, the roofline MFU is a fraction, the
#     comparison has its 6 variants with a time to train, the measured run
#     has its MFU, the calibration fits and its description runs a search);
#   - the flag mode gives the same cache key as search.json;
#   - every `build/mfu ...` line of the README's CLI section exits 0;
#   - through build/mfud: POST each request to its route, 200.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi
PY=${PYTHON:-python3}
E=examples
# jtrue FILE EXPR: EXPR (python, the document is d) is true
jtrue() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" 2>/dev/null; }
# run NAME EXPECTED_RC mfu-args...: stdout in $T/NAME.out, stderr in $T/NAME.err
run() {
    local name=$1 want=$2; shift 2
    "$MFU" "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    check "$name: mfu $* exits $want (got $rc)" [ "$rc" = "$want" ]
    [ "$rc" = "$want" ] || head -n 5 "$T/$name.err"
}

# ---- every example has a case ---------------------------------------------------
CASES="search.json search-async.json roofline.json qwen2.5-7b.config.json compare.json measured.json calibration.json"
for f in "$E"/*.json; do
    b=$(basename "$f")
    check "$b has a case in examples.sh" bash -c "case ' $CASES ' in *' $b '*) exit 0;; esac; exit 1"
    check "$b is valid JSON" jtrue "$f" True
done

# ---- through the CLI ------------------------------------------------------------------
run search 0 search "$E/search.json"
check "search: 5 layouts, each dp*fsdp*tp*pp*cp = 1024" jtrue "$T/search.out" \
    'len(d["configs"]) == 5 and all(c["parallel"]["dp"] * c["parallel"]["fsdp"] * c["parallel"]["tp"] * c["parallel"]["pp"] * c["parallel"]["cp"] == 1024 for c in d["configs"])'
check "search: the best has an expected MFU in (0, 1)" jtrue "$T/search.out" '0 < d["configs"][0]["expected"]["mfu"] < 1'
run search_table 0 search "$E/search.json" --table
check "search --table: 5 ranked rows" [ "$(grep -cE '^ +[1-5] ' "$T/search_table.out")" = 5 ]
check "search.json = its flags (mfu key)" [ "$("$MFU" key "$E/search.json")" = \
    "$("$MFU" key --model llama3-70b --hw h100-sxm --devices 1K --seq 8K --batch-tokens 16M --top-k 5)" ]

run async 0 search "$E/search-async.json"
check "search-async: mixtral-8x7b on 256 devices, ranked" jtrue "$T/async.out" \
    'd["devices"] == 256 and len(d["configs"]) > 0 and d["model"]["params_total"] > 4e10'

run roofline 0 roofline "$E/roofline.json"
check "roofline: MFU in (0, 1], operators listed" jtrue "$T/roofline.out" \
    '0 < d["roofline"]["mfu"] <= 1 and len(d["roofline"]["ops"]) > 10'

run hf 0 roofline --hf "$E/qwen2.5-7b.config.json" --hw h200 --seq 4096 --batch-tokens 1M
# Qwen2.5-7B's model card: 7.61 B parameters
check "hf config: Qwen2.5-7B resolves to 7.61 B parameters" jtrue "$T/hf.out" \
    'abs(d["model"]["params_total"] / 7.61e9 - 1) < 0.005 and d["roofline"]["global_batch_tokens"] == 1048576'

run compare 0 compare "$E/compare.json"
check "compare: 6 variants, each with a time and cost to train" jtrue "$T/compare.out" \
    'len(d["variants"]) == 6 and all(v["time_to_train"]["cost"] > 0 for v in d["variants"])'
run compare_table 0 compare "$E/compare.json" --table
check "compare --table names the fastest and the cheapest" grep -q "fastest: #[0-9].*cheapest: #[0-9]" "$T/compare_table.out"

run measured 0 search "$E/measured.json"
check "measured: the published step time, a measured MFU in (0, 1) below the bound's" jtrue "$T/measured.out" \
    'd["measured"]["step_time_s"] == 2.177 and 0 < d["measured"]["mfu"] < d["measured"]["system_mfu"] < 1'
check "measured: the gap is named, with the unexplained rest" jtrue "$T/measured.out" \
    '"unexplained" in [g["name"] for g in d["measured"]["gap"]]'

run calibrate 0 calibrate "$E/calibration.json"
check "calibrate: both parameters determined, fitted within 5 % mean" jtrue "$T/calibrate.out" \
    'all(p["determined"] for p in d["parameters"]) and len(d["runs"]) == 6 and d["summary"]["fitted"]["mean_abs_error"] < 0.05'
run calibrate_hw 0 calibrate "$E/calibration.json" --hardware
run calibrated_search 0 search --model llama3-8b --hw-file "$T/calibrate_hw.out" --devices 64 --seq 4K --batch-tokens 2M --top-k 3
check "the fitted description runs a search (--hw-file)" jtrue "$T/calibrated_search.out" 'len(d["configs"]) == 3'

# ---- the README's CLI lines -------------------------------------------------------------
n=0
while IFS= read -r line; do
    cmd=${line%%#*}
    n=$((n + 1))
    sh -c "$cmd" >/dev/null 2>"$T/readme.err"
    rc=$?
    check "README: $cmd exits 0 (got $rc)" [ "$rc" = 0 ]
    [ "$rc" = 0 ] || head -n 3 "$T/readme.err"
done < <(sed -n '/^## Using the CLI/,/^## /p' README.md | grep -E '^build/mfu ')
check "README's CLI section has its mfu lines ($n)" [ "$n" -ge 8 ]

# ---- through the daemon -------------------------------------------------------------------
if [ ! -x "$MFUD" ]; then
    bad "$MFUD not built"
elif ! command -v curl >/dev/null 2>&1; then
    skip "examples.sh HTTP part (curl not installed: Debian package curl)"
else
    "$MFUD" --port 0 --db "$T/mfud.db" --workers 2 2>"$T/log" &
    PID=$!
    wait_port "$T/log"
    if [ -z "$PORT" ]; then
        bad "daemon did not start"; cat "$T/log"
    else
        for pair in search:search.json search:search-async.json roofline:roofline.json compare:compare.json \
            search:measured.json calibrate:calibration.json; do
            route=${pair%%:*} f=${pair#*:}
            code=$(curl -s -o "$T/http.out" -w '%{http_code}' --max-time 60 -H 'Content-Type: application/json' \
                -H 'Prefer: wait=60' -d @"$E/$f" "$BASE/$route")
            check "POST /$route -d @examples/$f: 200 (got $code)" [ "$code" = 200 ]
        done
        kill -TERM "$PID" 2>/dev/null
        wait "$PID" 2>/dev/null
        PID=""
    fi
fi
finish
