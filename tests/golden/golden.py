#!/usr/bin/env python3
"""tests/golden/golden.py -- run the golden cases through the `mfu` CLI.

A case is tests/golden/cases/NAME.expect.json, usually with
NAME.request.json beside it. Nothing here is a snapshot of mfu's own output:
every expected number comes from an independent source named in the case
("source", and a "why" per check: a paper's formula, a model card, a hand
calculation written out), and the invariants below are recomputed from the
output by this runner.

expect.json fields (all optional except "source"):
  source       where the expected numbers come from (required)
  command      roofline | search | key          (default roofline)
  args         extra CLI arguments, e.g. ["--table"]
  request      request file name (default NAME.request.json)
  exit         expected exit status (default 0); on non-zero, checks read
               the problem+json document printed on stderr
  vars         names usable in check expressions
  invariants   list of: finite, roofline, search, problem, table,
               search_table, csv, determinism, frameworks
  checks       list of checks (below)
  model_presets  run the request once per model preset that `mfu presets
               (the request may use @SEQ@: "seq_len" maps preset -> length,
               "default_seq_len" otherwise, 4096 if absent)
               models` lists, with "@PRESET@" replaced by the name; its
               "expect" maps preset -> checks; "invariants" as above
  key_same / key_differs   {"SUFFIX": "why"}: `mfu key` of
               NAME.same.SUFFIX.json / NAME.diff.SUFFIX.json must equal /
               differ from the key of NAME.request.json; a variant may take
               part of a repository file with {"@include": "path#/pointer",
               "@set": {pointer: value}, "@delete": [pointer]}

A check: {"path": JSON pointer into the output (or "expr" over output
  fields named in "with": {name: pointer}), one of
  "approx": number or expression, "rel": tolerance   |
  "equals": value   | "length": n   | "regex": pattern   |
  "lt"/"le"/"gt"/"ge": number or expression (may be combined),
  "why": the independent reasoning (required for approx and bounds)}.
A pointer segment "@field=value" selects the array element whose field
equals value. {"each": pointer to an array, "match": {field: regex},
"min_matches": n, "path": pointer inside each element, ...} applies the
check to every matching element (and fails if fewer than n match).
Expressions: numbers, names from vars, + - * / ** and parentheses.

One test per check, per invariant and per exit-status check; the last line
is "N passed, N failed"; exit status 1 if anything failed.

(Over 600 lines: one runner, its invariants and the comparison of each
case's checks kept together, as every case uses all of them.)
"""
import argparse
import ast
import csv
import glob
import io
import json
import math
import operator
import os
import re
import subprocess
import sys
import time

# JSON numbers are printed with 10 significant digits (JSON_REAL_PRECISION(10)
# in cli/mfu.c): each printed value may carry 5e-10 relative rounding.
PRINT_REL = 5e-10
# Relations stated by the design ("add up exactly") are checked within 1e-9
# relative to the magnitudes involved, plus the printing rounding.
EXACT_REL = 1e-9


class Ctx:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def result(self, name, failures):
        if failures:
            self.failed += 1
            print("FAIL: %s" % name)
            for f in failures[:12]:
                print("    %s" % f)
            if len(failures) > 12:
                print("    ... and %d more" % (len(failures) - 12))
        else:
            self.passed += 1
            if self.verbose:
                print("ok:   %s" % name)


# ---- helpers --------------------------------------------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow}


