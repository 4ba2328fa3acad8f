"""tests/integration/tally.py -- the pass/fail tally the Python checkers
share (recipe.py, svg_check.py, trace_check.py): check() counts one check
and prints a "FAIL: ..." line for a failed one; finish() prints the closing
"N passed, N failed" line tests/run.sh reads and gives the exit status.
Imported from the checker's own folder (python3 puts it first on sys.path)."""

passed = failed = 0


def check(ok, what):
    """One check: passed when ok holds, else failed and named. Returns ok."""
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)
    return ok


def finish():
    """Print "N passed, N failed"; the exit status: 1 when anything failed."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
