#!/bin/bash
# tests/integration/layouts.sh -- published layouts that ran are not
# refused. tests/data/megatron_bridge_layouts.json holds the pre-training
# layouts Megatron Bridge publishes for its benchmarks (docs/performance-
# summary*.md of NVIDIA-NeMo/Megatron-Bridge; layouts only, no throughputs)
# of models mfud has presets for. Each, through build/mfu:
#   - as a measured run given as the table gives it (tp, pp, cp, vp, ep,
#     mbs, fsdp; no schedule, sp, zero or recompute): answered (exit 0),
#     legal, interleaved where vp > 1, and fitting (what the run left out
#     inferred where the defaults do not fit: docs/frameworks.md);
#   - as a search with that layout fixed (search.fix): at least one ranked
#     configuration, on those axes.
# A layout the data marks "illegal" (a table's inconsistency, said why)
# must be a 422 naming /measured/config. Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi
PY=${PYTHON:-python3}
DATA=tests/data/megatron_bridge_layouts.json

# requests: one line per layout, "INDEX KIND ILLEGAL VP" then the request in
# $T/INDEX.KIND.json (KIND: measured, fixed)
"$PY" - "$DATA" "$T" >"$T/list" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
out = sys.argv[2]
for i, l in enumerate(doc["layouts"]):
    tr = {"seq_len": l["seq"], "global_batch_tokens": l["gbs"] * l["seq"]}
    if l["precision"] == "BF16":
        tr["dtype"] = "bf16"
    else:
        tr["dtype"] = "fp8"
        tr["fp8_recipe"] = {"FP8-MX": "mxfp8", "MXFP8": "mxfp8", "FP8-DS": "delayed"}.get(l["precision"], "tensorwise")
    base = {"model": {"preset": l["model"]}, "hardware": {"preset": l["hardware"]}, "devices": l["devices"],
            "training": tr}
    par = {"tp": l["tp"], "pp": l["pp"], "cp": l["cp"], "ep": l["ep"]}
    shard = l["fsdp"] or 1
    par["fsdp" if l["fsdp"] else "dp"] = shard if l["fsdp"] else l["devices"] // (l["tp"] * l["pp"] * l["cp"])
    if l["fsdp"]:
        par["dp"] = l["devices"] // (l["fsdp"] * l["tp"] * l["pp"] * l["cp"])
    cfg = {"parallel": par, "mbs": l["mbs"]}
    if l["vp"] > 1:
        cfg["vpp"] = l["vp"]
    m = dict(base, search={"top_k": 1, "frameworks": ["megatron"], "max_evaluations": 1},
             measured={"config": cfg, "step_time_s": 1})
    json.dump(m, open("%s/%d.measured.json" % (out, i), "w"))
    fix = dict(par, mbs=l["mbs"])
    if l["vp"] > 1:
        fix["vpp"] = l["vp"]
    f = dict(base, search={"top_k": 1, "frameworks": ["megatron"], "fix": fix})
    json.dump(f, open("%s/%d.fixed.json" % (out, i), "w"))
    ill = 1 if "illegal" in l else 0
    print(i, "measured", ill, l["vp"])
    print(i, "fixed", ill, l["vp"])
EOF
check "the layouts read ($DATA)" [ -s "$T/list" ]

n=0
while read -r i kind ill vp; do
    f=$T/$i.$kind.json
    "$MFU" search "$f" >"$T/out" 2>"$T/err"
    rc=$?
    what="layout $i ($(head -c 160 "$f" | tr -d '\n'))"
    if [ "$ill" = 1 ]; then
        if [ "$kind" = measured ]; then
            check "$what: the table's inconsistency is a 422 (exit 2)" [ "$rc" = 2 ]
            check "$what: naming /measured/config" grep -q '"/measured/config"' "$T/err"
        fi
        continue
    fi
    n=$((n + 1))
    check "$what $kind: exits 0 (got $rc)" [ "$rc" = 0 ]
    [ "$rc" = 0 ] || { head -n 4 "$T/err"; continue; }
    if [ "$kind" = measured ]; then
        check_sh "$what: the measured run fits as the table gives it" \
            '"$1" -c "import json,sys; d=json.load(open(sys.argv[1])); c=d[\"measured\"][\"config\"]; sys.exit(0 if c[\"feasible\"] and (c[\"schedule\"] == \"interleaved\") == ($3 > 1) else 1)" "$2"' \
            "$PY" "$T/out" "$vp"
    else
        check_sh "$what: the search with the layout fixed ranks it" \
            '"$1" -c "import json,sys; d=json.load(open(sys.argv[1])); q=json.load(open(sys.argv[2]))[\"search\"][\"fix\"]; c=d[\"configs\"][0]; p=c[\"parallel\"]; sys.exit(0 if all(p[k] == v for k, v in q.items() if k in p) and c[\"vpp\"] == q.get(\"vpp\", c[\"vpp\"]) else 1)" "$2" "$3"' \
            "$PY" "$T/out" "$f"
    fi
done <"$T/list"
check "at least 45 legal layouts were tried (got $((n / 2)))" [ "$n" -ge 90 ]
finish
