#!/bin/bash
# tests/integration/calibrate.sh -- calibration end to end, through the CLI
# and through HTTP (issue 10): runs are timed by `mfu search` under a known
# "true" profile (the H100 preset with GEMMs at 0.65 of its curve and 0.3 s
# of host time per step), then `mfu calibrate` and POST /calibrate fit the
# preset to them: both recover the two parameters, agree with each other,
# and the fitted description, used in a search, predicts the true cluster's
# time where the preset does not. Bad calibration documents get 422 with a
# pointer. Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
PY=${PYTHON:-python3}
if [ ! -x "$MFUD" ] || [ ! -x "$MFU" ]; then echo "FAIL: $MFUD or $MFU not built"; fail=1; finish; fi

# the truth and the runs (8 layouts of llama3-8b on 8..64 H100)
"$PY" - "$MFU" "$T" <<'PY'
import json, subprocess, sys
mfu, t = sys.argv[1], sys.argv[2]
# the preset as mfud resolves it (a roofline echoes the hardware)
echo = {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"},
        "training": {"seq_len": 4096, "global_batch_tokens": 4096}}
truth = json.loads(subprocess.run([mfu, "roofline", "-"], input=json.dumps(echo), capture_output=True,
                                  text=True).stdout)["hardware"]
truth["efficiency"]["gemm_scale"] = 0.65
truth["efficiency"]["step_overhead_s"] = 0.3
def req(hw, n, tp, pp, mbs, seqs, step):
    return {"model": {"preset": "llama3-8b"}, "hardware": hw, "devices": n,
            "training": {"seq_len": 4096, "global_batch_tokens": seqs * 4096},
            "measured": {"config": {"parallel": {"dp": n // (tp * pp), "tp": tp, "pp": pp, "sp": tp > 1},
                                    "mbs": mbs, "recompute": "none"}, "step_time_s": step}}
runs = []
for n, tp, pp, mbs, seqs in [(8, 1, 1, 1, 64), (8, 8, 1, 1, 64), (16, 2, 1, 2, 128), (32, 4, 2, 1, 256),
                             (64, 8, 1, 2, 512), (32, 1, 1, 1, 128), (64, 2, 2, 1, 256), (16, 8, 1, 1, 32)]:
    r = req(truth, n, tp, pp, mbs, seqs, 1.0)
    r["search"] = {"top_k": 1, "max_evaluations": 1}
    out = json.loads(subprocess.run([mfu, "search", "-"], input=json.dumps(r), capture_output=True, text=True).stdout)
    runs.append({"id": "run%d" % len(runs),
                 "request": req({"preset": "h100-sxm"}, n, tp, pp, mbs, seqs, out["measured"]["expected_step_time_s"])})
json.dump({"runs": runs, "parameters": ["gemm_scale", "step_overhead_s"]}, open(t + "/runs.json", "w"))
json.dump(truth, open(t + "/truth.json", "w"))
PY
check "runs generated" [ -s "$T/runs.json" ]

# ---- the CLI ----------------------------------------------------------------
"$MFU" calibrate "$T/runs.json" >"$T/cli.json" 2>"$T/cli.err"
check "mfu calibrate exits 0" [ $? -eq 0 ]
js() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }
check "cli: gemm_scale recovered ($(js "$T/cli.json" 'd["parameters"][0]["value"]'))" \
    [ "$(js "$T/cli.json" 'abs(d["parameters"][0]["value"] - 0.65) < 0.03')" = True ]
check "cli: step_overhead_s recovered ($(js "$T/cli.json" 'd["parameters"][1]["value"]'))" \
    [ "$(js "$T/cli.json" 'abs(d["parameters"][1]["value"] - 0.3) < 0.3 * 0.1')" = True ]
check "cli: leave-one-out error under 3 % (the host-time prior pulls a little)" \
    [ "$(js "$T/cli.json" 'd["summary"]["leave_one_out"]["max_abs_error"] < 0.03')" = True ]
"$MFU" calibrate "$T/runs.json" --table >"$T/cli.txt"
check "cli --table names every parameter and run" bash -c "grep -q gemm_scale '$T/cli.txt' && grep -q run7 '$T/cli.txt'"
"$MFU" calibrate "$T/runs.json" --hardware >"$T/hw.json"
check "cli --hardware prints a description with the interval" \
    [ "$(js "$T/hw.json" 'd["efficiency"]["uncertainty"] >= 0 and d["name"] == "h100-sxm"')" = True ]

