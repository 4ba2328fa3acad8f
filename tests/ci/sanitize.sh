#!/bin/sh
# tests/ci/sanitize.sh -- issue 6 item 1 in CI: the suite under ASan+UBSan
# (make asan), under TSan (make tsan) and valgrind memcheck (make valgrind),
# in sequence. Prints each part's time and "N passed, N failed" (the sum);
# exits non-zero if any part failed. See mk/sanitize.mk.
cd "$(dirname "$0")/../.." || exit 1
MAKE=${MAKE:-make}
tp=0; tf=0; status=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
for target in asan tsan valgrind; do
    t0=$(date +%s)
    $MAKE --no-print-directory "$target" >"$log" 2>&1; rc=$?
    cat "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    [ "$rc" -ne 0 ] && status=1
    echo "== make $target: ${line:-no result line} (exit $rc, $(($(date +%s) - t0)) s)"
    tp=$((tp + p)); tf=$((tf + f))
done
echo "$tp passed, $tf failed"
exit $status