def evaluate(expr, names):
    """A number, or an arithmetic expression over numbers and names."""
    if isinstance(expr, (int, float)) and not isinstance(expr, bool):
        return float(expr)
    if not isinstance(expr, str):
        raise ValueError("not a number or expression: %r" % (expr,))

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in names:
                raise ValueError("unknown name %s in %r" % (n.id, expr))
            return names[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise ValueError("unsupported expression %r" % (expr,))
    return float(ev(ast.parse(expr, mode="eval")))


def pointer_get(doc, ptr):
    """RFC 6901 pointer, plus "@field=value" array selection. Raises KeyError."""
    if ptr == "":
        return doc
    if not ptr.startswith("/"):
        raise KeyError("pointer must start with /: %r" % ptr)
    cur = doc
    for raw in ptr[1:].split("/"):
        seg = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            if seg.startswith("@") and "=" in seg:
                field, value = seg[1:].split("=", 1)
                hits = [e for e in cur if isinstance(e, dict) and str(e.get(field)) == value]
                if len(hits) != 1:
                    raise KeyError("%d elements with %s=%s" % (len(hits), field, value))
                cur = hits[0]
            else:
                if not seg.isdigit() or int(seg) >= len(cur):
                    raise KeyError("no index %s" % seg)
                cur = cur[int(seg)]
        elif isinstance(cur, dict):
            if seg not in cur:
                raise KeyError("no member %r" % seg)
            cur = cur[seg]
        else:
            raise KeyError("cannot descend into %r" % (cur,))
    return cur


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def close(a, b, *scale_terms, rel=EXACT_REL, printed=2):
    """|a - b| within rel of the largest magnitude involved, plus the printing
    rounding of `printed` values of that magnitude."""
    scale = max([abs(a), abs(b)] + [abs(t) for t in scale_terms])
    return abs(a - b) <= (rel + printed * PRINT_REL) * scale + 1e-300


def load_json(text):
    """Parse JSON; NaN/Infinity tokens are recorded, not silently accepted."""
    bad = []

    def const(tok):
        bad.append(tok)
        return float("nan")
    return json.loads(text, parse_constant=const), bad


def run_cli(mfu, command, args, req_path, timeout=60):
    t0 = time.monotonic()
    with open(req_path, "rb") as f:
        p = subprocess.run([mfu, command, "-"] + list(args), stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), \
        time.monotonic() - t0


# ---- checks -----------------------------------------------------------------

def check_value(val, chk, names):
    """Failures (list of str) of one check on one value."""
    out = []
    if "equals" in chk:
        want = chk["equals"]
        if is_num(want) and is_num(val):
            if float(val) != float(want):
                out.append("got %r, want %r" % (val, want))
        elif val != want:
            out.append("got %r, want %r" % (val, want))
    if "length" in chk:
        if not isinstance(val, (list, str)) or len(val) != chk["length"]:
            out.append("length %s, want %d" % (len(val) if isinstance(val, (list, str)) else "-", chk["length"]))
    if "regex" in chk:
        if not isinstance(val, str) or not re.search(chk["regex"], val):
            out.append("got %r, want a match of /%s/" % (val, chk["regex"]))
    if "approx" in chk:
        want = evaluate(chk["approx"], names)
        rel = chk["rel"]
        if not is_num(val):
            out.append("got %r, want a number ~ %.10g" % (val, want))
        elif not abs(val - want) <= rel * abs(want):
            out.append("got %.10g, want %.10g within %g (off by %.3g relative)"
                       % (val, want, rel, (val - want) / want if want else float("inf")))
    for op, fn, sym in (("lt", operator.lt, "<"), ("le", operator.le, "<="),
                        ("gt", operator.gt, ">"), ("ge", operator.ge, ">=")):
        if op in chk:
            lim = evaluate(chk[op], names)
            if not is_num(val) or not fn(val, lim):
                out.append("got %r, want %s %.10g" % (val, sym, lim))
    return out


def run_check(doc, chk, names):
    kinds = [k for k in ("equals", "length", "regex", "approx", "lt", "le", "gt", "ge") if k in chk]
    if not kinds:
        return ["check has no condition: %r" % (chk,)]
    if "approx" in chk and "rel" not in chk:
        return ["approx check without rel: %r" % (chk,)]
    if any(k in chk for k in ("approx", "lt", "le", "gt", "ge")) and not chk.get("why"):
        return ["numeric check without its independent 'why': %r" % (chk,)]
    if "each" in chk:
        try:
            arr = pointer_get(doc, chk["each"])
        except KeyError as e:
            return ["%s: %s" % (chk["each"], e)]
        if not isinstance(arr, list):
            return ["%s is not an array" % chk["each"]]
        fails, n = [], 0
        for i, el in enumerate(arr):
            if not all(isinstance(el, dict) and re.search(rx, str(el.get(f, "")))
                       for f, rx in chk.get("match", {}).items()):
                continue
            n += 1
            try:
                v = pointer_get(el, chk.get("path", ""))
            except KeyError as e:
                fails.append("%s/%d%s: %s" % (chk["each"], i, chk.get("path", ""), e))
                continue
            label = el.get("name", i) if isinstance(el, dict) else i
            fails += ["%s[%s]%s: %s" % (chk["each"], label, chk.get("path", ""), f)
                      for f in check_value(v, chk, names)]
        if n < chk.get("min_matches", 1):
            fails.append("%s: %d elements matched %r, want at least %d"
                         % (chk["each"], n, chk.get("match"), chk.get("min_matches", 1)))
        return fails
    if "expr" in chk:  # a relation between output fields, e.g. total - embedding
        try:
            vals = {k: pointer_get(doc, p) for k, p in chk.get("with", {}).items()}
        except KeyError as e:
            return ["%s: %s" % (chk.get("with"), e)]
        if not all(is_num(v) for v in vals.values()):
            return ["%s: not all numbers: %r" % (chk.get("with"), vals)]
        v = evaluate(chk["expr"], dict(names, **vals))
        return ["%s: %s" % (chk["expr"], f) for f in check_value(v, chk, names)]
    try:
        v = pointer_get(doc, chk["path"])
    except KeyError as e:
        return ["%s: %s" % (chk["path"], e)]
    return ["%s: %s" % (chk["path"], f) for f in check_value(v, chk, names)]


def check_label(chk):
    if "expr" in chk:
        return "%s %s" % (chk["expr"], "/".join(k for k in ("equals", "approx", "lt", "le", "gt", "ge") if k in chk))
    where = chk.get("each", "") + ("[" + ",".join("%s~%s" % kv for kv in chk.get("match", {}).items()) + "]"
                                   if "each" in chk else "") + chk.get("path", "")
    cond = [k for k in ("equals", "length", "regex", "approx", "lt", "le", "gt", "ge") if k in chk]
    return "%s %s" % (where, "/".join(cond))


# ---- invariants -----------------------------------------------------------------

def walk(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, path + "/" + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, "%s/%d" % (path, i))
    else:
        yield path, x


def inv_finite(doc, bad_tokens, **_):
    out = ["non-finite token %s in the JSON" % t for t in bad_tokens]
    for p, v in walk(doc):
        if isinstance(v, float) and not math.isfinite(v):
            out.append("%s = %r" % (p, v))
    return out


def dtype_of(req):
    t = req.get("training", {}) if isinstance(req, dict) else {}
    return t.get("dtype", "bf16")


def inv_roofline(doc, req, **_):
    """Roofline relations on the roofline block and its op list (docs/model.md F-ROOF, F-MFU)."""
    out = []
    roof, hw, model = doc["roofline"], doc["hardware"], doc["model"]
    peak = hw["peak_flops"][dtype_of(req)]
    bw = hw["hbm_bw_bytes_s"]
    ops = roof.get("ops")
    if not ops:
        return ["roofline has no ops"]
    step = roof["step_time_s"]
    # T_step = sum over ops of T_op
    s = sum(o["time_s"] for o in ops)
    if not close(s, step, printed=len(ops)):
        out.append("sum of op time_s %.12g != step_time_s %.12g" % (s, step))
    cb = mb = fexec = 0.0
    # vector-unit ops (norms, activations, softmax, loss) have the chip's fp32
    # (non-tensor) peak as compute roof where the datasheet gives one
    vpeak = hw["peak_flops"].get("fp32", 0)
    vpeak = vpeak if 0 < vpeak < peak else peak
    for o in ops:
        name = "%s(run %s)" % (o["name"], o["run"])
        if o.get("unit") not in ("matrix", "vector"):
            out.append("%s: unit %r" % (name, o.get("unit")))
        tc, tm = o["flops"] / (peak if o.get("unit") == "matrix" else vpeak), o["bytes"] / bw
        # T_op = max(FLOPs/peak, bytes/BW), times the op's count
        if not close(o["time_s"], o["count"] * max(tc, tm), printed=3):
            out.append("%s: time_s %.10g != count*max(flops/peak, bytes/bw) = %.10g"
                       % (name, o["time_s"], o["count"] * max(tc, tm)))
        # bound == compute iff flops/peak >= bytes/bw (undecidable within rounding: skipped)
        if not close(tc, tm, printed=2):
            want = "compute" if tc >= tm else "memory"
            if o["bound"] != want:
                out.append("%s: bound %s but flops/peak=%.4g s, bytes/bw=%.4g s"
                           % (name, o["bound"], tc, tm))
        if o["bytes"] > 0 and not close(o["intensity"], o["flops"] / o["bytes"], printed=3):
            out.append("%s: intensity %.10g != flops/bytes" % (name, o["intensity"]))
        if o["phase"] not in ("fwd", "bwd"):
            out.append("%s: phase %r" % (name, o["phase"]))
        if o["flops"] < 0 or o["bytes"] < 0 or o["count"] <= 0:
            out.append("%s: negative flops/bytes or non-positive count" % name)
        if o["bound"] == "compute":
            cb += o["time_s"]
        else:
            mb += o["time_s"]
        fexec += o["count"] * o["flops"]
    if not close(cb, roof["compute_bound_s"], printed=len(ops)):
        out.append("compute-bound ops sum %.10g != compute_bound_s %.10g" % (cb, roof["compute_bound_s"]))
    if not close(mb, roof["memory_bound_s"], printed=len(ops)):
        out.append("memory-bound ops sum %.10g != memory_bound_s %.10g" % (mb, roof["memory_bound_s"]))
    if not close(fexec, roof["f_executed_flops"], printed=len(ops)):
        out.append("sum count*flops %.10g != f_executed_flops %.10g" % (fexec, roof["f_executed_flops"]))
    # MFU = F_useful / (peak * T_step), F_useful = 3 * F_forward
    mfu = roof["f_useful_flops"] / (peak * step)
    if not close(mfu, roof["mfu"], printed=3):
        out.append("mfu %.10g != f_useful/(peak*step) = %.10g" % (roof["mfu"], mfu))
    fu = 3 * model["flops_per_token_fwd"] * roof["global_batch_tokens"]
    if not close(fu, roof["f_useful_flops"], printed=2):
        out.append("f_useful_flops %.10g != 3*flops_per_token_fwd*tokens = %.10g" % (roof["f_useful_flops"], fu))
    if not 0 < roof["mfu"] <= 1:
        out.append("roofline mfu %r outside (0, 1]" % roof["mfu"])
    if not close(roof["ridge_point_flops_per_byte"], peak / bw, printed=1):
        out.append("ridge point %.10g != peak/bw %.10g" % (roof["ridge_point_flops_per_byte"], peak / bw))
    if roof.get("convention") != req.get("mfu_convention", "causal"):
        out.append("convention %r, request asked %r" % (roof.get("convention"), req.get("mfu_convention", "causal")))
    t = req.get("training", {})
    if roof["seq_len"] != t.get("seq_len") or roof["global_batch_tokens"] != t.get("global_batch_tokens"):
        out.append("seq_len/global_batch_tokens not echoed from the request")
    if model["params_active"] > model["params_total"] * (1 + PRINT_REL * 2):
        out.append("params_active > params_total")
    return out


AXES = ("dp", "fsdp", "tp", "ep", "pp", "cp")
COMM = ("tp", "cp", "ep", "fsdp", "dp", "pp")


def inv_search(doc, req, **_):
    """System Bound relations of every ranked configuration (docs/model.md F-GAP, F-SEARCH)."""
    out = []
    cfgs, stats = doc.get("configs"), doc.get("search")
    if not cfgs:
        return ["no configurations"]
    if not isinstance(stats, dict):
        return ["no search stats"]
    devices = req["devices"]
    seq = req["training"]["seq_len"]
    fixed_gbt = req["training"].get("global_batch_tokens")
    peak = doc["hardware"]["peak_flops"][dtype_of(req)]
    fpt = doc["model"]["flops_per_token_fwd"]
    roof_mfu = doc["roofline"]["mfu"]
    sopts = req.get("search", {})
    top_k = sopts.get("top_k", 10)
    rank_by = sopts.get("rank_by", "expected")
    # stats
    for k in ("space_size", "evaluated", "fully_evaluated", "feasible", "pruned", "elapsed_s",
              "truncated"):
        if k not in stats:
            out.append("search stats lack %s" % k)
    if out:
        return out
    if not stats["space_size"] >= stats["evaluated"] >= stats["fully_evaluated"] > 0:
        out.append("stats: want space_size >= evaluated >= fully_evaluated > 0: %r" % stats)
    if not 0 < stats["feasible"] <= stats["evaluated"]:
        out.append("stats: want 0 < feasible <= evaluated")
    if stats["truncated"]:
        out.append("search truncated (%s)" % stats.get("truncated_by"))
    if stats.get("rank_by") != rank_by:
        out.append("rank_by %r, request asked %r" % (stats.get("rank_by"), rank_by))
    if len(cfgs) > top_k:
        out.append("%d configs > top_k %d" % (len(cfgs), top_k))
    if not cfgs[0]["feasible"]:
        out.append("top config is not feasible")
    prev = None
    for i, c in enumerate(cfgs):
        n = "config rank %s" % c.get("rank")
        if c.get("rank") != i + 1:
            out.append("config %d has rank %r" % (i, c.get("rank")))
        par = c["parallel"]
        # ep folds over dp*fsdp*cp*tp (Megatron-Core parallel folding): the
        # dense axes alone multiply to the devices, ep*etp divides their fold
        prod = 1
        for a in AXES:
            if a != "ep":
                prod *= par[a]
        if prod != devices:
            out.append("%s: product of axes %d != devices %d" % (n, prod, devices))
        fold = par["dp"] * par["fsdp"] * par["cp"] * par["tp"]
        if fold % (par["ep"] * par["etp"]):
            out.append("%s: ep*etp %d does not divide dp*fsdp*cp*tp %d" % (n, par["ep"] * par["etp"], fold))
        gbt = c["mbs"] * c["grad_accum"] * par["dp"] * par["fsdp"] * seq
        if c["global_batch_tokens"] != gbt:
            out.append("%s: global_batch_tokens %r != mbs*ga*dp*fsdp*seq = %d" % (n, c["global_batch_tokens"], gbt))
        # every ranked configuration names a framework that launches it
        # (issue 9 item 6), among those the search admitted
        want_fw = sopts.get("frameworks")
        if not c.get("frameworks"):
            out.append("%s: no framework launches it" % n)
        elif want_fw and "any" not in want_fw and not set(c["frameworks"]) & set(want_fw):
            out.append("%s: frameworks %r outside the admitted %r" % (n, c["frameworks"], want_fw))
        # pipeline split: the stages hold every layer
        ps = c["pipeline_split"]
        L = doc["model"]["resolved"]["layers_total"]
        if par["pp"] == 1 and ps["first_stage_layers"] != L:
            out.append("%s: one stage must hold all %d layers" % (n, L))
        if fixed_gbt is not None and "batch_seqs" not in sopts and c["global_batch_tokens"] != fixed_gbt:
            out.append("%s: global_batch_tokens %r != the fixed batch %r" % (n, c["global_batch_tokens"], fixed_gbt))
        m = c["memory"]
        parts = [m[k] for k in ("weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                                "buffers_bytes", "reserve_bytes")]
        if not close(sum(parts), m["total_bytes"], printed=len(parts) + 1):
            out.append("%s: memory parts sum %.10g != total %.10g" % (n, sum(parts), m["total_bytes"]))
        if not close(m["capacity_bytes"] - m["total_bytes"], m["headroom_bytes"], m["capacity_bytes"], printed=3):
            out.append("%s: headroom != capacity - total" % n)
        if c["feasible"] and m["total_bytes"] > m["capacity_bytes"]:
            out.append("%s: feasible but total %.4g > capacity %.4g" % (n, m["total_bytes"], m["capacity_bytes"]))
        if not close(m["capacity_bytes"], doc["hardware"]["hbm_bytes"], printed=2):
            out.append("%s: capacity %.10g != hardware hbm_bytes" % (n, m["capacity_bytes"]))
        # T_step = compute + recompute + exposed comm + bubble + optimizer + overhead
        for prof, summ in (("time", "bound"), ("time_expected", "expected")):
            t = c[prof]
            terms = [t["compute_s"], t["recompute_s"], t["bubble_s"], t["optimizer_s"], t["overhead_s"]] + \
                    [t["comm"][a]["exposed_s"] for a in COMM]
            if not close(sum(terms), t["step_time_s"], printed=len(terms) + 1):
                out.append("%s: %s parts sum %.10g != step_time_s %.10g" % (n, prof, sum(terms), t["step_time_s"]))
            for a in COMM:
                tot, exp = t["comm"][a]["total_s"], t["comm"][a]["exposed_s"]
                if exp < -PRINT_REL or exp > tot * (1 + 2 * PRINT_REL) + 1e-300:
                    out.append("%s: %s comm %s exposed %.6g not in [0, total %.6g]" % (n, prof, a, exp, tot))
                # the step is never shorter than one link's total traffic
                if tot > t["step_time_s"] * (1 + 2 * PRINT_REL):
                    out.append("%s: %s comm %s total %.6g > step %.6g" % (n, prof, a, tot, t["step_time_s"]))
            if not close(t["step_time_s"], c[summ]["step_time_s"], printed=2):
                out.append("%s: %s.step_time_s != %s.step_time_s" % (n, prof, summ))
        # MFU = F_useful / (devices * peak * T_step), F_useful = 3 F_fwd per token * tokens
        fu = 3 * fpt * c["global_batch_tokens"]
        for summ in ("bound", "expected"):
            mfu = fu / (devices * peak * c[summ]["step_time_s"])
            if not close(mfu, c[summ]["mfu"], printed=3):
                out.append("%s: %s.mfu %.10g != F_useful/(N*peak*T) %.10g" % (n, summ, c[summ]["mfu"], mfu))
            if c[summ]["hfu"] < c[summ]["mfu"] * (1 - 2 * PRINT_REL):
                out.append("%s: %s.hfu < mfu" % (n, summ))
            if c["recompute"] == "none" and not close(c[summ]["hfu"], c[summ]["mfu"], printed=2):
                out.append("%s: no recompute but %s.hfu != mfu" % (n, summ))
        tps = c["global_batch_tokens"] / c["expected"]["step_time_s"]
        if not close(tps, c["expected"]["tokens_per_s"], printed=2):
            out.append("%s: tokens_per_s %.10g != tokens/expected step %.10g" % (n, c["expected"]["tokens_per_s"], tps))
        # System Bound <= Roofline Bound; expected (efficiency <= 1) <= System Bound
        if c["bound"]["mfu"] > roof_mfu * (1 + 4 * PRINT_REL):
            out.append("%s: bound mfu %.10g above the roofline %.10g" % (n, c["bound"]["mfu"], roof_mfu))
        if c["expected"]["step_time_s"] < c["bound"]["step_time_s"] * (1 - 2 * PRINT_REL):
            out.append("%s: expected step shorter than the bound" % n)
        if not close(c["roofline_mfu"], roof_mfu, printed=2):
            out.append("%s: roofline_mfu %.10g != roofline.mfu %.10g" % (n, c["roofline_mfu"], roof_mfu))
        # the gap: named components add up to roofline - system, per profile
        for g, summ in (("gap", "bound"), ("gap_expected", "expected")):
            # percentage points (render.c): they add up to 100 x (roofline - system)
            pts = [e["mfu_points"] / 100.0 for e in c[g]]
            want = c["roofline_mfu"] - c[summ]["mfu"]
            if not close(sum(pts), want, c["roofline_mfu"], *pts, printed=len(pts) + 2):
                out.append("%s: %s mfu_points sum %.12g != roofline_mfu - %s.mfu = %.12g"
                           % (n, g, sum(pts), summ, want))
            secs = sum(e["seconds"] for e in c[g])
            # points are 100 x roofline_mfu * seconds / T_step (render.c), so the
            # seconds add up to T_step - T_roofline/devices
            t_roof_dev = doc["roofline"]["step_time_s"] * c["global_batch_tokens"] / \
                doc["roofline"]["global_batch_tokens"] / devices
            if not close(secs, c[summ]["step_time_s"] - t_roof_dev, c[summ]["step_time_s"], printed=len(pts) + 2):
                out.append("%s: %s seconds sum %.12g != T_step - T_roof/N = %.12g"
                           % (n, g, secs, c[summ]["step_time_s"] - t_roof_dev))
            names = [e["name"] for e in c[g]]
            if len(set(names)) != len(names):
                out.append("%s: %s names repeat" % (n, g))
        # ranking: nondecreasing seconds per token on the ranking profile
        score = c[rank_by]["step_time_s"] / c["global_batch_tokens"]
        if prev is not None and score < prev * (1 - 4 * PRINT_REL):
            out.append("%s: ranked after a slower config (%.10g < %.10g s/token)" % (n, score, prev))
        prev = score
        # the Megatron command line, when Megatron launches it, says the
        # same configuration (and there is none otherwise)
        ma = c.get("megatron_args")
        if ("megatron" in c.get("frameworks", [])) != isinstance(ma, str):
            out.append("%s: megatron_args %r but frameworks %r" % (n, ma, c.get("frameworks")))
        flags = [("--tensor-model-parallel-size", par["tp"]), ("--pipeline-model-parallel-size", par["pp"]),
                 ("--context-parallel-size", par["cp"]), ("--micro-batch-size", c["mbs"]),
                 ("--global-batch-size", c["global_batch_tokens"] // seq)]
        if par["ep"] > 1:
            flags.append(("--expert-model-parallel-size", par["ep"]))
        for flag, v in flags if isinstance(ma, str) else []:
            if not re.search(r"%s %d(\s|$)" % (re.escape(flag), v), ma):
                out.append("%s: megatron_args lacks '%s %d': %r" % (n, flag, v, ma))
    return out


def inv_problem(doc, stdout, **_):
    """RFC 9457 problem document with JSON-pointer errors; nothing on stdout."""
    out = []
    if not isinstance(doc, dict):
        return ["stderr is not a JSON object"]
    for k, typ in (("type", str), ("title", str), ("status", int), ("detail", str), ("errors", list)):
        if not isinstance(doc.get(k), typ):
            out.append("problem lacks %s (%s)" % (k, typ.__name__))
    for e in doc.get("errors") or []:
        p = e.get("pointer") if isinstance(e, dict) else None
        if not isinstance(p, str) or (p and not re.fullmatch(r"(/([^~/]|~[01])*)+", p)):
            out.append("error pointer %r is not an RFC 6901 pointer" % (p,))
        if not isinstance(e, dict) or not e.get("detail"):
            out.append("error without detail: %r" % (e,))
    if stdout.strip():
        out.append("stdout not empty on error: %r" % stdout[:200])
    return out


def inv_table(doc_text, json_doc, **_):
    """Roofline --table: one row per op of the JSON result, in order, and the
    totals line with the JSON's step time."""
    out = []
    ops = json_doc["roofline"]["ops"]
    lines = doc_text.split("\n")
    if not lines or not lines[0].split()[:1] == ["op"]:
        return ["no header line: %r" % lines[:1]]
    rows = [l for l in lines[1:] if l.strip() and not l.startswith(("total:", "useful ", "roofline MFU"))]
    if len(rows) != len(ops):
        out.append("%d op rows, JSON has %d ops" % (len(rows), len(ops)))
    for r, o in zip(rows, ops):
        f = r.split()
        if f[:4] != [o["name"], o["phase"], str(o["run"]), "%.0f" % o["count"]]:
            out.append("row %r does not match op %s/%s/%s" % (r, o["name"], o["phase"], o["run"]))
            continue
        if abs(float(f[-1]) - o["time_s"] * 1e3) > 0.00005 + 1e-9 * o["time_s"] * 1e3:
            out.append("row %s: time_ms %s != %.4f" % (o["name"], f[-1], o["time_s"] * 1e3))
        if f[-2] != o["bound"]:
            out.append("row %s: bound %s != %s" % (o["name"], f[-2], o["bound"]))
    m = re.search(r"^total: step ([0-9.]+) s", doc_text, re.M)
    if not m:
        out.append("no 'total: step' line")
    elif abs(float(m.group(1)) - json_doc["roofline"]["step_time_s"]) > 0.00005 * (1 + 1e-9):
        out.append("total step %s != %.4f" % (m.group(1), json_doc["roofline"]["step_time_s"]))
    m = re.search(r"^roofline MFU ([0-9.]+) %", doc_text, re.M)
    if not m or abs(float(m.group(1)) - 100 * json_doc["roofline"]["mfu"]) > 0.005 * (1 + 1e-9):
        out.append("roofline MFU line missing or != %.2f" % (100 * json_doc["roofline"]["mfu"]))
    return out


def inv_search_table(doc_text, json_doc, **_):
    out = []
    lines = [l for l in doc_text.split("\n") if l.strip()]
    cfgs = json_doc["configs"]
    hdr = [i for i, l in enumerate(lines) if l.split()[:2] == ["rank", "dp"]]
    if len(hdr) != 1:
        return ["want one header line starting 'rank dp', got %d" % len(hdr)]
    rows = [l for l in lines[hdr[0] + 1:] if re.match(r"^\s*\d+\s", l)]
    if len(rows) != len(cfgs):
        out.append("%d rows, JSON has %d configs" % (len(rows), len(cfgs)))
    for r, c in zip(rows, cfgs):
        f = r.split()
        want = [str(c["rank"])] + [str(c["parallel"][a]) for a in AXES]
        if f[:7] != want:
            out.append("row %r != rank/axes %r" % (r, want))
    if not re.search(r"^space \d+, evaluated \d+", doc_text, re.M):
        out.append("no stats line")
    return out


CSV_HEADER = ["rank", "dp", "fsdp", "tp", "ep", "pp", "cp", "sp", "zero", "etp", "schedule", "vpp", "mbs",
              "grad_accum", "global_batch_tokens", "recompute", "recompute_layers", "bound_step_time_s",
              "bound_mfu", "bound_hfu", "expected_step_time_s", "expected_mfu", "expected_hfu",
              "tokens_per_s", "memory_total_bytes", "memory_headroom_bytes", "tokens_per_s_per_device",
              "expected_mfu_low", "expected_mfu_high"] + \
    ["gap_%s_points" % g for g in ("memory_bound_ops", "kernel_efficiency", "recompute", "comm_tp", "comm_cp",
                                   "comm_ep", "comm_fsdp", "comm_dp", "comm_pp", "bubble", "optimizer",
                                   "overhead", "offload")] + \
    ["exposed_%s_s" % a for a in ("tp", "cp", "ep", "fsdp", "dp", "pp")]


def inv_csv(doc_text, json_doc, **_):
    """RFC 4180 CSV: CRLF lines, a header, one row per ranked config, values
    equal to the JSON result's."""
    out = []
    if not doc_text.endswith("\r\n") or "\n" in doc_text.replace("\r\n", ""):
        out.append("lines are not CRLF-terminated")
    rows = list(csv.reader(io.StringIO(doc_text, newline="")))
    if not rows or rows[0] != CSV_HEADER:
        return out + ["header %r != %r" % (rows[:1], CSV_HEADER)]
    body = rows[1:]
    cfgs = json_doc["configs"]
    if len(body) != len(cfgs):
        out.append("%d rows, JSON has %d configs" % (len(body), len(cfgs)))
    for r, c in zip(body, cfgs):
        if len(r) != len(CSV_HEADER):
            out.append("row %r has %d fields" % (r, len(r)))
            continue
        rec = dict(zip(CSV_HEADER, r))
        want = {"rank": c["rank"], "schedule": c["schedule"], "recompute": c["recompute"],
                "mbs": c["mbs"], "grad_accum": c["grad_accum"], "sp": int(c["parallel"]["sp"]),
                "bound_mfu": c["bound"]["mfu"], "expected_mfu": c["expected"]["mfu"],
                "expected_step_time_s": c["expected"]["step_time_s"],
                "memory_total_bytes": c["memory"]["total_bytes"],
                "global_batch_tokens": c["global_batch_tokens"]}
        for a in AXES:
            want[a] = c["parallel"][a]
        for k, v in want.items():
            if isinstance(v, str):
                ok = rec[k] == v
            else:
                try:
                    ok = close(float(rec[k]), float(v), rel=1e-8)  # %.9g in the CSV
                except ValueError:
                    ok = False
            if not ok:
                out.append("rank %s: %s = %r, JSON has %r" % (c["rank"], k, rec[k], v))
    return out


ELAPSED = re.compile(r'("elapsed_s":\s*)[-+0-9.eE]+')


def inv_determinism(doc_text, rerun, **_):
    """Same input -> same output, byte for byte, but the wall-clock elapsed_s."""
    a, na = ELAPSED.subn(r"\1X", doc_text)
    b, nb = ELAPSED.subn(r"\1X", rerun())
    out = []
    if na != 1 or nb != 1:
        out.append("expected exactly one elapsed_s per output, found %d and %d" % (na, nb))
    if a != b:
        la, lb = a.split("\n"), b.split("\n")
        diff = [i for i in range(min(len(la), len(lb))) if la[i] != lb[i]]
        out.append("outputs differ (%d vs %d lines); first differing line %s: %r vs %r"
                   % (len(la), len(lb), diff[0] + 1 if diff else "-", la[diff[0]] if diff else "",
                      lb[diff[0]] if diff else ""))
    return out


MEGATRON_MODULES = {"core_attn", "layernorm", "mlp", "moe_act", "moe", "mla_up_proj", "shared_experts"}


def layout_stages(text):
    """A --pipeline-model-parallel-layout's virtual stages, unrolled as
    Megatron's help describes the syntax ("|" between stages, "x*n" and
    "(...)*n" repeat, commas cosmetic)."""
    text = text.replace(",", "")
    while True:
        new = re.sub(r"\(([^()]*)\)\*(\d+)", lambda g: g.group(1) * int(g.group(2)), text)
        new = re.sub(r"([EtLm])\*(\d+)", lambda g: g.group(1) * int(g.group(2)), new)
        if new == text:
            return text.split("|")
        text = new


def megatron_rules(c, L, moe, tied):
    """Megatron-LM's acceptance of a configuration, written from its code
    (core_v0.12 / main): arguments.py validate_args, schedules.py,
    transformer_block.py get_num_layers_to_build, TransformerConfig."""
    par, ps, v, pp, m = c["parallel"], c["pipeline_split"], c["vpp"], c["parallel"]["pp"], c["grad_accum"]
    out = []
    # --use-torch-fsdp2 asserts pp == 1 and ep == 1; with experts or a
    # replica axis (HSDP) FSDP is Megatron-FSDP's optim_grads_params, which
    # is not validated with PP; ZeRO-1/2 on top of FSDP is no setting
    if par["fsdp"] > 1 and (pp > 1 or par["zero"]):
        out.append("FSDP with pp > 1 or ZeRO-1/2")
    # zero 3: FSDP over the cp ranks alone (FSDP2 / Megatron-FSDP over the
    # data-and-context group), the same pp limit
    if par["zero"] == 3 and pp > 1:
        out.append("FSDP over cp with pp > 1")
    if par["zero"] == 2 and pp > 1:
        out.append("Megatron-FSDP optim_grads is not validated with pp")
    if moe and par["tp"] > 1 and not par["sp"]:
        out.append("MoELayer raises without sequence parallel when tp > 1")
    if c["schedule"] not in ("1f1b", "interleaved"):
        out.append("schedule %s" % c["schedule"])
    if c["schedule"] == "interleaved" and (m < pp or m % pp):
        out.append("interleaved: micro-batches %d must be >= pp and a multiple of it (g = pp)" % m)
    argv = (c.get("recipes", {}).get("megatron") or {}).get("argv") or []
    if pp > 1 and "--pipeline-model-parallel-layout" in argv:
        # Megatron-Core's layout (core_v0.13.0 on, pipeline_parallel_layer_layout.py):
        # len divisible by pp (vpp = len / pp), the embedding first, the loss
        # last, once each, every decoder layer placed; any count per stage
        stages = layout_stages(argv[argv.index("--pipeline-model-parallel-layout") + 1])
        flat = "".join(stages)
        if len(stages) != pp * v:
            out.append("layout of %d virtual stages, not pp x vpp = %d" % (len(stages), pp * v))
        if not (flat[:1] == "E" and flat[-1:] == "L" and flat.count("E") == 1 and flat.count("L") == 1):
            out.append("layout does not begin with E and end with L")
        if flat.count("t") != L:
            out.append("layout places %d of %d layers" % (flat.count("t"), L))
        if "--num-virtual-stages-per-pipeline-rank" in argv:
            out.append("layout with --num-virtual-stages-per-pipeline-rank (arguments.py allows one)")
    elif pp > 1:
        first, mid, last = ps["first_stage_layers"], ps["middle_stage_layers"], ps["last_stage_layers"]
        if any(x % v for x in (first, mid, last)):
            out.append("stage layers %d/%d/%d not divisible by vpp %d" % (first, mid, last, v))
        if ps["kind"] == "even" and L % pp:
            out.append("even split of %d layers over pp %d" % (L, pp))
        if ps["kind"] == "account" and (L + 2) % pp:
            out.append("account split: %d + 2 not divisible by pp %d" % (L, pp))
        if first + last + (pp - 2) * mid != L:
            out.append("stages %d + %d + %d x %d != %d layers" % (first, last, pp - 2, mid, L))
    if c["recompute"] not in ("none", "full") and not set(c["recompute_modules"]) <= MEGATRON_MODULES:
        out.append("recompute modules %r" % c["recompute_modules"])
    return out


def torchtitan_rules(c, L, moe, tied, seq):
    """torchtitan's acceptance (v0.2.2 / main): parallel_dims.py _validate,
    pipeline_parallel.py, PyTorch schedules.py, activation_checkpoint.py."""
    par, v, pp, m = c["parallel"], c["vpp"], c["parallel"]["pp"], c["grad_accum"]
    out = []
    if par["zero"] in (1, 2):
        out.append("no ZeRO-1/2 (FSDP only)")
    # parallel_dims.py: fsdp_enabled = dp_shard > 1 or cp > 1 -- with cp and
    # dp_shard 1 the cp ranks shard the model, they never replicate it
    if par["cp"] > 1 and par["fsdp"] == 1 and par["zero"] != 3:
        out.append("cp > 1 with dp_shard 1 is FSDP over cp (zero 3), not replicas")
    if par["tp"] > 1 and not par["sp"]:
        out.append("tp without sequence parallel")
    div = (par["tp"] if par["sp"] else 1) * (2 * par["cp"] if par["cp"] > 1 else 1)
    if (c["mbs"] * seq) % div:
        out.append("tokens per micro-batch not divisible by tp * 2cp")
    if par["ep"] > 1 and (par["etp"] not in (1, par["tp"]) or (par["fsdp"] * par["cp"] * par["tp"]) % (par["ep"] * par["etp"])):
        out.append("ep %d etp %d do not fold into dp_shard * cp * tp" % (par["ep"], par["etp"]))
    if pp > 1:
        if c["schedule"] == "1f1b" and m < pp:
            out.append("Schedule1F1B: micro-batches < stages")
        if c["schedule"] == "interleaved" and m % max(1, m // pp):
            out.append("Interleaved1F1B: micro-batches % max(1, m // pp)")
        # DualPipeV: 2 stages per rank in a V (pipeline_parallel.py
        # _get_pp_rank_to_stage_indices_mapping: "v schedules assume 2
        # stages per rank"); DualPipe's dualpipev.py: num_chunks >= 2 ranks
        if c["schedule"] == "dualpipev" and (v != 2 or m < 2 * pp):
            out.append("DualPipeV: vpp %d, micro-batches %d < 2 pp" % (v, m))
        if c["schedule"] not in ("1f1b", "interleaved", "gpipe", "dualpipev") or (c["schedule"] == "gpipe" and v != 1):
            out.append("schedule %s vpp %d" % (c["schedule"], v))
        if tied:
            out.append("pp with tied embeddings")
    # op-level SAC (activation_checkpoint.py _apply_op_sac) is op_sac: it
    # keeps every other matmul's output, not minimal's every one
    if c["recompute"] not in ("none", "full", "op_sac"):
        out.append("recompute %s" % c["recompute"])
    return out


def inv_frameworks(doc, req, **_):
    """Every ranked configuration names a framework, and that framework's own
    rules (re-implemented here from its code) accept it."""
    out = []
    L = doc["model"]["resolved"]["layers_total"]
    ir = doc["model"]["resolved"]["ir"]
    moe = any(r["mlp"].get("type") == "moe" for r in ir["layers"])
    tied = ir.get("tie_embeddings", False)
    seq = req["training"]["seq_len"]
    for c in doc.get("configs", []):
        fws = c.get("frameworks") or []
        if not fws:
            out.append("rank %s: no framework named" % c["rank"])
        for f in fws:
            bad = megatron_rules(c, L, moe, tied) if f == "megatron" else \
                torchtitan_rules(c, L, moe, tied, seq) if f == "torchtitan" else []
            for b in bad:
                out.append("rank %s: named %s, which refuses it: %s" % (c["rank"], f, b))
    return out


INVARIANTS = {"finite": inv_finite, "roofline": inv_roofline, "search": inv_search,
              "problem": inv_problem, "table": inv_table, "search_table": inv_search_table,
              "csv": inv_csv, "determinism": inv_determinism, "frameworks": inv_frameworks}
TEXT_INVARIANTS = {"table", "search_table", "csv"}


# ---- cases -------------------------------------------------------------------

def run_one(ctx, mfu, name, exp, req_path, checks, invariants, names):
    """Run the CLI on one request and apply checks and invariants."""
    cmd = exp.get("command", "roofline")
    args = exp.get("args", [])
    want_exit = exp.get("exit", 0)
    try:
        with open(req_path) as f:
            req_text = f.read()
        try:
            req = json.loads(req_text)
        except ValueError:
            req = None  # a malformed-JSON case
        rc, so, se, _ = run_cli(mfu, cmd, args, req_path)
    except (OSError, subprocess.TimeoutExpired) as e:
        ctx.result("%s: run" % name, ["cannot run: %s" % e])
        return
    ctx.result("%s: exit status %d" % (name, want_exit),
               [] if rc == want_exit else ["exit %d, want %d; stderr: %s" % (rc, want_exit, se[:600])])
    if rc != want_exit:
        return
    text = se if want_exit else so
    doc, bad = None, []
    is_text = bool(set(invariants) & TEXT_INVARIANTS)
    if not is_text and cmd != "key":
        try:
            doc, bad = load_json(text)
        except ValueError as e:
            ctx.result("%s: output is JSON" % name, ["%s: %s" % (e, text[:300])])
            return
    json_doc = None
    if is_text:  # the same request as JSON, to compare the text rendering with
        rc2, so2, se2, _ = run_cli(mfu, cmd, [], req_path)
        try:
            json_doc = json.loads(so2)
        except ValueError:
            ctx.result("%s: JSON form" % name, ["exit %d: %s" % (rc2, se2[:300])])
            return
    for inv in invariants:
        fn = INVARIANTS.get(inv)
        if fn is None:
            ctx.result("%s: invariant %s" % (name, inv), ["unknown invariant"])
            continue
        try:
            fails = fn(doc=doc, bad_tokens=bad, req=req, stdout=so, doc_text=text, json_doc=json_doc,
                       rerun=lambda: run_cli(mfu, cmd, args, req_path)[1])
        except (KeyError, TypeError, IndexError, ValueError, ZeroDivisionError) as e:
            fails = ["output lacks what the invariant reads: %s: %r" % (type(e).__name__, e)]
        ctx.result("%s: invariant %s" % (name, inv), fails)
    for chk in checks:
        if is_text or cmd == "key":
            target = json_doc
        else:
            target = doc
        try:
            fails = run_check(target, chk, names)
        except (ValueError, ZeroDivisionError) as e:
            fails = ["bad check %r: %s" % (chk, e)]
        ctx.result("%s: %s" % (name, check_label(chk)), fails)


def resolve_includes(x, root):
    """{"@include": "presets/...json#/pointer", "@set": {ptr: value}, "@delete": [ptr]}
    -> that part of a repository file, edited: variants built from a preset's
    own definition follow the preset when it changes."""
    if isinstance(x, list):
        return [resolve_includes(v, root) for v in x]
    if not isinstance(x, dict):
        return x
    if "@include" not in x:
        return {k: resolve_includes(v, root) for k, v in x.items()}
    path, _, ptr = x["@include"].partition("#")
    with open(os.path.join(root, path)) as f:
        val = json.loads(json.dumps(pointer_get(json.load(f), ptr)))
    for p, v in x.get("@set", {}).items():
        *parent, last = p[1:].split("/")
        cont = pointer_get(val, "/" + "/".join(parent)) if parent else val
        cont[int(last) if isinstance(cont, list) else last] = v
    for p in x.get("@delete", []):
        *parent, last = p[1:].split("/")
        cont = pointer_get(val, "/" + "/".join(parent)) if parent else val
        del cont[int(last) if isinstance(cont, list) else last]
    return val


def run_key_case(ctx, mfu, name, exp, cases_dir):
    base = os.path.join(cases_dir, name + ".request.json")
    keyre = re.compile(r"^[0-9a-f]{64}\n$")

    def key(path):
        rc, so, se, _ = run_cli(mfu, "key", [], path)
        return so if rc == 0 and keyre.match(so) else None, rc, se
    k0, rc, se = key(base)
    ctx.result("%s: key of the base request" % name,
               [] if k0 else ["exit %d, stdout not a 64-hex key; %s" % (rc, se[:300])])
    if not k0:
        return
    for kind, same in (("same", True), ("diff", False)):
        listed = exp.get("key_same" if same else "key_differs", {})
        on_disk = {os.path.basename(p)[len(name) + len(kind) + 2:-len(".json")]
                   for p in glob.glob(os.path.join(cases_dir, "%s.%s.*.json" % (name, kind)))}
        for suffix in sorted(on_disk | set(listed)):
            label = "%s: key %s %s" % (name, "equal for" if same else "differs for", suffix)
            if suffix not in listed or suffix not in on_disk or not listed[suffix]:
                ctx.result(label, ["variant file and its 'why' must both exist (%s.%s.%s.json)" % (name, kind, suffix)])
                continue
            vpath = os.path.join(cases_dir, "%s.%s.%s.json" % (name, kind, suffix))
            with open(vpath) as f:
                vtext = f.read()
            tmp = None
            if "@include" in vtext:  # write the resolved variant to a temporary file
                root = os.path.normpath(os.path.join(cases_dir, "..", "..", ".."))
                try:
                    resolved = resolve_includes(json.loads(vtext), root)
                except (OSError, ValueError, KeyError, IndexError) as e:
                    ctx.result(label, ["cannot resolve @include: %s" % e])
                    continue
                vpath = tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mfu-golden-%d-key.json" % os.getpid())
                with open(vpath, "w") as f:
                    json.dump(resolved, f)
            try:
                k, rc, se = key(vpath)
            finally:
                if tmp:
                    os.unlink(tmp)
            if k is None:
                ctx.result(label, ["exit %d; %s" % (rc, se[:300])])
            elif (k == k0) != same:
                ctx.result(label, ["key %s, base %s (%s)" % (k.strip(), k0.strip(), listed[suffix])])
            else:
                ctx.result(label, [])
        if same and len(listed) == 0 and "key_same" in exp:
            ctx.result("%s: key_same" % name, ["no variants"])


def model_presets(mfu):
    out = subprocess.run([mfu, "presets", "models"], stdout=subprocess.PIPE, timeout=30).stdout
    return [p["name"] for p in json.loads(out)]


def run_case(ctx, mfu, cases_dir, name):
    path = os.path.join(cases_dir, name + ".expect.json")
    try:
        with open(path) as f:
            exp = json.load(f)
    except (OSError, ValueError) as e:
        ctx.result("%s: expect file" % name, ["%s" % e])
        return
    if not exp.get("source"):
        ctx.result("%s: expect file" % name, ["no 'source': every case names its independent source"])
        return
    names = {k: float(v) for k, v in exp.get("vars", {}).items()}
    if "key_same" in exp or "key_differs" in exp:
        run_key_case(ctx, mfu, name, exp, cases_dir)
        return
    req_path = os.path.join(cases_dir, exp.get("request", name + ".request.json"))
    if "model_presets" in exp:
        mp = exp["model_presets"]
        presets = model_presets(mfu)
        per = mp.get("expect", {})
        unknown = sorted(set(per) - set(presets))
        ctx.result("%s: every expected preset is listed by `mfu presets models`" % name,
                   ["not listed: %s" % ", ".join(unknown)] if unknown else [])
        ctx.result("%s: presets listed" % name, [] if len(presets) >= mp.get("min_presets", 1) else
                   ["%d presets, want at least %d" % (len(presets), mp.get("min_presets", 1))])
        with open(req_path) as f:
            template = f.read()
        tmp_dir = os.environ.get("TMPDIR", "/tmp")
        for p in presets:
            tmp = os.path.join(tmp_dir, "mfu-golden-%d-%s.json" % (os.getpid(), re.sub(r"[^A-Za-z0-9_.-]", "_", p)))
            with open(tmp, "w") as f:
                # models with a learned position table of 2048 run at their own length
                seq = mp.get("seq_len", {}).get(p, mp.get("default_seq_len", 4096))
                f.write(template.replace("@PRESET@", p).replace("@SEQ@", str(seq)))
            try:
                pnames = dict(names, **{k: float(v) for k, v in mp.get("vars", {}).get(p, {}).items()})
                run_one(ctx, mfu, "%s[%s]" % (name, p), exp, tmp, per.get(p, []),
                        exp.get("invariants", []), pnames)
            finally:
                os.unlink(tmp)
        return
    run_one(ctx, mfu, name, exp, req_path, exp.get("checks", []), exp.get("invariants", []), names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mfu", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("only", nargs="*")
    a = ap.parse_args()
    ctx = Ctx(a.v)
    names = sorted(os.path.basename(p)[:-len(".expect.json")]
                   for p in glob.glob(os.path.join(a.cases, "*.expect.json")))
    if a.only:
        names = [n for n in names if n in a.only]
    if not names:
        ctx.result("golden cases", ["no cases found in %s" % a.cases])
    # every request file belongs to a case (nothing silently skipped)
    reqs = {os.path.basename(p)[:-len(".request.json")] for p in glob.glob(os.path.join(a.cases, "*.request.json"))}
    used = set()
    for n in names:
        try:
            with open(os.path.join(a.cases, n + ".expect.json")) as f:
                r = json.load(f).get("request")
            used.add(r[:-len(".request.json")] if r else n)
        except (OSError, ValueError, AttributeError):
            used.add(n)
    if not a.only and reqs - used:
        ctx.result("every request has an expect file", ["orphans: %s" % ", ".join(sorted(reqs - used))])
    t0 = time.monotonic()
    for n in names:
        run_case(ctx, a.mfu, a.cases, n)
    if a.v:
        print("golden: %.2f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (ctx.passed, ctx.failed))
    return 1 if ctx.failed else 0


if __name__ == "__main__":
    sys.exit(main())
