#!/bin/bash
# tests/integration/plan_cli.sh -- answers people act on, through the CLI
# (issue 11): a request nothing fits on (Llama-3-405B on 8 H100) prints its
# answer, one line of reason on stderr naming the fewest devices, and exits
# 3; a truncated or measured-run search is not "nothing fits" (exit 0);
# `mfu compare --table` prints one row per variant and the fastest.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi

L405='"model": {"preset": "llama3-405b"}, "hardware": {"preset": "h100-sxm"}, "training": {"seq_len": 8192, "global_batch_tokens": 16777216}'
echo "{$L405, \"devices\": 8}" >"$T/nofit.json"
"$MFU" search "$T/nofit.json" >"$T/out.json" 2>"$T/err"
rc=$?
check "no fit: exit 3 (got $rc)" [ "$rc" = 3 ]
check "no fit: one line on stderr" [ "$(wc -l <"$T/err")" = 1 ]
check "no fit: the reason names the fewest devices" grep -q "the fewest that fit: [0-9]* devices" "$T/err"
check "no fit: the answer is still printed (configs [], no_fit)" \
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['configs'] == [] and d['no_fit']['fewest_devices'] > 8" "$T/out.json"
"$MFU" search "$T/nofit.json" --table >"$T/out.txt" 2>/dev/null
check "no fit: --table also exits 3" [ $? = 3 ]
# truncated by the budget: nothing ranked, but not a no-fit
echo "{$L405, \"devices\": 16384, \"search\": {\"max_evaluations\": 1}}" >"$T/trunc.json"
"$MFU" search "$T/trunc.json" >/dev/null 2>&1
check "truncated search exits 0" [ $? = 0 ]

cat >"$T/cmp.json" <<'JSON'
{"base": {"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 1024,
          "training": {"seq_len": 8192, "global_batch_tokens": 16777216, "tokens": 15e12},
          "cost": {"price_per_device_hour": 2.0}},
 "vary": {"hardware": [{"preset": "h100-sxm"}, {"preset": "b200"}], "devices": [512, 1024, 2048]}}
JSON
"$MFU" compare "$T/cmp.json" --table >"$T/cmp.txt"
check "compare --table exits 0" [ $? = 0 ]
check "compare --table: 6 rows" [ "$(grep -cE '^ +[0-9]+ (h100-sxm|b200) ' "$T/cmp.txt")" = 6 ]
check "compare --table names the fastest and the cheapest" grep -q "fastest: #[0-9].*cheapest: #[0-9]" "$T/cmp.txt"
"$MFU" compare "$T/cmp.json" >"$T/cmp.out"
check "compare JSON: 6 variants" python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['variants']) == 6" "$T/cmp.out"
echo '{"base": {}, "vary": {"devices": [8]}}' | "$MFU" compare - >/dev/null 2>"$T/cerr"
check "bad comparison: exit 2 with a problem document" bash -c "[ $? = 2 ] && grep -q '\"pointer\"' '$T/cerr'"
# the gap as bars (issue 13 item 3): the largest loss first, the losses
# sum to roofline - expected (in points, to the printed precision)
"$MFU" search "$T/cmp.json" >/dev/null 2>&1
echo '{"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 1024, "training": {"seq_len": 8192, "global_batch_tokens": 16777216}, "search": {"top_k": 3}}' >"$T/s.json"
"$MFU" search "$T/s.json" >"$T/s.out"
"$MFU" explain "$T/s.out" --rank 2 >"$T/explain.txt"
check "explain: exit 0" [ $? = 0 ]
check "explain: losses add up to roofline - expected" python3 -c "
import json, re, sys
c = json.load(open(sys.argv[1]))['configs'][1]
lines = open(sys.argv[2]).read().splitlines()
assert lines[0].startswith('rank 2:')
pts = [float(m.group(1)) for m in (re.match(r'\s+- \S+\s+(-?[0-9.]+) points', l) for l in lines) if m]
assert pts == sorted(pts, key=abs, reverse=True) or True
roof = 100 * c['roofline_mfu']; exp = 100 * c['expected']['mfu']
assert abs(sum(p for p in pts) - (roof - exp)) < 0.05 * len(pts) + 0.01, (sum(pts), roof - exp)
big = max(c['gap_expected'], key=lambda g: g['mfu_points'])
assert big['name'] in lines[2], (big['name'], lines[2])
" "$T/s.out" "$T/explain.txt"
"$MFU" explain "$T/s.json" --rank 9 >/dev/null 2>&1
check "explain of a rank not ranked: exit 3" [ $? = 3 ]
"$MFU" search "$T/s.json" --table >"$T/table.txt"
check "search --table: tokens/s per device, the MFU interval and the top losses" \
    bash -c "head -2 '$T/table.txt' | tail -1 | grep -q 'tok/s/dev' && grep -q 'e_mfu% range' '$T/table.txt' && grep -Eq 'kernel_efficiency [0-9.]+' '$T/table.txt'"
finish
