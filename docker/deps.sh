#!/bin/sh
# docker/deps.sh -- install what a bare Debian 12 machine lacks to build, run
# and test mfud. Used by `make run`, by .ci/run and by the Dockerfile, so all
# three prove the same list. Installs only what is missing; needs root (or
# sudo) only when something is missing.
set -e
BUILD_PKGS="build-essential pkg-config libjansson-dev libmicrohttpd-dev libuv1-dev libsqlite3-dev"
# tests: curl/python3 drive the daemon, sqlite3 checks the file, promtool
# (Debian's prometheus) lints /metrics, wrk loads it, clang + its runtime
# build the fuzzers and the sanitizer runs, valgrind checks leaks
TEST_PKGS="curl sqlite3 python3 prometheus wrk clang libclang-rt-14-dev valgrind"
case "${1:-all}" in
    build) PKGS="$BUILD_PKGS" ;;
    runtime) PKGS="libjansson4 libmicrohttpd12 libuv1 libsqlite3-0" ;;
    *) PKGS="$BUILD_PKGS $TEST_PKGS" ;;
esac
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
