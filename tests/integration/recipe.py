"""tests/integration/recipe.py -- launch recipes against the frameworks' own
argument lists (issue 11, item 2).

For a few known layouts, runs `mfu search` and checks every configuration's
recipes:
  (a) Megatron-LM: the argv parses with an argparse parser rebuilt from
      tests/data/megatron_arguments.txt (megatron/training/arguments.py,
      core_v0.15.0; unknown flags, bad types and bad choices fail), and the
      parsed values are the configuration's; megatron_args is that argv as
      one shell line;
  (b) torchtitan: the TOML parses (tomllib), every key is one of
      tests/data/torchtitan_keys.txt (torchtitan/config/job_config.py,
      v0.2.2) with a value of its type, and the values are the configuration's;
  (c) MaxText: every key=value key is one of tests/data/maxtext_keys.txt
      (src/maxtext/configs/base.yml), and the ICI x DCN mesh covers the devices;
plus a golden check of the whole Megatron-LM argv of GPT-3 175B as
Narayanan et al. 2021 (Table 1) ran it.

usage: recipe.py MFU ROOT  -- prints one line per failure and ends with
"N passed, N failed".
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tomllib

from tally import check, finish

MFU, ROOT = sys.argv[1], sys.argv[2]


def data(name):
    with open(os.path.join(ROOT, "tests", "data", name)) as f:
        return [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]


# ---- the frameworks' argument lists --------------------------------------

class ParseError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ParseError(message)


def megatron_parser():
    p = Parser(add_help=False, allow_abbrev=False)
    types = {"int": int, "float": float, "str": str}
    for line in data("megatron_arguments.txt"):
        cols = line.split("\t") + [""] * 5
        opt, kind, typ, nargs, choices = cols[:5]
        kw = {"dest": opt}
        if kind == "flag":
            kw["action"] = "store_true"
        else:
            kw["type"] = types.get(typ, str)
            if kind == "list":
                kw["nargs"] = int(nargs) if nargs.isdigit() else nargs
            if choices:
                kw["choices"] = [kw["type"](c) for c in choices.split(",")]
        p.add_argument(opt, **kw)
    return p


def torchtitan_keys():
    keys = {}
    for line in data("torchtitan_keys.txt"):
        cols = line.split("\t") + ["", ""]
        keys[cols[0]] = (cols[1], cols[2].split(",") if cols[2] else [])
    return keys


MEGATRON = megatron_parser()
TT_KEYS = torchtitan_keys()
MX_KEYS = set(data("maxtext_keys.txt"))


# ---- the recipes of one configuration ---------------------------------------

def search(req):
    out = subprocess.run([MFU, "search", "-"], input=json.dumps(req), capture_output=True, text=True)
    if not check(out.returncode == 0, "mfu search exited %d: %s" % (out.returncode, out.stderr[:300])):
        return None
    return json.loads(out.stdout)


def parse_layout(text):
    """Megatron-Core's --pipeline-model-parallel-layout syntax, as its help
    (arguments.py) and transformer/pipeline_parallel_layer_layout.py describe
    it: virtual stages split by "|", "E" embedding, "L" loss, "t" a decoder
    layer, "m" an MTP layer, "x*n" and "(...)*n" repeat, commas cosmetic.
    Returns one string of layer letters per virtual stage."""
    text = text.replace(",", "")
    out, i = "", 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth, j = 1, i + 1
            while depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            inner = text[i + 1:j - 1]
            k = j + 1  # past "*"
            n = ""
            while k < len(text) and text[k].isdigit():
                n += text[k]
                k += 1
            out += inner * int(n)
            i = k
        elif i + 1 < len(text) and text[i + 1] == "*":
            k, n = i + 2, ""
            while k < len(text) and text[k].isdigit():
                n += text[k]
                k += 1
            out += ch * int(n)
            i = k
        else:
            out += ch
            i += 1
    if "(" in out or "*" in out:
        return parse_layout(out)
    return out.split("|")


def pp_layout(name, layout, c, layers, mtp=0):
    """The layout Megatron would build: its virtual stages per rank, the
    embedding first, the loss last, and each rank's layers the split's;
    the MTP layers (--mtp-num-layers) after every decoder layer, all in
    one virtual stage, the last of its rank, not rank 0's (Megatron-Core
    pipeline_parallel_layer_layout.py validate_layer_layout)."""
    stages = parse_layout(layout)
    pp, vpp = c["parallel"]["pp"], c["vpp"]
    check(len(stages) == pp * vpp, "%s: layout %r has %d virtual stages, not pp x vpp = %d" %
          (name, layout, len(stages), pp * vpp))
    check(all(set(st) <= set("EtmL") for st in stages), "%s: layout %r has unknown layers" % (name, layout))
    flat = "".join(stages)
    check(flat.count("m") == mtp, "%s: layout %r has %d MTP layers, --mtp-num-layers %d" %
          (name, layout, flat.count("m"), mtp))
    if mtp:
        check("t" not in flat[flat.index("m"):], "%s: layout %r has decoder layers after MTP" % (name, layout))
        holders = [i for i, st in enumerate(stages) if "m" in st]
        check(len(holders) == 1 and stages[holders[0]].count("m") == mtp and holders[0] // pp == vpp - 1 and
              holders[0] % pp != 0, "%s: layout %r: MTP not in one last virtual stage of a rank past 0" %
              (name, layout))
    check(flat.startswith("E") and flat.endswith("L") and flat.count("E") == 1 and flat.count("L") == 1,
          "%s: layout %r does not start with E and end with L" % (name, layout))
    check(flat.count("t") == layers, "%s: layout %r has %d decoder layers, the model %d" %
          (name, layout, flat.count("t"), layers))
    per_rank = [sum(stages[j * pp + r].count("t") for j in range(vpp)) for r in range(pp)]
    sp = c["pipeline_split"]
    want = [sp["first_stage_layers"]] + [sp["middle_stage_layers"]] * (pp - 2) + [sp["last_stage_layers"]]
    # the split reports ranks 0, 1 and pp-1 (an even split's remainder may
    # leave the other middle ranks a layer short of rank 1)
    check(per_rank[0] == want[0] and per_rank[-1] == want[-1] and (pp <= 2 or per_rank[1] == want[1]),
          "%s: layout %r puts %r layers on the ranks, the split says %r" % (name, layout, per_rank, want))


def megatron(name, c, seq, layers, moe):
    rec = c["recipes"]["megatron"]
    if "megatron" not in c["frameworks"]:
        check("unavailable" in rec and rec["unavailable"], "%s: Megatron-LM does not launch it but has %r" % (name, rec))
        check(c["megatron_args"] is None, "%s: megatron_args without a recipe" % name)
        return
    if not check("argv" in rec, "%s: Megatron-LM launches it but the recipe is %r" % (name, rec)):
        return
    argv = rec["argv"]
    check(all(isinstance(w, str) and w and not any(ch.isspace() for ch in w) for w in argv),
          "%s: an argv word is empty or has white space: %r" % (name, argv))
    check(isinstance(c["megatron_args"], str) and shlex.split(c["megatron_args"]) == argv,
          "%s: megatron_args is not the argv as one shell line" % name)
    try:
        a = vars(MEGATRON.parse_args(argv))
    except ParseError as e:
        check(False, "%s: Megatron-LM's parser refuses the argv: %s" % (name, e))
        return
    par = c["parallel"]
    gbs = c["global_batch_tokens"] // seq
    want = {"--tensor-model-parallel-size": par["tp"], "--pipeline-model-parallel-size": par["pp"],
            "--context-parallel-size": par["cp"], "--micro-batch-size": c["mbs"],
            "--global-batch-size": gbs, "--seq-length": seq, "--num-layers": layers,
            "--sequence-parallel": bool(par["sp"] and par["tp"] > 1),
            "--use-distributed-optimizer": par["zero"] in (1, 2), "--use-megatron-fsdp": par["zero"] == 2,
            "--use-torch-fsdp2": par["fsdp"] > 1 or par["zero"] == 3}
    # FSDP (an fsdp axis, or zero 3 over the cp ranks alone) with experts or
    # a replica axis (HSDP) is Megatron-FSDP's optim_grads_params (ZeRO-3),
    # HSDP as dp distributed-optimizer instances
    mfsdp = (par["fsdp"] > 1 or par["zero"] == 3) and (par["dp"] > 1 or par["ep"] > 1)
    if mfsdp:
        want["--use-torch-fsdp2"] = False
        want["--use-megatron-fsdp"] = True
        want["--use-distributed-optimizer"] = True
        want["--data-parallel-sharding-strategy"] = "optim_grads_params"
        want["--num-distributed-optimizer-instances"] = par["dp"] if par["dp"] > 1 else None
        want["--ckpt-format"] = "fsdp_dtensor"
    if moe:
        want["--expert-model-parallel-size"] = par["ep"]
        want["--expert-tensor-parallel-size"] = par["etp"]
    if par["zero"] == 2:
        want["--data-parallel-sharding-strategy"] = "optim_grads"
    split = c["pipeline_split"]
    layout = a["--pipeline-model-parallel-layout"]
    if layout is not None:
        pp_layout(name, layout, c, layers, a["--mtp-num-layers"] or 0)
        want["--num-virtual-stages-per-pipeline-rank"] = None
        want["--account-for-embedding-in-pipeline-split"] = False
        want["--decoder-first-pipeline-num-layers"] = None
    elif par["pp"] > 1:
        if c["schedule"] == "interleaved":
            want["--num-virtual-stages-per-pipeline-rank"] = c["vpp"]
        want["--account-for-embedding-in-pipeline-split"] = split["kind"] == "account"
        want["--account-for-loss-in-pipeline-split"] = split["kind"] == "account"
        if split["kind"] == "first_last":
            want["--decoder-first-pipeline-num-layers"] = split["first_stage_layers"]
            want["--decoder-last-pipeline-num-layers"] = split["last_stage_layers"]
    if c["recompute"] == "none":
        want["--recompute-granularity"] = None
    elif c["recompute"] == "cpu_offload":
        want["--recompute-granularity"] = None
        want["--cpu-offloading-num-layers"] = c["recompute_layers"]
    elif c["recompute"] == "full":
        want["--recompute-granularity"] = "full"
        want["--recompute-method"] = "uniform" if c["recompute_layers"] < 0 else "block"
    else:
        want["--recompute-granularity"] = "selective"
        want["--recompute-modules"] = c["recompute_modules"]
    # the batch Megatron-LM builds: gbs = mbs x micro-batches x data-parallel size
    dpsize = par["dp"] * par["fsdp"]
    check(gbs % (c["mbs"] * dpsize) == 0 and gbs // (c["mbs"] * dpsize) == c["grad_accum"],
          "%s: --global-batch-size %d is not mbs x grad_accum x dp" % (name, gbs))
    for k, v in want.items():
        check(a[k] == v, "%s: %s parsed as %r, the configuration says %r" % (name, k, a[k], v))


def flatten(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flatten(v, prefix + k + ".")
        else:
            yield prefix + k, v


def torchtitan(name, c, seq, layers):
    rec = c["recipes"]["torchtitan"]
    if "torchtitan" not in c["frameworks"]:
        check("unavailable" in rec and rec["unavailable"], "%s: torchtitan does not launch it but has %r" % (name, rec))
        return
    if "unavailable" in rec:  # a model or runtime limit the legality rules do not know (docs/recipes.md)
        check(bool(rec["unavailable"]), "%s: torchtitan unavailable without a reason" % name)
        return
    try:
        t = tomllib.loads(rec["toml"])
    except (tomllib.TOMLDecodeError, KeyError) as e:
        check(False, "%s: the torchtitan recipe is not TOML: %s" % (name, e))
        return
    types = {"int": int, "float": (int, float), "bool": bool, "str": str, "list": list}
    for k, v in flatten(t):
        if not check(k in TT_KEYS, "%s: torchtitan has no key %s" % (name, k)):
            continue
        typ, lits = TT_KEYS[k]
        if typ == "literal":
            check(v in lits, "%s: %s = %r is not one of %r" % (name, k, v, lits))
        else:
            check(isinstance(v, types[typ]) and not (typ == "int" and isinstance(v, bool)),
                  "%s: %s = %r is not a %s" % (name, k, v, typ))
    par, p, tr = c["parallel"], t["parallelism"], t["training"]
    gbs = c["global_batch_tokens"] // seq
    want = {"data_parallel_replicate_degree": par["dp"], "data_parallel_shard_degree": par["fsdp"],
            "tensor_parallel_degree": par["tp"], "pipeline_parallel_degree": par["pp"],
            "context_parallel_degree": par["cp"]}
    for k, v in want.items():
        check(p.get(k) == v, "%s: parallelism.%s = %r, the configuration says %r" % (name, k, p.get(k), v))
    check(tr["global_batch_size"] == gbs and tr["seq_len"] == seq, "%s: torchtitan batch or sequence" % name)
    # torchtitan's own arithmetic (train.py, pipeline_parallel.py) must give
    # back the micro-batches of the configuration
    batch_degree = par["dp"] * par["fsdp"]
    accum = gbs // (tr["local_batch_size"] * batch_degree)
    micro = tr["local_batch_size"] // p.get("pipeline_parallel_microbatch_size", tr["local_batch_size"])
    check(gbs % (tr["local_batch_size"] * batch_degree) == 0 and accum * micro == c["grad_accum"]
          and tr["local_batch_size"] // micro == c["mbs"],
          "%s: torchtitan runs %d x %d micro-batches, the configuration %d of %d" %
          (name, accum, micro, c["grad_accum"], c["mbs"]))
    mode = t["activation_checkpoint"]["mode"]
    check(mode == {"none": "none", "full": "full"}.get(c["recompute"], "selective"),
          "%s: activation_checkpoint.mode %s for %s" % (name, mode, c["recompute"]))
    parts = p.get("module_fqns_per_model_part")
    if parts is not None:
        # every layer once, in order; each rank's share as the split says
        flat = [m for part in parts for m in part if m.startswith("layers.")]
        check(flat == ["layers.%d" % i for i in range(layers)], "%s: stages do not hold every layer once" % name)
        pp = par["pp"]
        check(len(parts) % pp == 0, "%s: %d model parts over %d ranks" % (name, len(parts), pp))
        per_rank = [sum(sum(m.startswith("layers.") for m in parts[s]) for s in range(r, len(parts), pp))
                    for r in range(pp)]
        split = c["pipeline_split"]
        check(per_rank[0] == split["first_stage_layers"] and per_rank[-1] == split["last_stage_layers"]
              and (pp <= 2 or per_rank[1] == split["middle_stage_layers"]),
              "%s: layers per rank %r against the split %r" % (name, per_rank, split))


def maxtext(name, c, seq, devices):
    rec = c["recipes"]["maxtext"]
    if "maxtext" not in c["frameworks"]:
        check("unavailable" in rec and rec["unavailable"], "%s: MaxText does not launch it but has %r" % (name, rec))
        return
    if not check("argv" in rec, "%s: MaxText launches it but the recipe is %r" % (name, rec)):
        return
    kv = {}
    for w in rec["argv"]:
        k, eq, v = w.partition("=")
        check(eq == "=" and k in MX_KEYS, "%s: %r is not a key of base.yml" % (name, w))
        kv[k] = v
    axes = ["data", "fsdp", "tensor", "pipeline", "context", "expert"]
    ici = dcn = 1
    for a in axes:
        ici *= int(kv.get("ici_%s_parallelism" % a, "1"))
        dcn *= int(kv.get("dcn_%s_parallelism" % a, "1"))
    check(ici * dcn == devices and devices % ici == 0, "%s: ICI %d x DCN %d != %d chips" % (name, ici, dcn, devices))
    gbs = c["global_batch_tokens"] // seq
    ga = int(kv.get("gradient_accumulation_steps", "1"))
    # configs/types.py calculate_global_batch_sizes
    check(int(devices * float(kv["per_device_batch_size"])) * ga == gbs,
          "%s: per_device_batch_size %s x %d chips x %d != %d" % (name, kv["per_device_batch_size"], devices, ga, gbs))
    check(int(kv["max_target_length"]) == seq, "%s: max_target_length" % name)
    if c["parallel"]["pp"] > 1:
        check(int(kv["num_pipeline_microbatches"]) == c["grad_accum"], "%s: num_pipeline_microbatches" % name)


def run(name, req, model_layers, moe=False):
    doc = search(req)
    if doc is None:
        return []
    cfgs = doc.get("configs") or []
    check(len(cfgs) > 0, "%s: no configuration" % name)
    seq = req["training"]["seq_len"]
    for i, c in enumerate(cfgs):
        n = "%s #%d" % (name, i)
        megatron(n, c, seq, model_layers, moe)
        torchtitan(n, c, seq, model_layers)
        maxtext(n, c, seq, req["devices"])
    return cfgs


# ---- the layouts ---------------------------------------------------------------

# GPT-3 175B as Narayanan et al. 2021 ran it (Table 1: 1024 A100, tp 8, pp 8,
# dp 16, batch 1536 of 2048 tokens; the interleaved schedule; activation
# recomputation), with 2 virtual stages and micro-batches of 1.
gpt3 = {"model": {"preset": "gpt3-175b"}, "hardware": {"preset": "a100-80gb"}, "devices": 1024,
        "training": {"seq_len": 2048, "global_batch_tokens": 1536 * 2048},
        "search": {"top_k": 1, "partial_recompute": False,
                   "fix": {"tp": 8, "pp": 8, "dp": 16, "cp": 1, "fsdp": 1, "sp": False, "zero": 0,
                           "schedule": "interleaved", "vpp": 2, "mbs": 1, "recompute": "full"}}}
cfgs = run("gpt3-175b 1024xA100", gpt3, 96)
# The whole argv, derived by hand: 96 layers of 12288 with 96 heads of 128
# (the default kv channels 12288/96: no --kv-channels), a 4h GeLU MLP (no
# --swiglu), LayerNorm and learned positions (said explicitly), tied
# embeddings, biases and dropout (Megatron-LM's defaults: no flags); 1536
# sequences = mbs 1 x 96 micro-batches x dp 16; interleaved with 2 virtual
# stages of 6 layers per rank (96 / 8 = 12 per rank: an even split, no
# split flags); every layer recomputed (uniform, 1 layer per unit); DP
# gradient reduction overlapped (the estimate's default); bf16; the fused
# flash kernel; Transformer Engine's one-pass cross-entropy (the estimate's
# default loss, training.cross_entropy_fusion); NullTokenizer's 50256
# tokens + EOD = 50257, padded with the default multiple of 128; a 100-step
# synthetic run.
GOLDEN = ("--num-layers 96 --hidden-size 12288 --ffn-hidden-size 49152 --num-attention-heads 96 "
          "--seq-length 2048 --max-position-embeddings 2048 --normalization LayerNorm "
          "--position-embedding-type learned_absolute --micro-batch-size 1 --global-batch-size 1536 "
          "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --context-parallel-size 1 "
          "--num-virtual-stages-per-pipeline-rank 2 --recompute-granularity full --recompute-method uniform "
          "--recompute-num-layers 1 --bf16 --overlap-grad-reduce --attention-backend flash "
          "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te "
          "--tokenizer-type NullTokenizer --vocab-size 50256 --make-vocab-size-divisible-by 128 "
          "--mock-data --train-iters 100 --lr 1e-4").split()
if cfgs:
    got = cfgs[0]["recipes"]["megatron"].get("argv")
    check(got == GOLDEN, "gpt3-175b golden argv differs:\n  got  %r\n  want %r" % (got, GOLDEN))
    check(cfgs[0]["recipes"]["torchtitan"].get("unavailable", "").startswith("FW-T2"),
          "gpt3-175b: torchtitan should be refused for tp without sequence parallel")

# Llama 3 405B as Meta published it (Llama 3 paper sec. 3.3: 16384 H100,
# tp 8, cp 1, pp 16, dp 128, 8192-token sequences, 16M tokens, mbs 1).
llama405 = {"model": {"preset": "llama3-405b"}, "hardware": {"preset": "h100-sxm"}, "devices": 16384,
            "training": {"seq_len": 8192, "global_batch_tokens": 16777216},
            "search": {"top_k": 5, "fix": {"tp": 8, "pp": 16, "dp": 128, "cp": 1, "fsdp": 1, "mbs": 1}}}
run("llama3-405b 16384xH100", llama405, 126)

# Llama-3-70B on 1024 H100: the top 10 of a plain search, and of Megatron-LM's
llama70 = {"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 1024,
           "training": {"seq_len": 8192, "global_batch_tokens": 16777216}, "search": {"top_k": 10}}
run("llama3-70b 1024xH100", llama70, 80)
llama70["search"]["frameworks"] = ["megatron"]
run("llama3-70b 1024xH100 megatron", llama70, 80)
llama70["search"] = {"top_k": 10, "fix": {"pp": 4}, "max_vpp": 4}
run("llama3-70b 1024xH100 pp4", llama70, 80)

# Megatron Bridge's Llama 3 70B GB200 BF16 layout (llama3_workload_base_configs.py:
# 64 GPUs, Megatron-FSDP, cpu_offloading_num_layers 20, micro-batch 1): CPU
# activation offload searched on request; the argv must carry
# --cpu-offloading-num-layers with no recompute flags (Megatron refuses both)
cfgs = run("llama3-70b 64xGB200 cpu offload",
           {"model": {"preset": "llama3-70b"}, "hardware": {"preset": "gb200-nvl72"}, "devices": 64,
            "training": {"seq_len": 8192, "global_batch_tokens": 128 * 8192},
            "search": {"top_k": 3, "cpu_offload": True, "frameworks": ["megatron"],
                       "fix": {"fsdp": 64, "mbs": 1, "recompute": "cpu_offload"}}}, 80)
for i, c in enumerate(cfgs):
    argv = c["recipes"]["megatron"]["argv"]
    n = "llama3-70b 64xGB200 cpu offload #%d" % i
    check("--cpu-offloading-num-layers" in argv and
          argv[argv.index("--cpu-offloading-num-layers") + 1] == str(c["recompute_layers"]),
          "%s: --cpu-offloading-num-layers %s" % (n, c["recompute_layers"]))
    check(not any(a.startswith("--recompute") for a in argv), "%s: recompute flags with CPU offload" % n)

# MoE: Mixtral 8x7B on 64 H100, DeepSeek-V3 (MLA, 3 dense layers) on 256 H800
run("mixtral-8x7b 64xH100", {"model": {"preset": "mixtral-8x7b"}, "hardware": {"preset": "h100-sxm"},
                             "devices": 64, "training": {"seq_len": 4096, "global_batch_tokens": 4194304},
                             "search": {"top_k": 10}}, 32, moe=True)
run("deepseek-v3 256xH800", {"model": {"preset": "deepseek-v3"}, "hardware": {"preset": "h800"}, "devices": 256,
                             "training": {"seq_len": 4096, "global_batch_tokens": 16777216},
                             "search": {"top_k": 5}}, 61, moe=True)

# DeepSeek-V3 as Megatron Bridge launches it on 256 GB200 (deepseek_workload_base_configs.py,
# DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_V1: pp 4, vpp 4, ep 64, 2048 sequences of 4096): 61 layers
# over 16 virtual stages only --pipeline-model-parallel-layout splits (FW-M6)
cfgs = run("deepseek-v3 256xGB200 pp4 vpp4", {
    "model": {"preset": "deepseek-v3"}, "hardware": {"preset": "gb200-nvl72"}, "devices": 256,
    "training": {"seq_len": 4096, "global_batch_tokens": 2048 * 4096, "grad_dtype": "bf16"},
    "search": {"top_k": 3, "fix": {"tp": 1, "pp": 4, "vpp": 4, "ep": 64, "cp": 1, "schedule": "interleaved",
                                   "mbs": 1}}}, 61, moe=True)
mg = [c for c in cfgs if "megatron" in c["frameworks"]]
check(len(mg) > 0 and all("--pipeline-model-parallel-layout" in c["recipes"]["megatron"]["argv"] for c in mg),
      "deepseek-v3 256xGB200 pp4 vpp4: Megatron-LM should launch it, with a layout")

# Layouts Megatron Bridge launches for NVIDIA's performance tables
# (scripts/performance/configs/*/..._workload_base_configs.py; the scripts
# set grad_reduce_in_fp32 False: bf16 gradients): each must fit and be
# Megatron-LM's, its recipe parsing as Megatron's own (the checks above).
BRIDGE = [
    # DeepSeek-V3 (deepseek_workload_base_configs.py): H100 V1 (pp_layout "Et|(tt|)*30mL": 7 layers on
    # rank 0, 6 on rank 7 less the MTP layer mfud does not model), B200 V1, B200 FP8-MX V2
    ("deepseek-v3 1024xH100", "deepseek-v3", "h100-sxm", 1024, 4096, 8192, "bf16",
     {"tp": 2, "pp": 8, "ep": 64}, 4, ["mla_up_proj", "mlp"], {"first": 7, "last": 6}),
    ("deepseek-v3 256xB200", "deepseek-v3", "b200", 256, 4096, 2048, "bf16", {"pp": 16, "ep": 8}, 1,
     ["mla_up_proj"], None),
    ("deepseek-v3 256xB200 fp8", "deepseek-v3", "b200", 256, 4096, 4096, "fp8", {"pp": 8, "ep": 32}, 2,
     ["mla_up_proj", "mlp"], None),
    # Qwen3 (qwen3_workload_base_configs.py): 235B-A22B H100 and B200 V1, 30B-A3B B200 V1
    ("qwen3-235b-a22b 256xH100", "qwen3-235b-a22b", "h100-sxm", 256, 4096, 2048, "bf16",
     {"tp": 2, "pp": 8, "ep": 32}, 4, None, None),
    ("qwen3-235b-a22b 64xB200", "qwen3-235b-a22b", "b200", 64, 4096, 1024, "bf16", {"pp": 8, "ep": 8}, 4, None, None),
    ("qwen3-30b-a3b 8xB200 mbs4", "qwen3-30b-a3b", "b200", 8, 4096, 512, "bf16", {"ep": 8, "mbs": 4}, 1, None, None),
    # Llama 3 (llama3_workload_base_configs.py): 70B H100 BF16 and FP8 V1, 8B H100 BF16 V1
    ("llama3-70b 64xH100", "llama3-70b", "h100-sxm", 64, 8192, 128, "bf16", {"tp": 4, "pp": 4, "cp": 2}, 5,
     None, None),
    ("llama3-70b 64xH100 fp8", "llama3-70b", "h100-sxm", 64, 8192, 128, "fp8", {"tp": 4, "pp": 8}, 5, None, None),
    ("llama3-8b 8xH100 cp2", "llama3-8b", "h100-sxm", 8, 8192, 128, "bf16", {"cp": 2}, 1, None, None),
]
for label, preset, hw, n, seq, gbs, dtype, axes, vpp, mods, split in BRIDGE:
    par = {"tp": 1, "pp": 1, "cp": 1, "ep": 1}
    par.update({k: v for k, v in axes.items() if k != "mbs"})
    par["dp"] = n // (par["tp"] * par["pp"] * par["cp"])
    par.update({"fsdp": 1, "sp": par["tp"] > 1, "zero": 1})
    cfg = {"parallel": par, "schedule": "interleaved" if vpp > 1 else "1f1b", "vpp": vpp,
           "mbs": axes.get("mbs", 1), "recompute": "selective" if mods else "none"}
    if mods:
        cfg["recompute_modules"] = mods
    if split:
        cfg["pipeline_split"] = split
    doc = search({"model": {"preset": preset}, "hardware": {"preset": hw}, "devices": n,
                  "training": {"seq_len": seq, "global_batch_tokens": gbs * seq, "dtype": dtype,
                               "grad_dtype": "bf16"},
                  "search": {"top_k": 1, "max_evaluations": 1},
                  "measured": {"config": cfg, "step_time_s": 1.0}})
    if doc is None:
        continue
    c = doc["measured"]["config"]
    check(c["feasible"] and "megatron" in c["frameworks"],
          "%s (Megatron Bridge): feasible %s, frameworks %r, memory %.1f of %.1f GB, megatron %r" %
          (label, c["feasible"], c["frameworks"], c["memory"]["total_bytes"] / 1e9,
           c["memory"]["capacity_bytes"] / 1e9, c["recipes"]["megatron"].get("unavailable")))
    if "megatron" in c["frameworks"]:
        megatron(label + " (Bridge)", c, seq, doc["model"]["resolved"]["layers_total"],
                 any(r["mlp"].get("type") == "moe" for r in doc["model"]["resolved"]["ir"]["layers"]))

# torchtitan's Llama 3.1 8B at 262,144 tokens on 8 GPUs, "FSDP 1, CP 8"
# (benchmarks/llama3_h100_202412_torchtitan.md, Table 2): the cp ranks shard
# the model (zero 3); replicated it would not fit
cfgs = run("llama3-8b 8xH100 cp8 torchtitan", {
    "model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 8,
    "training": {"seq_len": 262144, "global_batch_tokens": 262144, "dtype": "fp8"},
    "search": {"top_k": 3, "frameworks": ["torchtitan"], "fix": {"cp": 8, "fsdp": 1, "mbs": 1}}}, 32)
check(len(cfgs) > 0 and all(c["parallel"]["zero"] == 3 and "torchtitan" in c["frameworks"] for c in cfgs),
      "llama3-8b 8xH100 cp8 torchtitan: zero 3 configurations expected, got %r" %
      [(c["parallel"], c["frameworks"]) for c in cfgs])

# the training switches: fp8, bf16 gradients and moments, TP and EP overlap
opts = {"model": {"preset": "mixtral-8x7b"}, "hardware": {"preset": "h100-sxm"}, "devices": 64,
        "training": {"seq_len": 4096, "global_batch_tokens": 4194304, "dtype": "fp8", "grad_dtype": "bf16",
                     "adam_moments_dtype": "bf16", "tp_overlap": True, "ep_overlap": True},
        "search": {"top_k": 5, "frameworks": ["megatron"]}}
run("mixtral-8x7b fp8 megatron", opts, 32, moe=True)
opts["search"]["frameworks"] = ["torchtitan"]
run("mixtral-8x7b fp8 torchtitan", opts, 32, moe=True)

# TPU: MaxText only, over two v5e slices
run("llama3-8b 512xv5e", {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "tpu-v5e"}, "devices": 512,
                          "training": {"seq_len": 8192, "global_batch_tokens": 4194304},
                          "search": {"top_k": 5}}, 32)
run("llama3-70b 256xv5p pp", {"model": {"preset": "llama3-70b"}, "hardware": {"preset": "tpu-v5p"}, "devices": 256,
                              "training": {"seq_len": 8192, "global_batch_tokens": 4194304},
                              "search": {"top_k": 3, "fix": {"pp": 4}}}, 80)

# Issue 9's four searches: every configuration of the top 20 is launchable by
# each framework it names, as that framework's recipe says (no "unavailable"
# for a named framework: the legality rules and the renderers agree).
for label, preset, hw, n, seq, batch in [
        ("llama3-70b 1024xH100", "llama3-70b", "h100-sxm", 1024, 8192, 16777216),
        ("gpt3-175b 1024xA100", "gpt3-175b", "a100-80gb", 1024, 2048, 1536 * 2048),
        ("mixtral-8x7b 256xH100", "mixtral-8x7b", "h100-sxm", 256, 4096, 4194304),
        ("deepseek-v3 2048xH800", "deepseek-v3", "h800", 2048, 4096, 15360 * 4096)]:
    for distinct in ("layout", "none"):
        doc = search({"model": {"preset": preset}, "hardware": {"preset": hw}, "devices": n,
                      "training": {"seq_len": seq, "global_batch_tokens": batch},
                      "search": {"top_k": 20, "distinct": distinct}})
        if doc is None:
            continue
        check(len(doc["configs"]) == 20, "%s %s: %d configurations" % (label, distinct, len(doc["configs"])))
        for c in doc["configs"]:
            check(len(c["frameworks"]) > 0, "%s %s #%d names no framework" % (label, distinct, c["rank"]))
            for f in c["frameworks"]:
                check("unavailable" not in c["recipes"][f],
                      "%s %s #%d: names %s but its recipe says %r" % (label, distinct, c["rank"], f,
                                                                    c["recipes"][f].get("unavailable")))

sys.exit(finish())
