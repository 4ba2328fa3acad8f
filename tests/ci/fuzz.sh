#!/bin/sh
# tests/ci/fuzz.sh -- CI's bounded fuzzing run (issue 6 item 2): every
# libFuzzer target for 20 s from its seed corpus; non-zero on a crash.
set -e
cd "$(dirname "$0")/../.."
make --no-print-directory fuzz FUZZ_SECONDS=${FUZZ_SECONDS:-20}
