#!/bin/sh
# tests/integration/svg.sh -- the golden charts (tests/golden/svg/*.svg, kept
# byte for byte by build/tests/test_svg) parsed by Python's xml.etree, an XML
# parser independent of the C test's checker, and checked for the series
# their alt text announces (tests/integration/svg_check.py). Needs python3;
# without it, it says SKIPPED. Ends with "N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "SKIPPED: svg (python3 missing)"
    echo "0 passed, 0 failed"
    exit 0
fi
exec "$PY" tests/integration/svg_check.py tests/golden/svg
