#!/bin/bash
# tests/integration/page.sh -- the page mfud serves at / (issue 13 items 1 and 4), as a person
# uses it, against the real build/mfud on 127.0.0.1 with an ephemeral port:
#   - over HTTP (curl): GET / and /ui/{app.js,app.css} byte for byte as in web/, with ETag,
#     304 on If-None-Match, HEAD, the Content-Security-Policy; unknown /ui/ names 404; POST /
#     405; POST /roofline with Accept: image/svg+xml answered as SVG (well-formed XML with a
#     title), JSON otherwise; every recorded response checked against openapi.yaml
#     (oas_check.py);
#   - in headless Chromium (page_drive.cjs, the DevTools protocol over a pipe, Node's own
#     modules): the form, a search submitted with the mouse, progress while it runs, the
#     ranked table, the four charts, rank 2 by keyboard, the shared link, a config.json
#     upload, a comparison, the recent list, a query link, a refused request; no console
#     errors, no failed loads, nothing fetched from anywhere but the daemon. Screenshots at
#     1280x800 go to $BUILD/test-output/page/ for a reviewer.
# Without chromium or node, or when chromium cannot start, the browser part prints
# "SKIPPED: page.sh (reason)" (sh docker/deps.sh installs Debian's chromium); the HTTP part
# still runs. Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

if [ ! -x "$MFUD" ]; then
    echo "FAIL: $MFUD not built"
    echo "0 passed, 1 failed"
    exit 1
fi
OUTDIR=$BUILD/test-output/page
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"

# Each job is held 1.5 s before it runs, so the page has a running job to show progress for
# (and polls it: 304s while nothing changes).
LOG=$T/mfud.log
MFUD_TEST_JOB_DELAY_MS=1500 "$MFUD" --port 0 --db "$T/mfud.db" --workers 2 --log-level info 2>"$LOG" &
PID=$!
wait_port "$LOG"
if [ -z "$PORT" ]; then
    echo "FAIL: daemon did not start"; cat "$LOG"
    echo "0 passed, 1 failed"
    exit 1
fi

# ---- over HTTP ---------------------------------------------------------------------------
# req (every response recorded in $REC for oas_check) and hdr: tests/lib.sh
# ev "name" 'shell condition': one check, passed when the condition holds
ev() { if eval "$2"; then ok; else bad "$1"; fi; }

req GET /
ev "GET / is 200 text/html" '[ "$CODE" = 200 ] && [[ "$(hdr Content-Type)" == text/html* ]]'
check "GET / is web/index.html byte for byte" cmp -s "$BODY" web/index.html
check "the page loads /ui/app.js and /ui/app.css" grep -q 'src="/ui/app.js"' "$BODY"
check "  ... and /ui/app.css" grep -q 'href="/ui/app.css"' "$BODY"
CSP=$(hdr Content-Security-Policy)
ev "the page has a Content-Security-Policy (only the daemon)" \
    '[[ "$CSP" == *"default-src '"'"'none'"'"'"* && "$CSP" == *"connect-src '"'"'self'"'"'"* ]]'
ETAG=$(hdr ETag)
ev "GET / has a strong ETag" '[[ "$ETAG" =~ ^\"[0-9a-f]{16}\"$ ]]'
check "GET / says Cache-Control: no-cache" [ "$(hdr Cache-Control)" = no-cache ]
req GET / -H "If-None-Match: $ETAG"
ev "GET / with its ETag is 304 without a body" '[ "$CODE" = 304 ] && [ ! -s "$BODY" ]'
req GET / -H 'If-None-Match: "0000000000000000"'
check "GET / with another ETag is 200" [ "$CODE" = 200 ]
HEAD_CODE=$(curl -s -I -o "$T/head" -w '%{http_code}' "$BASE/")
check "HEAD / is 200" [ "$HEAD_CODE" = 200 ]
for f in app.js app.css; do
    req GET "/ui/$f"
    check "GET /ui/$f is 200" [ "$CODE" = 200 ]
    check "GET /ui/$f is web/$f byte for byte" cmp -s "$BODY" "web/$f"
done
req GET /ui/app.js
ev "app.js is text/javascript" '[[ "$(hdr Content-Type)" == text/javascript* ]]'
req GET /ui/app.css
ev "app.css is text/css" '[[ "$(hdr Content-Type)" == text/css* ]]'
req GET /ui/missing.js
ev "GET /ui/missing.js is a 404 problem" '[ "$CODE" = 404 ] && [[ "$(hdr Content-Type)" == application/problem+json* ]]'
req GET /ui/
check "GET /ui/ is 404" [ "$CODE" = 404 ]
req GET /index.html
check "GET /index.html is 404 (the page is /)" [ "$CODE" = 404 ]
req POST / -H 'Content-Type: application/json' -d '{}'
ev "POST / is 405 with Allow" '[ "$CODE" = 405 ] && [[ "$(hdr Allow)" == *GET* ]]'

