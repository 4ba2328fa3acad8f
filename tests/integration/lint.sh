#!/bin/sh
# tests/integration/lint.sh -- the contract and the packaging as linters and
# a strictly typed client see them, with the npm tools pinned in
# tools/lint/package.json (installed there by `sh docker/deps.sh`, npm ci):
#   - `redocly lint openapi.yaml` (Redocly CLI, its recommended rule set:
#     redocly.yaml, .redocly.lint-ignore.yaml) and `spectral lint
#     openapi.yaml` (Spectral, spectral:oas: .spectral.yaml), each with
#     0 errors and 0 warnings;
#   - dockerfilelint on the Dockerfile;
#   - every `example` in openapi.yaml, and every request under examples/,
#     against its schema (tools/lint/schema_check.cjs: ajv, JSON Schema
#     2020-12, integers told from reals);
#   - that both response validators (schema_check.cjs and
#     tests/integration/oas_check.py) refuse `1024.0` where the schema says
#     integer and accept `1024`, so a regression to reals cannot pass.
# Without node, npm or the installed tools it prints "SKIPPED: lint
# (reason)". Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
LIMIT=${LINT_TIMEOUT:-300}
BIN=tools/lint/node_modules/.bin
skip_all() {
    echo "SKIPPED: lint ($1)"
    echo "0 passed, 0 failed"
    exit 0
}
command -v node >/dev/null 2>&1 || skip_all "node not installed; sh docker/deps.sh installs nodejs and npm"
command -v npm >/dev/null 2>&1 || skip_all "npm not installed; sh docker/deps.sh installs nodejs and npm"
# @redocly/cli 2.77.0 declares node >= 20.19 (Debian 12's nodejs is 18)
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
    skip_all "node $(node --version) is older than the 20.19 that @redocly/cli 2.77.0 needs"
for t in redocly spectral dockerfilelint; do
    [ -x "$BIN/$t" ] || skip_all "$BIN/$t missing; sh docker/deps.sh installs tools/lint/package-lock.json"
done
[ -d tools/lint/node_modules/ajv ] || skip_all "ajv missing; sh docker/deps.sh installs tools/lint/package-lock.json"
# no telemetry, no update checks (CI has no network but the registries)
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
out=$T/out
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; tail -n 40 "$out"; }
run() { # run NAME command...: passes when the command exits 0
    name=$1
    shift
    if timeout "$LIMIT" "$@" >"$out" 2>&1; then ok "$name"; else bad "$name"; fi
}

# ---- the contract: 0 errors, 0 warnings -------------------------------------
if timeout "$LIMIT" "$BIN/redocly" lint openapi.yaml --format=json >"$T/redocly.json" 2>"$out"; then
    totals=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["totals"]; print(t["errors"], t["warnings"], t.get("ignored", 0))' "$T/redocly.json" 2>>"$out")
else
    totals=""
fi
set -- $totals
if [ "${1:-x}" = 0 ] && [ "${2:-x}" = 0 ]; then
    ok "redocly lint openapi.yaml: 0 errors, 0 warnings (${3:-0} ignored, each with its reason in .redocly.lint-ignore.yaml)"
else
    "$BIN/redocly" lint openapi.yaml >>"$out" 2>&1
    bad "redocly lint openapi.yaml: ${1:-?} errors, ${2:-?} warnings"
fi
run "spectral lint openapi.yaml (spectral:oas): 0 errors, 0 warnings" \
    "$BIN/spectral" lint --fail-severity warn --ruleset .spectral.yaml openapi.yaml
# spectral exits 0 when it finds nothing at or above warn; say so only
# when it did print the "no results" line, not an empty run
grep -q 'No results with a severity of' "$out" || bad "spectral printed no verdict"
run "dockerfilelint Dockerfile" "$BIN/dockerfilelint" Dockerfile

# ---- examples against their schemas -----------------------------------------
run "openapi.yaml examples validate" node tools/lint/schema_check.cjs --examples openapi.yaml
for f in examples/*.json; do
    [ -f "$f" ] || continue
    case $(python3 tests/integration/example_kind.py "$f") in
    calibrate) schema=CalibrateRequest ;;
    compare) schema=CompareRequest ;;
    search) schema=SearchRequest ;;
    roofline) schema=RooflineRequest ;;
    *) continue ;; # not a request (a HuggingFace config.json)
    esac
    run "$f is a $schema" node tools/lint/schema_check.cjs --schema "$schema" openapi.yaml "$f"
done

# ---- a strictly typed client refuses 1024.0 where the schema says integer ----
ID=$(printf 'ab%.0s' $(seq 1 32))
item() { # item DEVICES-LITERAL
    printf '{"items": [{"id": "%s", "status": "done", "model": "llama3-70b", "hardware": "h100-sxm", "devices": %s, "best_mfu": 0.41, "evaluated": 7, "hits": 0, "created_at": "2026-01-01T00:00:00.000Z", "finished_at": "2026-01-01T00:00:01.000Z", "href": "/results/%s"}], "limit": 20}\n' "$ID" "$1" "$ID"
}
item 1024 >"$T/int.json"
item 1024.0 >"$T/real.json"
item 1.024e3 >"$T/exp.json"
: >"$T/h"
printf 'GET\t/results\t200\tapplication/json\t%s\t%s\n' "$T/h" "$T/int.json" >"$T/int.tsv"
printf 'GET\t/results\t200\tapplication/json\t%s\t%s\n' "$T/h" "$T/real.json" >"$T/real.tsv"
printf 'GET\t/results\t200\tapplication/json\t%s\t%s\n' "$T/h" "$T/exp.json" >"$T/exp.tsv"
run "schema_check.cjs accepts \"devices\": 1024" node tools/lint/schema_check.cjs openapi.yaml "$T/int.tsv"
for v in real exp; do
    if node tools/lint/schema_check.cjs openapi.yaml "$T/$v.tsv" >"$out" 2>&1; then
        bad "schema_check.cjs accepted $(grep -o '"devices": [^,]*' "$T/$v.json") where the schema says integer"
    elif grep -q '/items/0/devices: a number written as a real' "$out"; then
        ok "schema_check.cjs refuses $(grep -o '"devices": [^,]*' "$T/$v.json")"
    else
        bad "schema_check.cjs failed $v.json for another reason"
    fi
done
run "oas_check.py accepts \"devices\": 1024" python3 tests/integration/oas_check.py openapi.yaml "$T/int.tsv"
if python3 tests/integration/oas_check.py openapi.yaml "$T/real.tsv" >"$out" 2>&1; then
    bad "oas_check.py accepted \"devices\": 1024.0 where the schema says integer"
elif grep -q 'devices: expected integer, got float' "$out"; then
    ok "oas_check.py refuses \"devices\": 1024.0"
else
    bad "oas_check.py failed real.json for another reason"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
