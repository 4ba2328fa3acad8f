#!/bin/bash
# tests/integration/trace.sh -- profiler traces through the CLI (issue 12):
# the three real traces in ../shared/traces against hand counts computed
# independently in Python (trace_check.py); a malformed trace gives a
# problem document naming the byte (exit 2); `mfu search --export-trace`
# writes a trace that `mfu trace` reads back with the predicted step time.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi
if ! command -v python3 >/dev/null 2>&1; then skip "trace.sh (python3 not installed: Debian package python3)"; finish; fi

# the vendored small trace always; the two large ones when ../shared is beside the clone
TRACES="tests/data/traces/kineto-rocm-mi250-toy.json.gz $(ls ../shared/traces/kineto-16rank-rank0.json.gz ../shared/traces/kineto-ddp-2rank-rank1.json.gz 2>/dev/null)"
[ -n "$(ls ../shared/traces/*.json.gz 2>/dev/null)" ] || skip "trace.sh large traces (../shared/traces not present beside the clone)"
if [ -n "$TRACES" ]; then
    add_checker trace_check.py 20 python3 tests/integration/trace_check.py "$MFU" $TRACES
fi

# malformed: truncated, not JSON
printf '{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 1, "dur": 5}' >"$T/trunc.json"
"$MFU" trace "$T/trunc.json" >/dev/null 2>"$T/err"
check "truncated trace: exit 2" [ $? = 2 ]
check "truncated trace: the problem names the byte" grep -q "byte [0-9]" "$T/err"
echo 'hello' | gzip >"$T/hello.json.gz"
"$MFU" trace "$T/hello.json.gz" >/dev/null 2>"$T/err"
check "gzipped non-JSON: exit 2, not JSON" bash -c "[ $? = 2 ] && grep -q 'not JSON' '$T/err'"
"$MFU" trace "$T/none.json" >/dev/null 2>&1
check "missing trace file: exit 66" [ $? = 66 ]
"$MFU" trace >/dev/null 2>&1
check "no trace file: usage, exit 64" [ $? = 64 ]

# the prediction as a trace, read back
"$MFU" search examples/search.json --export-trace "$T/pred.json" --rank 2 >"$T/search.json"
check "search --export-trace: exit 0" [ $? = 0 ]
"$MFU" trace "$T/pred.json" >"$T/read.json"
check "mfu trace reads the exported prediction" [ $? = 0 ]
check "read back: the rank-2 expected step time within 1e-6" python3 -c "
import json, sys
want = json.load(open(sys.argv[1]))['configs'][1]['expected']['step_time_s']
got = json.load(open(sys.argv[2]))['steps'][0]['step_time_s']
assert abs(got - want) <= 1e-6 * want, (got, want)" "$T/search.json" "$T/read.json"
"$MFU" trace "$T/pred.json" --against "$T/search.json" --rank 2 >"$T/against.json"
check "trace --against: its own prediction differs from itself by nothing" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['difference']
vals = [d[k] for k in ('step_time_s', 'gemm_s', 'attention_s', 'other_compute_s', 'idle_s')] + list(d['exposed_s'].values())
assert all(abs(v) < 1e-6 for v in vals), d" "$T/against.json"
"$MFU" trace "$T/pred.json" --against "$T/search.json" --rank 99 >/dev/null 2>&1
check "trace --against a rank the result does not hold: exit 3" [ $? = 3 ]
"$MFU" trace "$T/pred.json" --table >"$T/table.txt"
check "mfu trace --table: a header and one step row" [ "$(grep -c '^1 ' "$T/table.txt")" = 1 ]
finish
