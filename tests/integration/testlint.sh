#!/bin/sh
# tests/integration/testlint.sh -- a lint of the test scripts themselves.
#
# tests/lib.sh's `check NAME CMD...` runs CMD and counts it. Written
#     check "both" [ "$a" = 1 ] && [ "$b" = 2 ]
# the shell ends check's arguments at `&&`: check tests only the first
# condition and the second one's failure is never counted (six such checks
# were found and fixed by hand; `check_sh NAME 'COND' ARGS...` is the form
# for a compound condition). The same holds for `||` and for a pipe after
# the command. This script fails on any `check` or `check_sh` whose command
# goes on with `&&`, `||` or `|` outside quotes, `$(...)` and comments,
# wherever the check starts (a line, after `;`, `&&`, `then`, ...), in
# every tests/ script; here-document bodies are data and are skipped, and a
# here-document that never ends is a failure. It first proves on samples
# that it finds the pattern and passes the forms that are right.
# Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
PY=${PY:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "SKIPPED: testlint ($PY not installed)"; echo "0 passed, 0 failed"; exit 0; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cat >"$T/scan.py" <<'PY'
"""Print FILE:LINE for each check / check_sh whose command goes on with
&&, || or | (shell operators outside quotes, $(...), ${...} and comments),
and FILE:LINE:unclosed for a here-document without its end; "none" if
there is none. A small tokenizer of the shell the tests are written in,
not a full parser: enough to tell an operator from text."""
import sys

SEPARATORS = ("&&", "||", "|", ";", "&")
OPERATORS = ("&&", "||", ">&", "<&", "&>", ">>", "|", ";", "&", ">", "<")
KEYWORDS = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "(", "time"}


def opens(s, i):
    """True if s[i] opens a quote or a $( / ${ group."""
    return s[i] in "'`\"" or (s[i] == "$" and i + 1 < len(s) and s[i + 1] in "({")


def span_end(s, i):
    """s[i] opens a quote ('...', `...`, "...") or a $( / ${ group: the
    index after it closes, or -1 (still open at the end of s)."""
    c = s[i]
    if c in "'`":
        j = s.find(c, i + 1)
        return -1 if j < 0 else j + 1
    if c == '"':
        i += 1
        while i < len(s) and s[i] != '"':
            if s[i] == "\\":
                i += 2
            elif s[i] in "`$" and opens(s, i):  # a command substitution inside
                i = span_end(s, i)
                if i < 0:
                    return -1
            else:
                i += 1
        return i + 1 if i < len(s) else -1
    close = {"(": ")", "{": "}"}
    stack, i = [close[s[i + 1]]], i + 2
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
        elif opens(s, i) and c != "$":
            i = span_end(s, i)
            if i < 0:
                return -1
        else:
            if c in close:
                stack.append(close[c])
            elif c == stack[-1]:
                stack.pop()
                if not stack:
                    return i + 1
            i += 1
    return -1


def tokens(s):
    """[(kind, text)] of a logical line, kind 'w' (word) or 'op'; None
    when a quote or $(...) is still open at its end."""
    out, word, i = [], "", 0

    def flush():
        nonlocal word
        if word:
            out.append(("w", word))
            word = ""

    while i < len(s):
        c = s[i]
        if c in " \t\n":
            flush()
            i += 1
        elif c == "#" and not word:
            j = s.find("\n", i)
            if j < 0:
                break
            i = j
        elif c == "\\":
            word += s[i:i + 2]
            i += 2
        elif opens(s, i):
            j = span_end(s, i)
            if j < 0:
                return None
            word += s[i:j]
            i = j
        elif s.startswith("<<<", i):
            flush()
            out.append(("op", "<<<"))
            i += 3
        elif s.startswith("<<", i):
            flush()
            out.append(("op", "<<"))
            i += 2 + (s.startswith("-", i + 2))
        else:
            for op in OPERATORS:
                if s.startswith(op, i):
                    flush()
                    out.append(("op", op))
                    i += len(op)
                    break
            else:
                word += c
                i += 1
    flush()
    return out


def unquote(w):
    return w.replace("\\", "").replace("'", "").replace('"', "")


def checks_cut(toks):
    """True if a check's command in toks goes on with &&, || or |."""
    start = True
    for k, (kind, text) in enumerate(toks):
        if kind == "op":
            start = text in SEPARATORS
            continue
        if start and text in KEYWORDS:
            continue
        if start and text in ("check", "check_sh"):
            for kind2, text2 in toks[k + 1:]:
                if kind2 == "op" and text2 in SEPARATORS:
                    if text2 in ("&&", "||", "|"):
                        return True
                    break
        start = False
    return False


