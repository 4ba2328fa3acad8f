#!/bin/sh
# tests/ci/sanreport.sh NAME DIR LOG -- after a sanitizer run (mk/sanitize.mk):
# every sanitizer report was written to a file under DIR (log_path), from
# whichever process hit it -- also daemons a test killed afterwards or whose
# stderr it swallowed. Print each report, then the run's total from LOG
# ("N passed, N failed", its last such line) with one failure added per report
# file; exit non-zero if the run failed or any report exists.
name=$1; dir=$2; log=$3
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" 2>/dev/null | tail -n 1)
p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-1}
n=0
for r in "$dir"/*; do
    [ -f "$r" ] || continue
    n=$((n + 1))
    echo "--- $name report $(basename "$r") (first 60 lines)"
    head -n 60 "$r"
done
[ "$n" -gt 0 ] && echo "$name: $n sanitizer report(s) in $dir"
echo "$name: $p passed, $((f + n)) failed"
echo "$p passed, $((f + n)) failed"
[ "$f" -eq 0 ] && [ "$n" -eq 0 ]