# ---- the bound stays a bound: never slower than a published measured run ----------
# Step-time runs through the search's measured block; every run, layer
# times (Korthikanti Table 4) too, through calibrate's bound_s, per chip.
"$PY" - "$MFU" <<'PY' >"$T/bound.txt"
import json, subprocess, sys
runs = json.load(open("bench/calibration/training-runs.json"))["runs"]
slow, seen = [], 0
for r in runs:
    req = r["request"]
    if "step_time_s" not in req["measured"]:
        continue
    req["search"] = {"top_k": 1, "max_evaluations": 1}
    out = json.loads(subprocess.run([sys.argv[1], "search", "-"], input=json.dumps(req), capture_output=True,
                                    text=True).stdout)["measured"]
    seen += 1
    if out["system_step_time_s"] > req["measured"]["step_time_s"]:
        slow.append(r["id"])
for chip in sorted({r["request"]["hardware"]["preset"] for r in runs}):
    mine = [{"id": r["id"], "request": r["request"]} for r in runs if r["request"]["hardware"]["preset"] == chip]
    p = subprocess.run([sys.argv[1], "calibrate", "-"], input=json.dumps({"runs": mine, "cross_validate": False}),
                       capture_output=True, text=True)
    for x in json.loads(p.stdout)["runs"]:
        seen += 1
        if not x["bound_s"] <= x["measured_step_time_s"]:
            slow.append(x["id"] + "(calibrate)")
print(seen, " ".join(slow) or "none")
PY
check "the System Bound is faster than every training-set run, layer times too (slower: $(cut -d' ' -f2- "$T/bound.txt"))" \
    [ "$(cut -d' ' -f2- "$T/bound.txt")" = none ]
check "the bound check weighed every run twice but the layer times once ($(cut -d' ' -f1 "$T/bound.txt"))" \
    [ "$(cut -d' ' -f1 "$T/bound.txt")" -ge 60 ]

# ---- issue 10's targets on the training set, as bench/calibrate fits it ----------
# Each chip from its component profile ("prior": "components": the preset's
# efficiency_components, which know nothing of the runs), every run left
# out in turn, through mfu calibrate as a user would: mean |error|
# <= 5 %, max <= 12 %, signed mean within +-2 %; Korthikanti et al. 2022
# Table 5 <= 3 % mean, 6 % max. A model change that breaks them fails here.
"$PY" - "$MFU" <<'PY' >"$T/targets.txt"
import json, subprocess, sys
runs = json.load(open("bench/calibration/training-runs.json"))["runs"]
out = []
for chip in ("a100-80gb", "h100-sxm"):
    mine = [{"id": r["id"], "request": r["request"]} for r in runs if r["request"]["hardware"]["preset"] == chip]
    res = json.loads(subprocess.run([sys.argv[1], "calibrate", "-"], input=json.dumps({"runs": mine, "prior": "components"}),
                                    capture_output=True, text=True).stdout)
    loo = res["summary"]["leave_one_out"]
    ok = loo["mean_abs_error"] <= 0.05 and loo["max_abs_error"] <= 0.12 and abs(loo["signed_mean_error"]) <= 0.02
    out.append("%s:%s(%.1f/%.1f/%+.1f)" % (chip, "ok" if ok else "MISSED", 100 * loo["mean_abs_error"],
                                          100 * loo["max_abs_error"], 100 * loo["signed_mean_error"]))
    t5 = [abs(x["loo_error"]) for x in res["runs"] if "korthikanti2022" in x["id"] and "_t4_" not in x["id"]]
    if t5:
        ok = sum(t5) / len(t5) <= 0.03 and max(t5) <= 0.06
        out.append("table5:%s(%.2f/%.2f)" % ("ok" if ok else "MISSED", 100 * sum(t5) / len(t5), 100 * max(t5)))
print(" ".join(out))
PY
check "leave-one-out on the training set within issue 10's targets ($(cat "$T/targets.txt"))" \
    sh -c "grep -q 'a100-80gb:ok' '$T/targets.txt' && grep -q 'h100-sxm:ok' '$T/targets.txt' && grep -q 'table5:ok' '$T/targets.txt' && ! grep -q MISSED '$T/targets.txt'"