def scan(path):
    bad, buf, first, docs, doc_line = [], "", None, [], None
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace").read().split("\n"), 1):
        if docs:  # a here-document's body
            if line.strip() == docs[0]:
                docs.pop(0)
            continue
        if first is None:
            first = n
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        toks = tokens(buf)
        if toks is None:  # a quote or $(...) goes on to the next line
            buf += "\n"
            continue
        if checks_cut(toks):
            bad.append("%s:%d" % (path, first))
        for k, (kind, text) in enumerate(toks):
            if kind == "op" and text == "<<" and k + 1 < len(toks) and toks[k + 1][0] == "w":
                docs.append(unquote(toks[k + 1][1]))
                doc_line = n
        buf, first = "", None
    if docs:
        bad.append("%s:%d:unclosed" % (path, doc_line))
    if buf.strip():  # a quote or $(...) never closed: the rest was not read
        bad.append("%s:%d:open-quote" % (path, first))
    return bad


bad = [b for p in sys.argv[1:] for b in scan(p)]
print(" ".join(bad) or "none")
PY

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }

# the scanner finds the pattern where a check can start ...
cat >"$T/bad.sh" <<'EOF'
check "both hold" [ "$a" = 1 ] && [ "$b" = 2 ]
check "either" \
    [ "$a" = 1 ] || [ "$b" = 2 ]
req GET /x; check "after a command" [ "$a" = 1 ] && [ "$b" = 2 ]
check "a pipe" curl -s "$u" | grep -q y
check_sh "check_sh too" '[ "$1" = 1 ]' "$a" && [ "$b" = 2 ]
[ -f x ] && check "after a guard" [ "$a" = 1 ] && [ "$b" = 2 ]
if true; then check "after then" [ "$a" = 1 ] || [ "$b" = 2 ]; fi
EOF
got=$("$PY" "$T/scan.py" "$T/bad.sh")
want="$T/bad.sh:1 $T/bad.sh:2 $T/bad.sh:4 $T/bad.sh:5 $T/bad.sh:6 $T/bad.sh:7 $T/bad.sh:8"
if [ "$got" = "$want" ]; then ok "the scan finds all seven samples"; else bad "the scan finds all seven samples (got: $got)"; fi
# ... passes the right forms, operators that are text, and here-document bodies ...
cat >"$T/good.sh" <<'EOF'
check_sh "both hold" '[ "$1" = 1 ] && [ "$2" = 2 ]' "$a" "$b"
check "a name with && in it" [ "$a" = 1 ]
check "a grep" grep -q 'x && y' "$f"
[ -f x ] && check "after a guard" [ "$a" = 1 ]
check "a length" [ "${#x}" -gt 0 ] # a comment && more
x=$((1 << 2)); check "a shift" [ "$x" = 4 ]
echo "a << b"; check "after an echo" [ 1 = 1 ]
check "a count" [ "$(echo a && echo b | wc -l)" = 2 ]
if check "in an if" [ 1 = 1 ]; then :; fi
check "quiet" cmd >/dev/null 2>&1
check_sh "a condition on two lines" '[ "$1" = 1 ] &&
    [ "$2" = 2 ]' "$a" "$b"
cat <<'DOC'
check "in a here-document" [ a ] && [ b ]
DOC
check "after it" [ 1 = 1 ]
EOF
got=$("$PY" "$T/scan.py" "$T/good.sh")
if [ "$got" = none ]; then ok "the scan passes the right forms"; else bad "the scan passes the right forms (got: $got)"; fi
# ... and a here-document that never ends
printf 'cat <<EOF\ncheck "x" [ a ]\n' >"$T/open.sh"
printf 'echo "a\ncheck "x" [ a ] && [ b ]\n' >"$T/quote.sh"
got=$("$PY" "$T/scan.py" "$T/open.sh" "$T/quote.sh")
if [ "$got" = "$T/open.sh:1:unclosed $T/quote.sh:1:open-quote" ]; then ok "an unclosed here-document or quote fails"
else bad "an unclosed here-document or quote fails (got: $got)"; fi

# the test scripts
got=$("$PY" "$T/scan.py" $(find tests -name '*.sh' | sort))
if [ "$got" = none ]; then
    ok "no check in tests/ ends its command at &&, || or |"
else
    bad "checks that test only part of their condition (use check_sh), or unclosed here-documents: $got"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
