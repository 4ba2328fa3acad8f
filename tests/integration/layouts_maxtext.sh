#!/bin/bash
# tests/integration/layouts_maxtext.sh -- published MaxText layouts that
# ran are not refused (issue 10; the TPU side of layouts.sh).
# tests/data/maxtext_layouts.json holds MaxText's benchmark configurations
# (AI-Hypercomputer/maxtext benchmarks/maxtext_*_model_configs.py; layouts
# only, no throughputs) of models mfud has presets for, with their remat
# policies as the configs write them. Each, through build/mfu:
#   - as a measured run: answered (exit 0), fitting, and launched by
#     MaxText (its frameworks name maxtext);
#   - as a search with that layout fixed (search.fix: axes, mbs, recompute):
#     at least one ranked configuration, on those axes.
# The layouts the data lists as not checked say why (the logits and
# scanned layer inputs of full-remat runs, which XLA's memory behaviour
# would have to settle); they are reported, not asserted.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi
PY=${PYTHON:-python3}
DATA=tests/data/maxtext_layouts.json

# one line per request, "INDEX KIND", the request in $T/INDEX.KIND.json
"$PY" - "$DATA" "$T" >"$T/list" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
out = sys.argv[2]
for i, l in enumerate(doc["layouts"]):
    par = l["parallel"]
    shards = par.get("fsdp", 1) * par.get("dp", 1)
    base = {"model": {"preset": l["model"]}, "hardware": {"preset": l["hardware"]}, "devices": l["devices"],
            "training": {"seq_len": l["seq"], "global_batch_tokens": l["mbs"] * shards * l["seq"]}}
    cfg = {"parallel": par, "mbs": l["mbs"], "recompute": l["recompute"]}
    if "remat" in l:
        cfg["remat"] = l["remat"]
    m = dict(base, search={"top_k": 1, "frameworks": ["maxtext"], "max_evaluations": 1},
             measured={"config": cfg, "step_time_s": 1})
    json.dump(m, open("%s/%d.measured.json" % (out, i), "w"))
    fix = dict(par, mbs=l["mbs"], recompute=l["recompute"])
    if "remat" in l:
        fix["remat"] = l["remat"]
    json.dump(dict(base, search={"top_k": 1, "frameworks": ["maxtext"], "fix": fix}),
              open("%s/%d.fixed.json" % (out, i), "w"))
    print(i, "measured")
    print(i, "fixed")
PYEOF
check "the layouts read ($DATA)" [ -s "$T/list" ]

n=0
while read -r i kind; do
    f=$T/$i.$kind.json
    "$MFU" search "$f" >"$T/out" 2>"$T/err"
    rc=$?
    what="layout $i ($(head -c 160 "$f" | tr -d '\n'))"
    n=$((n + 1))
    check "$what $kind: exits 0 (got $rc)" [ "$rc" = 0 ]
    [ "$rc" = 0 ] || { head -n 4 "$T/err"; continue; }
    if [ "$kind" = measured ]; then
        check_sh "$what: the measured run fits, launched by MaxText" \
            '"$1" -c "import json,sys; c=json.load(open(sys.argv[1]))[\"measured\"][\"config\"]; sys.exit(0 if c[\"feasible\"] and \"maxtext\" in c[\"frameworks\"] else 1)" "$2"' \
            "$PY" "$T/out"
    else
        check_sh "$what: the search with the layout fixed ranks it" \
            '"$1" -c "import json,sys; d=json.load(open(sys.argv[1])); q=json.load(open(sys.argv[2]))[\"search\"][\"fix\"]; c=d[\"configs\"][0]; p=c[\"parallel\"]; sys.exit(0 if all(p[k] == v for k, v in q.items() if k in p) and c[\"mbs\"] == q[\"mbs\"] else 1)" "$2" "$3"' \
            "$PY" "$T/out" "$f"
    fi
done <"$T/list"
check "at least 10 layouts were tried (got $((n / 2)))" [ "$n" -ge 20 ]
echo "REPORT: $("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['not_checked']))" "$DATA") published MaxText layouts not checked, each with its reason in $DATA"
finish