# ---- the fit carried to presets no run calibrates (docs/calibration.md) --------
# bench/calibrate --write is the rule: the same silicon takes its calibrated
# sibling's compute and framework terms, other GPUs H100's fitted GEMM
# ratio and host time per step and micro-batch (the stack they train with
# today), TPUs nothing; those two
# get intervals (carried: the fits' leave-one-family-out error; TPUs: the
# component profiles' error before any fit). A preset edited by hand without re-running it fails.
"$PY" - <<'PY' >"$T/carry.txt"
import json
def load(n):
    return json.load(open("presets/hardware/%s.json" % n))
def eff(n):
    return load(n)["hardware"]["efficiency"]
carried = ["gemm_scale", "gemm_overhead_s", "attention", "kernel_overhead_s", "step_overhead_s",
           "microbatch_overhead_s", "host_op_s", "uncertainty"]
bad = []
for chip, sibs in {"h100-sxm": {"h800": True, "h200": False}, "a100-80gb": {"a100-40gb": False}}.items():
    for sib, same_hbm in sibs.items():
        for k in carried + (["hbm"] if same_hbm else []):
            if eff(sib).get(k) != eff(chip).get(k):
                bad.append("%s.%s" % (sib, k))
        comp = load(sib)["efficiency_components"]
        for k in ["net", "net_half_bytes", "gemm", "overlap_slowdown"] + ([] if same_hbm else ["hbm"]):
            if eff(sib).get(k) != comp.get(k):
                bad.append("%s.%s (own)" % (sib, k))
for gpu in ["b200", "gb200-nvl72", "mi300x", "mi325x"]:
    if abs(eff(gpu)["gemm_scale"] - eff("h100-sxm")["gemm_scale"]) > 1e-12:
        bad.append(gpu + ".gemm_scale")
    # an interval, the calibrated chips' leave-one-family-out error, the
    # same for each (F-UNC-CARRIED)
    if not eff(gpu).get("uncertainty", 0) > 0 or eff(gpu)["uncertainty"] != eff("b200")["uncertainty"]:
        bad.append(gpu + ".uncertainty")
    # the framework's host time per step and micro-batch: H100's (Megatron-Core)
    for k in ["step_overhead_s", "microbatch_overhead_s"]:
        if eff(gpu).get(k) != eff("h100-sxm").get(k):
            bad.append("%s.%s" % (gpu, k))
    for k in ["gemm", "hbm", "net", "overlap_slowdown", "kernel_overhead_s"]:
        if eff(gpu).get(k) != load(gpu)["efficiency_components"].get(k):
            bad.append("%s.%s (own)" % (gpu, k))
for tpu in ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"]:
    if eff(tpu).get("gemm_scale", 1.0) != 1.0:
        bad.append(tpu + ".gemm_scale")
    # the component profiles' own error before any fit: wider than a fit's
    if not eff(tpu).get("uncertainty", 0) > eff("b200").get("uncertainty", 0):
        bad.append(tpu + ".uncertainty")
print(" ".join(bad) or "none")
PY
check "presets carry the calibration by the documented rule (off: $(cat "$T/carry.txt"))" \
    [ "$(cat "$T/carry.txt")" = none ]

# ---- unpublished micro-batch sizes (docs/calibration.md) ------------------------
# A training run whose source does not give its micro-batch size carries the
# one mfud ranks fastest for the published layout under the component profile
# (a throughput benchmark's choice; neither the measured time nor the fit is
# used). A model change that moves that choice fails here until
# bench/calibrate --pick-mbs is re-run (and the presets refitted).
BUILD=$(dirname "$MFU") "$PY" bench/calibrate --check-mbs >"$T/mbs.txt" 2>&1
check "unpublished micro-batch sizes are the fastest for their layout (off: $(cat "$T/mbs.txt"))" \
    [ "$(cat "$T/mbs.txt")" = none ]
"$PY" - <<'PY' >"$T/mbs_n.txt"
import json
runs = json.load(open("bench/calibration/training-runs.json"))["runs"]
print(sum(1 for r in runs if r.get("mbs_published", True) is False))
PY
# the README's 9 H100 runs; Narayanan's 10 take theirs from NVIDIA's launch
# script (examples/sc21/run_table_1.sh), named in each run's assumptions
check "the rule covers the runs without a published micro-batch ($(cat "$T/mbs_n.txt") of them)" \
    [ "$(cat "$T/mbs_n.txt")" -eq 9 ]
"$PY" - <<'PY' >"$T/nar.txt"
import json
runs = json.load(open("bench/calibration/training-runs.json"))["runs"]
nar = [r for r in runs if r["family"] == "narayanan2021"]
print(len(nar), sum(1 for r in nar if r.get("mbs_published") and "run_table_1.sh" in r["assumptions"]))
PY
check "Narayanan's runs take their micro-batch from the launch script ($(cat "$T/nar.txt"))" \
    [ "$(cat "$T/nar.txt")" = "10 10" ]

