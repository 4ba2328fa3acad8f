#!/usr/bin/env python3
"""tests/integration/trace_check.py -- hand counts of the real traces in
../shared/traces, computed here independently of mfud's reader (Python's
json and gzip over the whole document), against `mfu trace FILE`.

Definitions (docs/traces.md): a GPU event (cat kernel/gpu_memcpy/gpu_memset)
belongs to the ProfilerStep#N annotation whose host window holds the
cudaLaunch* call with the same correlation id (else its own start); a
kernel is NCCL all-reduce when its name has "nccl" and "allreduce"; GEMM
when the name before its parameters has gemm/gemv/cutlass/cublas/Cijk_/
matmul/xmma/splitKreduce/dot and is not FBGEMM's (fbgemm_gpu); busy is the union of the
step's GPU intervals; exposed communication is the collectives' time not
covered by the union of compute kernels; a GEMM's FLOPs (record_shapes)
are those of the aten::mm/addmm/bmm/baddbmm op, with input shapes, whose
window on the launching thread holds its launch.

usage: trace_check.py MFU TRACE...   prints "N passed, N failed"."""
import bisect
import gzip
import json
import subprocess
import sys

from tally import check, finish


def near(a, b, rel=1e-9, abs_=1e-12):
    return abs(a - b) <= max(rel * abs(b), abs_)


def union(iv):
    iv = sorted(iv)
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(u, a, b):
    return sum(max(0.0, min(b, y) - max(a, x)) for x, y in u if x < b and y > a)


def hand(path):
    d = json.loads(gzip.open(path).read())
    ev = d["traceEvents"]
    steps = sorted((e["ts"], e["dur"], e["name"]) for e in ev
                   if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                   and str(e.get("name", "")).startswith("ProfilerStep#"))
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X" and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e["ts"]
    starts = [s[0] for s in steps]
    launch_at = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X" and "correlation" in e.get("args", {}):
            launch_at[e["args"]["correlation"]] = (e.get("tid"), e["ts"])
    ops_by_tid = {}
    for e in ev:
        a = e.get("args", {})
        if e.get("cat") != "cpu_op" or e.get("ph") != "X" or "Input Dims" not in a:
            continue
        dims = a["Input Dims"]
        name = e["name"]
        f = None
        if name in ("aten::mm", "aten::bmm") and len(dims) >= 2:
            x, y = dims[0], dims[1]
        elif name in ("aten::addmm", "aten::baddbmm") and len(dims) >= 3:
            x, y = dims[1], dims[2]
        else:
            continue
        if name in ("aten::mm", "aten::addmm") and len(x) == 2 and len(y) == 2 and x[1] == y[0]:
            f = 2.0 * x[0] * x[1] * y[1]
        elif name in ("aten::bmm", "aten::baddbmm") and len(x) == 3 and len(y) == 3 and x[2] == y[1]:
            f = 2.0 * x[0] * x[1] * x[2] * y[2]
        if f:
            ops_by_tid.setdefault(e.get("tid"), []).append({"ts": e["ts"], "dur": e.get("dur", 0), "flops": f})
    for v in ops_by_tid.values():
        v.sort(key=lambda o: o["ts"])
    per = [[] for _ in steps]
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        at = launch.get(e.get("args", {}).get("correlation", -1), e["ts"])
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and at <= steps[i][0] + steps[i][1]:
            per[i].append(e)
    out = []
    for (ts, dur, name), evs in zip(steps, per):
        # the name before its parameter list, lower case
        low = lambda e: e["name"].split("(")[0].lower()
        nccl_ar = [e for e in evs if e["cat"] == "kernel" and ("nccl" in low(e) or "rccl" in low(e))
                   and ("allreduce" in low(e) or "all_reduce" in low(e))]
        comm = [e for e in evs if e["cat"] == "kernel" and ("nccl" in low(e) or "rccl" in low(e))]
        gemm = [e for e in evs if e["cat"] == "kernel" and e not in comm and not any(
            k in low(e) for k in ("flash", "fmha", "attention", "sdpa")) and "fbgemm_gpu" not in low(e)
            and any(k in low(e) for k in ("gemm", "gemv", "cutlass", "cublas", "cijk_", "matmul", "xmma",
                                          "splitkreduce", "dot_general", "dot."))]
        compute = [e for e in evs if e["cat"] == "kernel" and e not in comm]
        cu = union([[e["ts"], e["ts"] + e["dur"]] for e in compute])
        busy = sum(b - a for a, b in union([[e["ts"], e["ts"] + e["dur"]] for e in evs]))
        exposed = sum(e["dur"] - covered(cu, e["ts"], e["ts"] + e["dur"]) for e in comm)
        # record_shapes: the GEMM kernels launched inside an aten::mm /
        # addmm / bmm / baddbmm recorded with its input shapes (the launch's
        # time inside the op's window on its thread), the op's 2 m n k (b)
        # counted once, the kernels' time summed
        flops, gtime, seen = 0.0, 0.0, set()
        for e in gemm:
            c = e.get("args", {}).get("correlation", -1)
            if c not in launch_at:
                continue
            tid, t = launch_at[c]
            op = None
            for o in ops_by_tid.get(tid, []):
                if o["ts"] <= t <= o["ts"] + o["dur"]:
                    op = o
            if op is None:
                continue
            gtime += e["dur"]
            if id(op) not in seen:
                seen.add(id(op))
                flops += op["flops"]
        out.append({"name": name, "step_s": dur * 1e-6, "events": len(evs), "allreduce_n": len(nccl_ar),
                    "gemm_flops": flops, "gemm_shaped_s": gtime * 1e-6,
                    "allreduce_s": sum(e["dur"] for e in nccl_ar) * 1e-6, "gemm_n": len(gemm),
                    "gemm_s": sum(e["dur"] for e in gemm) * 1e-6, "busy_s": busy * 1e-6,
                    "comm_s": sum(e["dur"] for e in comm) * 1e-6, "exposed_s": exposed * 1e-6})
    return out


