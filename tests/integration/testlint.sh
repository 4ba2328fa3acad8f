#!/bin/sh
# tests/integration/testlint.sh -- a lint of the test scripts themselves.
#
# tests/lib.sh's `check NAME CMD...` runs CMD and counts it. Written
#     check "both" [ "$a" = 1 ] && [ "$b" = 2 ]
# the shell ends check's arguments at `&&`: check tests only the first
# condition and the second one's failure is never counted (five such checks
# were found and fixed by hand; `check_sh NAME 'COND' ARGS...` is the form
# for a compound condition). This script fails on any `check` whose command
# line goes on with `&&` or `||` outside quotes, in every tests/ script, and
# first proves on two samples that it finds the pattern and passes its fix.
# Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
PY=${PY:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "SKIPPED: testlint ($PY not installed)"; echo "0 passed, 0 failed"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/scan.py" <<'PY'
"""Print FILE:LINE for each `check` whose command list continues with &&
or || outside quotes (backslash-continued lines joined)."""
import re
import shlex
import sys


def logical_lines(text):
    """(first line number, line) with continuations joined; the bodies of
    here-documents (which are data, e.g. this script's own samples) left out."""
    buf, start, doc = "", None, None
    for n, line in enumerate(text.split("\n"), 1):
        if doc is not None:
            if line.strip() == doc:
                doc = None
            continue
        m = re.search(r"(?<!<)<<(?!<)-?\s*['\"]?(\w+)['\"]?", line)
        if m and not line.lstrip().startswith("#"):
            doc = m.group(1)
        if start is None:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield start, buf + line
        buf, start = "", None


def flagged(line):
    s = line.strip()
    if not (s.startswith("check ") or s.startswith("check\t")):
        return False
    lex = shlex.shlex(s, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        toks = list(lex)
    except ValueError:  # an unterminated quote: a here-document or the like, not a check
        return False
    return any(t in ("&&", "||") for t in toks[1:])


bad = []
for path in sys.argv[1:]:
    for n, line in logical_lines(open(path, encoding="utf-8", errors="replace").read()):
        if flagged(line):
            bad.append("%s:%d" % (path, n))
print(" ".join(bad) or "none")
PY

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

# the scanner finds the pattern (on one line and continued) ...
cat >"$T/bad.sh" <<'EOF'
check "both hold" [ "$a" = 1 ] && [ "$b" = 2 ]
check "either" \
    [ "$a" = 1 ] || [ "$b" = 2 ]
EOF
got=$("$PY" "$T/scan.py" "$T/bad.sh")
if [ "$got" = "$T/bad.sh:1 $T/bad.sh:2" ]; then ok "the scan finds both samples"; else bad "the scan finds both samples (got: $got)"; fi
# ... and passes the fixed form, quoted operators and other commands
cat >"$T/good.sh" <<'EOF'
check_sh "both hold" '[ "$1" = 1 ] && [ "$2" = 2 ]' "$a" "$b"
check "a name with && in it" [ "$a" = 1 ]
check "a grep" grep -q 'x && y' "$f"
[ -f x ] && check "after a guard" [ "$a" = 1 ]
EOF
got=$("$PY" "$T/scan.py" "$T/good.sh")
if [ "$got" = none ]; then ok "the scan passes the fixed forms"; else bad "the scan passes the fixed forms (got: $got)"; fi

# the test scripts
got=$("$PY" "$T/scan.py" $(find tests -name '*.sh' | sort))
if [ "$got" = none ]; then
    ok "no check in tests/ ends its command at && or ||"
else
    bad "checks that test only their first condition (use check_sh): $got"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