# ---- the daemon ---------------------------------------------------------------
"$MFUD" --port 0 --db "$T/mfud.db" --log-level info 2>"$T/log" &
PID=$!
wait_port "$T/log"
if [ -z "$PORT" ]; then bad "daemon did not start"; finish; fi
code=$(curl -s -o "$T/http.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$T/runs.json" "$BASE/calibrate")
check "POST /calibrate: 200 ($code)" [ "$code" = 200 ]
check "HTTP and CLI give the same fit" \
    [ "$(js "$T/http.json" 'd["parameters"]')" = "$(js "$T/cli.json" 'd["parameters"]')" ]
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"runs": [{"request": {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 8, "training": {"seq_len": 4096, "global_batch_tokens": 262144}}}]}' \
    "$BASE/calibrate")
check_sh "a run without measured: 422 /runs/0/request/measured ($code $(js "$T/bad.json" 'd["errors"][0]["pointer"]'))" \
    '[ "$1" = 422 ] && [ "$2" = /runs/0/request/measured ]' "$code" "$(js "$T/bad.json" 'd["errors"][0]["pointer"]')"
code=$(curl -s -o "$T/bad2.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"runs": [], "parameters": ["gemm_scale"]}' "$BASE/calibrate")
check_sh "no runs: 422 /runs ($code)" '[ "$1" = 422 ] && [ "$2" = /runs ]' "$code" "$(js "$T/bad2.json" 'd["errors"][0]["pointer"]')"
code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/calibrate")
check "GET /calibrate: 405 ($code)" [ "$code" = 405 ]

# ---- the fitted description changes the next answer ---------------------------
"$PY" - "$T" "$BASE" <<'PY' >"$T/cmp.txt"
import json, sys, urllib.request
t, base = sys.argv[1], sys.argv[2]
fit = json.load(open(t + "/http.json"))["hardware"]
truth = json.load(open(t + "/truth.json"))
def expected(hw):
    req = {"model": {"preset": "llama3-8b"}, "hardware": hw, "devices": 64,
           "training": {"seq_len": 4096, "global_batch_tokens": 512 * 4096}, "search": {"top_k": 1}}
    r = urllib.request.Request(base + "/search", data=json.dumps(req).encode(),
                               headers={"Content-Type": "application/json", "Prefer": "wait=60"})
    d = json.load(urllib.request.urlopen(r))
    c = d["result"]["configs"][0]
    return c["expected"]["step_time_s"], json.dumps(c["parallel"], sort_keys=True)
(tf, _), (tp, _), (tt, _) = expected(fit), expected({"preset": "h100-sxm"}), expected(truth)
print("fit %.4f preset %.4f truth %.4f" % (tf, tp, tt))
print("ok" if abs(tf / tt - 1) < 0.02 and abs(tp / tt - 1) > 0.1 else "bad")
PY
check "a search with the fitted description predicts the truth, the preset does not ($(head -1 "$T/cmp.txt"))" \
    [ "$(tail -1 "$T/cmp.txt")" = ok ]
# ---- the stored profile: POST /calibrate stores the fit, any request names it ----
PID_ID=$(js "$T/http.json" 'd["profile"]["id"]')
check "POST /calibrate names its stored profile ($PID_ID)" \
    [ "$(js "$T/http.json" 'len(d["profile"]["id"]) == 64 and d["profile"]["href"] == "/profiles/" + d["profile"]["id"]')" = True ]
req GET "/profiles/$PID_ID"
check_sh "GET /profiles/{id}: 200, the fitted description ($CODE)" '[ "$1" = 200 ] && [ "$2" = True ]' "$CODE" \
    "$(json "$BODY" 'd["result"]["format"] == "hardware-profile" and d["result"]["hardware"]["efficiency"]["gemm_scale"] == d["result"]["parameters"][0]["value"]')"
"$PY" - "$T" "$PID_ID" <<'PY'
import json, sys
t, pid = sys.argv[1], sys.argv[2]
fit = json.load(open(t + "/http.json"))["hardware"]
base = {"model": {"preset": "llama3-8b"}, "devices": 64,
        "training": {"seq_len": 4096, "global_batch_tokens": 512 * 4096}, "search": {"top_k": 1}}
json.dump(dict(base, hardware={"profile": pid}), open(t + "/by_id.json", "w"))
json.dump(dict(base, hardware=fit), open(t + "/inline.json", "w"))
json.dump(dict(base, hardware={"profile": "0" * 64}), open(t + "/unknown.json", "w"))
json.dump(dict(base, hardware={"profile": pid, "hbm_bytes": 40e9}), open(t + "/override.json", "w"))
json.dump(dict(base, hardware={"profile": pid, "preset": "h100-sxm"}), open(t + "/both.json", "w"))
json.dump({"model": {"preset": "llama3-8b"}, "hardware": {"profile": pid},
           "training": {"seq_len": 4096, "global_batch_tokens": 4096}}, open(t + "/roof.json", "w"))
json.dump({"base": dict(base, hardware={"preset": "h100-sxm"}),
           "vary": {"hardware": [{"preset": "h100-sxm"}, {"profile": pid}]}}, open(t + "/cmp_id.json", "w"))
PY
req POST /search -H 'Content-Type: application/json' -H 'Prefer: wait=60' --data-binary @"$T/by_id.json"
ID_BY=$(json "$BODY" 'd["id"]'); STEP_BY=$(json "$BODY" 'd["result"]["configs"][0]["expected"]["step_time_s"]')
req POST /search -H 'Content-Type: application/json' -H 'Prefer: wait=60' --data-binary @"$T/inline.json"
check_sh "a search naming the profile is the search with the description inline: one key, one answer" \
    '[ -n "$1" ] && [ "$1" = "$2" ] && [ -n "$3" ] && [ "$3" = "$4" ]' "$ID_BY" "$(json "$BODY" 'd["id"]')" \
    "$STEP_BY" "$(json "$BODY" 'd["result"]["configs"][0]["expected"]["step_time_s"]')"
req POST /search -H 'Content-Type: application/json' --data-binary @"$T/unknown.json"
check_sh "an unknown profile: 422 at /hardware/profile ($CODE)" '[ "$1" = 422 ] && [ "$2" = /hardware/profile ]' \
    "$CODE" "$(json "$BODY" 'd["errors"][0]["pointer"]')"
req POST /search -H 'Content-Type: application/json' --data-binary @"$T/both.json"
check_sh "a profile and a preset at once: 422 ($CODE)" '[ "$1" = 422 ] && [ "$2" = /hardware/profile ]' \
    "$CODE" "$(json "$BODY" 'd["errors"][0]["pointer"]')"
req POST /search -H 'Content-Type: application/json' -H 'Prefer: wait=60' --data-binary @"$T/override.json"
check_sh "a profile with an override, as a preset's ($CODE)" '[ "$1" = 200 ] && [ "$2" = 40000000000.0 ]' \
    "$CODE" "$(json "$BODY" 'd["result"]["hardware"]["hbm_bytes"]')"
req POST /roofline -H 'Content-Type: application/json' --data-binary @"$T/roof.json"
check_sh "POST /roofline resolves it ($CODE)" '[ "$1" = 200 ] && [ -n "$2" ] && [ "$2" = "$3" ]' "$CODE" \
    "$(json "$BODY" 'd["hardware"]["efficiency"]["gemm_scale"]')" "$(js "$T/http.json" 'd["hardware"]["efficiency"]["gemm_scale"]')"
req POST /compare -H 'Content-Type: application/json' -H 'Prefer: wait=120' --data-binary @"$T/cmp_id.json"
check "POST /compare resolves it in vary.hardware ($CODE)" [ "$CODE" = 200 ]
"$MFU" search "$T/by_id.json" >/dev/null 2>"$T/cli_id.err"
check "the CLI has no store: exit 2 at /hardware/profile ($?)" \
    [ "$(js "$T/cli_id.err" 'd["errors"][0]["pointer"]')" = /hardware/profile ]

kill -TERM "$PID"
wait "$PID"
check "SIGTERM: clean exit" [ $? -eq 0 ]
PID=""
# the profile outlives the daemon (the store keeps it)
"$MFUD" --port 0 --db "$T/mfud.db" --log-level info 2>"$T/log2" &
PID=$!
wait_port "$T/log2"
req GET "/profiles/$PID_ID"
check "after a restart the profile is still there ($CODE)" [ "$CODE" = 200 ]
kill -TERM "$PID"
wait "$PID"
PID=""
add_checker oas_check 20 "$PY" tests/integration/oas_check.py openapi.yaml "$REC"
finish
