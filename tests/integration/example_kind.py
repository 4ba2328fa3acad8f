#!/usr/bin/env python3
"""tests/integration/example_kind.py FILE -- which request an example is:
prints calibrate, compare, search or roofline, or nothing for a file that is
not a request (a HuggingFace config.json). One rule for the scripts that
send each example to its route (http.sh) and check it against its schema
(lint.sh)."""
import json
import sys

d = json.load(open(sys.argv[1]))
print("calibrate" if "runs" in d else "compare" if "base" in d else
      ("search" if "devices" in d else "roofline") if "model" in d else "")
