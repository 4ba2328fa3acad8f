#!/bin/sh
# tests/integration/fuzz_replay.sh -- replay every fuzz corpus through its
# target, built with the normal compiler by `make test` (mk/fuzz.mk):
# $BUILD/fuzz/replay_<target> tests/fuzz/corpus/<target>/. Builds nothing.
# One line per target, then "N passed, N failed" (inputs).
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.." || exit 1
pass=0; fail=0
for dir in tests/fuzz/corpus/*/; do
    t=$(basename "$dir")
    bin="$BUILD/fuzz/replay_$t"
    n=$(ls "$dir" | wc -l)
    if [ ! -x "$bin" ]; then
        echo "fuzz replay $t: $bin missing (make test builds it)"; fail=$((fail + 1)); continue
    fi
    out=$("$bin" "$dir" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then
        echo "fuzz replay $t: $n inputs ok"; pass=$((pass + n))
    else
        echo "$out" | tail -n 30
        echo "fuzz replay $t: FAILED (exit $rc)"; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
