#!/bin/bash
# tests/integration/setup.sh -- set-up honesty (issue 16 item 3):
#   1. tests/run.sh never skips silently: on made-up test scripts, a
#      "SKIPPED: name (reason)" line is shown and counted, a script that
#      reports "0 passed, 0 failed" without one is shown and counted as
#      skipped, a script with no result line fails, and the summary is
#      "N passed, N failed, N skipped";
#   2. `make run` serves on MFUD_PORT, else PORT (both from the environment
#      and from make's command line), with MFUD_DB.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh

# ---- 1. the summary counts skips --------------------------------------------------
mk() { printf '%s\n' "$2" >"$T/$1.sh"; }
mk ok 'echo "3 passed, 0 failed"'
mk skipall 'echo "SKIPPED: skipall (frob not installed)"; echo "0 passed, 0 failed"'
mk silent 'echo "skip: frob not installed"; echo "0 passed, 0 failed"'
mk partial 'echo "SKIPPED: partial frob check (frob not installed)"; echo "2 passed, 0 failed"'
RUN_SCRIPTS="$T/ok.sh $T/skipall.sh $T/silent.sh $T/partial.sh" sh tests/run.sh >"$T/run.out" 2>&1
rc=$?
check "run.sh: exit 0 when nothing failed (got $rc)" [ "$rc" = 0 ]
check "run.sh: summary '5 passed, 0 failed, 3 skipped' ($(tail -n 1 "$T/run.out"))" \
    [ "$(tail -n 1 "$T/run.out")" = "5 passed, 0 failed, 3 skipped" ]
check "run.sh: a SKIPPED line is shown" grep -qx "SKIPPED: skipall (frob not installed)" "$T/run.out"
check "run.sh: a partial skip is shown" grep -qx "SKIPPED: partial frob check (frob not installed)" "$T/run.out"
check "run.sh: a silent '0 passed, 0 failed' is shown as skipped, with its reason" \
    grep -qx "SKIPPED: $T/silent.sh (ran no checks: skip: frob not installed)" "$T/run.out"
mk failing 'echo "1 passed, 1 failed"; exit 1'
mk noline 'echo "all good"'
RUN_SCRIPTS="$T/ok.sh $T/failing.sh $T/noline.sh" sh tests/run.sh >"$T/run2.out" 2>&1
rc=$?
check "run.sh: exit 1 when a test failed (got $rc)" [ "$rc" = 1 ]
check "run.sh: a script without a result line fails ($(tail -n 1 "$T/run2.out"))" \
    [ "$(tail -n 1 "$T/run2.out")" = "4 passed, 2 failed, 0 skipped" ]
check "run.sh: the summary keeps the 'N passed, N failed' prefix" \
    bash -c "tail -n 1 '$T/run2.out' | grep -qE '^[0-9]+ passed, [0-9]+ failed'"

# ---- 2. make run's port ---------------------------------------------------------------
# make run = deps (docker/deps.sh build: installs what is missing), the build, mfud.
# Here the binary is built already: MAKE=true stands in for the nested build (under
# `make asan`/`tsan` it would rebuild $BUILD without the sanitizer flags), and the
# test runs only where deps.sh has nothing to install.
pkgs=$(sed -n 's/^BUILD_PKGS="\(.*\)"$/\1/p' docker/deps.sh)
missing=""
if command -v dpkg-query >/dev/null 2>&1 && [ -n "$pkgs" ]; then
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
else
    missing=" (not a Debian system: no dpkg-query)"
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# make_run NAME EXPECTED_PORT env-assignments... -- make-arguments...: start make run
# in its own process group, read the port mfud says it listens on, check /healthz, stop
make_run() {
    local name=$1 want=$2; shift 2
    local envs=() margs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    margs=("$@")
    : >"$T/make.log"
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MFUD_PORT -u PORT "${envs[@]}" MFUD_DB="$T/make.db" \
        setsid make --no-print-directory run MAKE=true BUILD="$BUILD" "${margs[@]}" >"$T/make.log" 2>&1 &
    PID=$!
    wait_port "$T/make.log" 20
    check "make run $name: listens on $want (got ${PORT:-nothing})" [ "$PORT" = "$want" ]
    check "make run $name: answers /healthz" \
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$want/healthz")" = 200 ]
    check "make run $name: uses MFUD_DB" grep -q "db=\"$T/make.db\"" "$T/make.log"
    [ -n "$PORT" ] || cat "$T/make.log"
    kill -TERM -- -"$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=""
}
cleanup() { # the whole process group of a make run still going
    [ -n "$PID" ] && kill -9 -- -"$PID" 2>/dev/null
    rm -rf "$T"
}
if [ -n "$missing" ]; then
    skip "setup.sh make run (docker/deps.sh would install:$missing)"
elif ! command -v make >/dev/null 2>&1 || ! command -v setsid >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    skip "setup.sh make run (make, setsid or curl not installed)"
elif [ ! -x "$MFUD" ]; then
    bad "$MFUD not built"
else
    p=$(free_port); make_run "MFUD_PORT=$p" "$p" MFUD_PORT="$p"
    p=$(free_port); make_run "PORT=$p" "$p" PORT="$p"
    p=$(free_port); make_run "MFUD_PORT=$p PORT=1 (MFUD_PORT wins)" "$p" MFUD_PORT="$p" PORT=1
    p=$(free_port); make_run "with make's MFUD_PORT=$p" "$p" -- MFUD_PORT="$p"
fi
finish