# POST /roofline as SVG
req POST /roofline -H 'Content-Type: application/json' -H 'Accept: image/svg+xml' -d @examples/roofline.json
ev "POST /roofline with Accept: image/svg+xml is 200 image/svg+xml" '[ "$CODE" = 200 ] && [ "$(hdr Content-Type)" = image/svg+xml ]'
SVG=$BODY
if command -v python3 >/dev/null 2>&1; then
    check "  ... a well-formed SVG with a title, a desc and one mark per operator" python3 - "$SVG" <<'EOF'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
kids = list(root)
assert kids[0].tag == ns + "title" and "oofline" in kids[0].text, kids[0].text
assert kids[1].tag == ns + "desc" and len(kids[1].text) > 40
ops = [e for e in root.iter() if "op" in (e.get("class") or "").split()]
assert len(ops) >= 10, len(ops)
EOF
else
    skip "page.sh roofline SVG parse (python3 not installed)"
fi
req POST /roofline -H 'Content-Type: application/json' -d @examples/roofline.json
ev "POST /roofline without Accept is JSON as before" '[ "$CODE" = 200 ] && [ "$(hdr Content-Type)" = application/json ]'
req POST /roofline -H 'Content-Type: application/json' -H 'Accept: image/svg+xml, application/json' -d @examples/roofline.json
check "POST /roofline accepting both is JSON (existing clients unchanged)" [ "$(hdr Content-Type)" = application/json ]
req POST /roofline -H 'Content-Type: application/json' -H 'Accept: image/svg+xml' \
    -d '{"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "training": {"seq_len": 0, "global_batch_tokens": 1}}'
ev "POST /roofline as SVG with a bad request is a 422 problem" '[ "$CODE" = 422 ] && [[ "$(hdr Content-Type)" == application/problem+json* ]]'
if command -v python3 >/dev/null 2>&1; then
    add_checker oas_check 20 python3 tests/integration/oas_check.py openapi.yaml "$REC"
else
    skip "page.sh contract check (python3 not installed)"
fi
if command -v node >/dev/null 2>&1 && [ -d tools/lint/node_modules/ajv ]; then
    add_checker schema_check.cjs 20 node tools/lint/schema_check.cjs openapi.yaml "$REC"
else
    skip "page.sh strict-typed schema check (node or tools/lint/node_modules missing: sh docker/deps.sh installs them)"
fi
ev "the page's requests are counted under route=\"/\"" \
    'curl -s "$BASE/metrics" | grep -q "^mfud_http_requests_total{route=\"/\",code=\"200\"} [1-9]"'

# ---- in a browser ------------------------------------------------------------------------
CHROME=${CHROMIUM:-}
if [ -z "$CHROME" ]; then
    for c in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$c" >/dev/null 2>&1; then CHROME=$(command -v "$c"); break; fi
    done
fi
if [ -z "$CHROME" ]; then
    skip "page.sh (browser part: chromium not installed; sh docker/deps.sh installs Debian's chromium)"
elif ! command -v node >/dev/null 2>&1; then
    skip "page.sh (browser part: node not installed; sh docker/deps.sh installs nodejs)"
else
    timeout 300 node tests/integration/page_drive.cjs "$CHROME" "$BASE" "$OUTDIR" examples/qwen2.5-7b.config.json \
        >"$T/drive.out" 2>&1
    rc=$?
    grep -v -E '^[0-9]+ passed, [0-9]+ failed' "$T/drive.out"
    if [ "$rc" = 77 ]; then
        skip "page.sh (browser part: $(grep -m1 'chromium did not start' "$T/drive.out"))"
    else
        np=$(grep -c '^ok: ' "$T/drive.out")
        nf=$(grep -c '^FAIL: ' "$T/drive.out")
        pass=$((pass + np))
        fail=$((fail + nf))
        if [ "$rc" != 0 ] && [ "$nf" = 0 ]; then bad "the browser session ended with exit $rc"; fi
        [ "$np" -gt 0 ] || bad "the browser session passed no check"
        for s in 01-form 02-results 03-charts 04-compare 05-upload 06-refused; do
            check "screenshot $s.png is a 1280x800 PNG" python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(24)
sys.exit(0 if d[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", d[16:24]) == (1280, 800) else 1)' "$OUTDIR/$s.png"
        done
        echo "screenshots: $OUTDIR/"
    fi
fi

# ---- the daemon: no server error, a clean stop ---------------------------------------------
ev "the daemon answered no 5xx" '! grep -q "code=5[0-9][0-9]" "$LOG"'
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
check "the daemon stops cleanly on SIGTERM (exit $rc)" [ "$rc" = 0 ]
finish