mfu = sys.argv[1]
for path in sys.argv[2:]:
    want = hand(path)
    p = subprocess.run([mfu, "trace", path], capture_output=True, text=True)
    if not check(p.returncode == 0, "%s: mfu trace exited %d: %s" % (path, p.returncode, p.stderr[:200])):
        continue
    got = json.loads(p.stdout)["steps"]
    check(len(got) == len(want), "%s: %d steps, hand count %d" % (path, len(got), len(want)))
    for g, w in zip(got, want):
        tag = "%s %s" % (path.split("/")[-1], w["name"])
        k = g["kernels"]
        check(near(g["step_time_s"], w["step_s"]), "%s: step time %r != %r" % (tag, g["step_time_s"], w["step_s"]))
        check(g["gpu_events"] == w["events"], "%s: %d GPU events, hand %d" % (tag, g["gpu_events"], w["events"]))
        check(k["allreduce"]["count"] == w["allreduce_n"], "%s: all-reduce kernels %d, hand %d" % (tag, k["allreduce"]["count"], w["allreduce_n"]))
        check(near(k["allreduce"]["time_s"], w["allreduce_s"]), "%s: all-reduce time %r != %r" % (tag, k["allreduce"]["time_s"], w["allreduce_s"]))
        check(k["gemm"]["count"] == w["gemm_n"], "%s: GEMM kernels %d, hand %d" % (tag, k["gemm"]["count"], w["gemm_n"]))
        check(near(k["gemm"]["time_s"], w["gemm_s"]), "%s: GEMM time %r != %r" % (tag, k["gemm"]["time_s"], w["gemm_s"]))
        check(near(g["gpu_busy_s"], w["busy_s"], 1e-7), "%s: busy %r != %r" % (tag, g["gpu_busy_s"], w["busy_s"]))
        ga = g.get("gemm_achieved", {"flops": 0.0, "time_s": 0.0})
        check(near(ga["flops"], w["gemm_flops"]), "%s: GEMM FLOPs (record_shapes) %r != %r" % (tag, ga["flops"], w["gemm_flops"]))
        check(near(ga["time_s"], w["gemm_shaped_s"]), "%s: shaped GEMM time %r != %r" % (tag, ga["time_s"], w["gemm_shaped_s"]))
        check(near(g["communication"]["time_s"], w["comm_s"]), "%s: communication %r != %r" % (tag, g["communication"]["time_s"], w["comm_s"]))
        check(near(g["communication"]["exposed_s"], w["exposed_s"], 1e-7, 1e-9),
              "%s: exposed %r != %r" % (tag, g["communication"]["exposed_s"], w["exposed_s"]))
sys.exit(finish())
