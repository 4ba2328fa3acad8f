#!/bin/sh
# docker/deps.sh -- install what a bare Debian 12 machine lacks to build, run
# and test mfud. Used by `make run`, by .ci/run and by the Dockerfile, so all
# three prove the same list. Installs only what is missing; needs root (or
# sudo) only when something is missing.
set -e
BUILD_PKGS="build-essential pkg-config libjansson-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev zlib1g-dev libpq-dev"
# tests: curl/python3 drive the daemon, sqlite3 checks the file, promtool
# (Debian's prometheus) lints /metrics, wrk loads it, clang + its runtime
# build the fuzzers and the sanitizer runs, valgrind checks leaks, chromium
# loads the page headless, postgresql runs the shared-store tests
# (tests/integration/replicas.sh, a throwaway cluster in a temporary directory) (tests/integration/page.sh; on a bare Debian 12
# about 170 packages, 190 MB to download, 640 MB installed: only in this
# full mode, never for `make run`)
TEST_PKGS="curl sqlite3 postgresql python3 prometheus wrk clang libclang-rt-14-dev valgrind chromium"
case "${1:-all}" in
    build) PKGS="$BUILD_PKGS" ;;
    runtime) PKGS="libjansson4 libmicrohttpd12 libuv1 libsqlite3-0 zlib1g libpq5" ;;
    *) PKGS="$BUILD_PKGS $TEST_PKGS" ;;
esac
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# the contract's linters and the strict-typed client check (tests/integration/
# lint.sh, http.sh) run on node: Debian's nodejs and npm unless some node and
# npm are already there (e.g. a NodeSource build, whose nodejs package
# conflicts with Debian's npm)
NPM_TOOLS=""
case "${1:-all}" in build|runtime) ;; *) NPM_TOOLS=1 ;; esac
if [ -n "$NPM_TOOLS" ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
    missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
    echo "deps: installing$missing" >&2
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# the npm tools, exactly as tools/lint/package-lock.json pins them, into
# tools/lint/node_modules (not the system): once per lock file (a copy of the
# lock in node_modules marks it done). No install scripts run. A failure
# (no registry) is not fatal: lint.sh and http.sh then say SKIPPED.
LINT=$(cd "$(dirname "$0")/.." && pwd)/tools/lint
if [ -n "$NPM_TOOLS" ] && [ -f "$LINT/package-lock.json" ] &&
    ! cmp -s "$LINT/package-lock.json" "$LINT/node_modules/.mfud-installed.lock"; then
    echo "deps: npm ci in tools/lint (pinned linters and JSON Schema validator)" >&2
    if (cd "$LINT" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null); then
        cp "$LINT/package-lock.json" "$LINT/node_modules/.mfud-installed.lock"
    else
        echo "deps: npm ci failed; the lint and strict-typed schema checks will be skipped" >&2
    fi
fi
exit 0
