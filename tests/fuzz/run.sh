#!/bin/sh
# tests/fuzz/run.sh TARGET... -- fuzz each target for $FUZZ_SECONDS seconds
# (make fuzz). The repo corpus tests/fuzz/corpus/<t>/ is read only: new
# inputs and crash artifacts go to $BUILD/fuzz-work/<t>/. Prints executions
# per target and in all; exits 1 if any target found a crash, leak or timeout.
BUILD=${BUILD:-build}
FUZZ_BUILD=${FUZZ_BUILD:-$BUILD/fuzz-clang}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
total=0; status=0
for t in "$@"; do
    work="$BUILD/fuzz-work/$t"
    mkdir -p "$work/corpus" "$work/artifacts"
    dict=""; [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    log="$work/fuzz.log"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    "$FUZZ_BUILD/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/" $dict \
        "$work/corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    execs=${execs:-0}
    total=$((total + execs))
    if [ $rc -ne 0 ]; then
        status=1
        tail -n 60 "$log"
        echo "fuzz $t: CRASH after $execs executions (exit $rc); input under $work/artifacts/"
        ls "$work/artifacts/"
    else
        echo "fuzz $t: $execs executions in ${FUZZ_SECONDS}s, no crash"
    fi
done
echo "fuzz: $total executions in all"
exit $status
