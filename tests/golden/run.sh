#!/bin/sh
# tests/golden/run.sh -- the data-driven golden cases: every
# tests/golden/cases/NAME.expect.json with its request(s), run through the
# `mfu` CLI ($BUILD/mfu, BUILD defaults to build) and checked by golden.py
# against numbers from independent sources (papers, model cards, hand
# calculations written in the case) and invariants the runner recomputes
# from the output. Ends with "N passed, N failed"; exits non-zero on any
# failure. Usage: [BUILD=dir] sh tests/golden/run.sh [-v] [CASE...]
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
if [ ! -x "$BUILD/mfu" ]; then
    echo "FAIL: $BUILD/mfu is not built (make build/mfu)"
    echo "0 passed, 1 failed"
    exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "FAIL: python3 is required for the golden checks"
    echo "0 passed, 1 failed"
    exit 1
fi
exec python3 tests/golden/golden.py --mfu "$BUILD/mfu" --cases tests/golden/cases "$@"
