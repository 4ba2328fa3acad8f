#!/bin/bash
# tests/integration/cli.sh -- the `mfu` CLI's conventions (issue 16 item 2):
#   - --help, -h, help, help COMMAND and COMMAND --help print to stdout and
#     exit 0; --version prints the CLI's version and the engine's
#     (MFU_ENGINE_VERSION in api/api.h); the help lists the exit codes;
#   - exit codes: 64 for usage errors (no command, an unknown command or
#     option -- named on one line of stderr, nothing on stdout -- a missing or
#     malformed value, options that exclude each other), 66 for an unreadable
#     input, 2 for an invalid request (a problem document with its pointer),
#     3 when nothing fits, 74 when the output cannot be written;
#   - flag mode builds exactly the request the JSON would: the same cache key
#     (`mfu key`) as the equivalent file, the same answer; suffixes (K M G T
#     binary for sizes, decimal for the token budget); options override a
#     FILE's fields.
# Ends with "N passed, N failed".
[ -z "$BASH_VERSION" ] && exec bash "$0" "$@"
cd "$(dirname "$0")/../.."
. tests/lib.sh
if [ ! -x "$MFU" ]; then echo "FAIL: $MFU not built"; fail=1; finish; fi
PY=${PYTHON:-python3}

# mfu_rc ARGS...: run mfu; RC, stdout in $T/out, stderr in $T/err
mfu_rc() { "$MFU" "$@" >"$T/out" 2>"$T/err"; RC=$?; }
lines() { wc -l <"$1" | tr -d ' '; }

# ---- help and version ------------------------------------------------------------
for h in --help -h help; do
    mfu_rc $h
    check "mfu $h: exit 0 (got $RC)" [ "$RC" = 0 ]
    check "mfu $h: usage on stdout" grep -q '^usage: mfu COMMAND' "$T/out"
    check "mfu $h: nothing on stderr" [ ! -s "$T/err" ]
done
for code in 0 2 3 64 66 70 74; do
    check "mfu --help documents exit status $code" grep -qE "^ +$code  " "$T/out"
done
ENGINE=$(sed -n 's/^#define MFU_ENGINE_VERSION "\(.*\)"/\1/p' api/api.h)
mfu_rc --version
check "mfu --version: exit 0 (got $RC)" [ "$RC" = 0 ]
check "mfu --version names the CLI's and the engine's version ($ENGINE)" \
    grep -qE "^mfu [0-9]+\.[0-9]+\.[0-9]+ \(engine $ENGINE\)$" "$T/out"
for c in roofline search compare presets key calibrate; do
    mfu_rc help $c
    check "mfu help $c: exit 0 (got $RC)" [ "$RC" = 0 ]
    check "mfu help $c: its usage on stdout" grep -q "^usage: mfu $c " "$T/out"
    check "mfu help $c: the exit codes" grep -qE '^ +64  usage' "$T/out"
    cp "$T/out" "$T/help.$c"
    for h in --help -h; do
        mfu_rc $c $h
        check "mfu $c $h = mfu help $c (exit $RC)" bash -c "[ $RC = 0 ] && cmp -s '$T/out' '$T/help.$c'"
    done
    # help wins over other arguments, even bad ones
    mfu_rc $c --no-such-option --help
    check "mfu $c --no-such-option --help: the help, exit 0" bash -c "[ $RC = 0 ] && cmp -s '$T/out' '$T/help.$c'"
done
for o in --model --hf --hw --devices --seq --batch-tokens --dtype --tokens --price --top-k --frameworks --distinct; do
    check "mfu help search lists $o" grep -q -- "^  $o " "$T/help.search"
done
check "mfu help search states the suffixes" grep -q '4M = 4194304' "$T/help.search"
check "mfu help roofline does not list --top-k" bash -c "! grep -q -- '--top-k' '$T/help.roofline'"

# ---- usage errors: 64, one line on stderr, nothing on stdout -------------------------
usage_case() { # usage_case NAME WORD args...: exit 64, one stderr line naming WORD
    local name=$1 word=$2; shift 2
    mfu_rc "$@"
    check "$name: exit 64 (got $RC)" [ "$RC" = 64 ]
    check "$name: one line on stderr ($(lines "$T/err"))" [ "$(lines "$T/err")" = 1 ]
    check "$name: the line names '$word'" grep -qF -- "$word" "$T/err"
    check "$name: nothing on stdout" [ ! -s "$T/out" ]
}
R=examples/roofline.json S=examples/search.json
mfu_rc
check "no arguments: exit 64 (got $RC), usage on stderr, nothing on stdout" \
    bash -c "[ $RC = 64 ] && grep -q '^usage: mfu' '$T/err' && [ ! -s '$T/out' ]"
usage_case "unknown command" frobnicate frobnicate "$S"
usage_case "unknown top-level option" --frobnicate --frobnicate
usage_case "help for an unknown command" frobnicate help frobnicate
usage_case "--version with arguments" extra --version extra
for c in roofline search key; do
    usage_case "$c: unknown option" --no-such-option $c "$S" --no-such-option
    usage_case "$c: unknown option with =" --no-such-option $c "$S" --no-such-option=3
    usage_case "$c: unknown short option" -x $c "$S" -x
    usage_case "$c: a second FILE" "$R" $c "$S" "$R"
done
usage_case "compare: unknown option" --bogus compare examples/compare.json --bogus
usage_case "calibrate: unknown option" --bogus calibrate examples/calibration.json --bogus
usage_case "presets: unknown option" --table presets models --table
usage_case "presets: unknown list" gpus presets gpus
usage_case "roofline: --csv is search's" --csv roofline "$R" --csv
usage_case "roofline: --top-k is search's" --top-k roofline "$R" --top-k 3
usage_case "roofline: --devices does not apply" --devices roofline "$R" --devices 8
usage_case "key: --table does not apply" --table key "$S" --table
usage_case "compare: no flag mode" --model compare --model llama3-8b
usage_case "calibrate: --csv does not apply" --csv calibrate examples/calibration.json --csv
usage_case "search: --table and --csv" --csv search "$S" --table --csv
usage_case "calibrate: --table and --hardware" --hardware calibrate examples/calibration.json --table --hardware
usage_case "search: a switch with a value" --table search "$S" --table=yes
usage_case "search: missing value" --devices search "$S" --devices
usage_case "search: malformed size" 4X search "$S" --devices 4X
usage_case "search: fractional size" 8.5 search "$S" --seq 8.5
usage_case "search: negative size" -1 search "$S" --batch-tokens -1
usage_case "search: hex is not a size" 0x10 search "$S" --devices 0x10
usage_case "search: a price with a suffix" 2K search "$S" --price 2K
usage_case "search: empty framework name" megatron,, search "$S" --frameworks megatron,,
usage_case "search: --model and --hf" --hf search --model llama3-8b --hf examples/qwen2.5-7b.config.json
usage_case "search: --hw and --hw-file" --hw-file search "$S" --hw h100-sxm --hw-file x.json
usage_case "search: no request" "request FILE" search
usage_case "search: --print-request and --table" --print-request search "$S" --print-request --table
usage_case "compare: no FILE" FILE compare
usage_case "two inputs from stdin" stdin key - --hf -

# ---- 66: an input that cannot be read ------------------------------------------------
for args in "search $T/missing.json" "roofline --hf $T/missing.json --hw h100-sxm --seq 4096 --batch-tokens 4096" \
    "search $S --hw-file $T/missing.json" "calibrate $T/missing.json"; do
    mfu_rc $args
    check "mfu $args: exit 66 (got $RC), one line naming the file" \
        bash -c "[ $RC = 66 ] && [ \$(wc -l <'$T/err') = 1 ] && grep -q missing.json '$T/err'"
done

# ---- 2: invalid requests, a problem document with the pointer -----------------------
problem_case() { # problem_case NAME POINTER args...
    local name=$1 ptr=$2; shift 2
    mfu_rc "$@"
    check "$name: exit 2 (got $RC)" [ "$RC" = 2 ]
    check "$name: problem document pointing at $ptr" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] in (400, 422), d
assert any(e["pointer"].startswith(sys.argv[2]) for e in d["errors"]), d["errors"]' "$T/err" "$ptr"
}
FL=(--model llama3-70b --hw h100-sxm --seq 8192)
problem_case "devices 0" /devices search "${FL[@]}" --devices 0 --batch-tokens 4M
problem_case "unknown preset" /model key --model no-such-model --hw h100-sxm --devices 8 --seq 8192 --batch-tokens 8192
problem_case "unknown dtype" /training/dtype search "${FL[@]}" --devices 8 --batch-tokens 4M --dtype fp7
problem_case "decimal 4000000 is not whole sequences of 8192" /training/global_batch_tokens \
    search "${FL[@]}" --devices 512 --batch-tokens 4000000
problem_case "unknown distinct" /search/distinct search "${FL[@]}" --devices 512 --batch-tokens 4M --distinct rows
problem_case "unknown framework" /search/frameworks search "${FL[@]}" --devices 512 --batch-tokens 4M --frameworks megatorn
problem_case "no training options" /training search --model llama3-70b --hw h100-sxm --devices 8
printf '{"hidden_size": 4096,' >"$T/bad-config.json"
problem_case "--hf with malformed JSON" /model/hf_config roofline --hf "$T/bad-config.json" --hw h100-sxm --seq 4096 --batch-tokens 4096
check "--hf malformed: the detail names the file" grep -q "bad-config.json" "$T/err"
echo '[1, 2]' >"$T/array.json"
problem_case "flags over a FILE that is not an object" "" key "$T/array.json" --devices 8
printf '{"a": 1, "a": 2}' >"$T/dup.json"
problem_case "duplicate key in FILE" "" search "$T/dup.json"

# ---- 3: nothing fits --------------------------------------------------------------------
mfu_rc search --model llama3-405b --hw h100-sxm --devices 8 --seq 8K --batch-tokens 16M
check "nothing fits (flags): exit 3 (got $RC), the answer printed, one line of reason" \
    bash -c "[ $RC = 3 ] && grep -q no_fit '$T/out' && [ \$(wc -l <'$T/err') = 1 ]"

# ---- 74: the output cannot be written -----------------------------------------------------
if [ -w /dev/full ]; then
    "$MFU" presets models >/dev/full 2>"$T/err"; RC=$?
    check "output to a full device: exit 74 (got $RC)" [ "$RC" = 74 ]
    "$MFU" key "$S" >/dev/full 2>"$T/err"; RC=$?
    check "key to a full device: exit 74 (got $RC)" [ "$RC" = 74 ]
else
    skip "cli.sh exit 74 (no writable /dev/full)"
fi

# ---- flag mode: the same request as the JSON --------------------------------------------
key() { "$MFU" key "$@" 2>"$T/key.err"; }
same_key() { # same_key NAME FILE flags...: `mfu key FILE` = `mfu key flags`, both 64 hex
    local name=$1 f=$2; shift 2
    local a b
    a=$(key "$f"); b=$(key "$@")
    check "$name: same key (${a:0:12} vs ${b:0:12})" bash -c "[ ${#a} = 64 ] && [ '$a' = '$b' ]"
}
cat >"$T/issue.json" <<'JSON'
{"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 512,
 "training": {"seq_len": 8192, "global_batch_tokens": 4194304}, "search": {"top_k": 5}}
JSON
same_key "issue 16's example" "$T/issue.json" \
    --model llama3-70b --hw h100-sxm --devices 512 --seq 8192 --batch-tokens 4M --top-k 5
same_key "issue 16's example, --opt=value" "$T/issue.json" \
    --model=llama3-70b --hw=h100-sxm --devices=512 --seq=8K --batch-tokens=4Mi --top-k=5
same_key "README's search" "$S" --model llama3-70b --hw h100-sxm --devices 1K --seq 8K --batch-tokens 16M --top-k 5
"$PY" - "$T" <<'PY'
import json, sys
t = sys.argv[1]
hf = json.load(open("examples/qwen2.5-7b.config.json"))
json.dump({"model": {"hf_config": hf}, "hardware": {"preset": "h200"}, "devices": 64,
           "training": {"seq_len": 4096, "global_batch_tokens": 1048576}}, open(t + "/hf.json", "w"))
json.dump({"model": {"preset": "llama3-70b"}, "hardware": {"preset": "h100-sxm"}, "devices": 1024,
           "training": {"seq_len": 8192, "global_batch_tokens": 16777216, "dtype": "fp8", "tokens": 15e12},
           "mfu_convention": "full", "cost": {"price_per_device_hour": 2.5},
           "search": {"top_k": 3, "frameworks": ["megatron", "torchtitan"], "distinct": "none"}},
          open(t + "/all.json", "w"))
PY
same_key "--hf: {\"hf_config\": the file}" "$T/hf.json" \
    --hf examples/qwen2.5-7b.config.json --hw h200 --devices 64 --seq 4096 --batch-tokens 1M
same_key "every search option" "$T/all.json" --model llama3-70b --hw h100-sxm --devices 1024 --seq 8192 \
    --batch-tokens 16M --dtype fp8 --tokens 15T --convention full --price 2.5 --top-k 3 \
    --frameworks megatron,torchtitan --distinct none
same_key "--hf from stdin" "$T/hf.json" \
    --hf - --hw h200 --devices 64 --seq 4096 --batch-tokens 1M <examples/qwen2.5-7b.config.json
same_key "FILE from stdin" "$T/issue.json" - <"$T/issue.json"
# the keys tell different requests apart (so the checks above can fail)
a=$(key "$T/issue.json")
for flags in "--top-k 6" "--devices 1K" "--batch-tokens 4000Ki" "--dtype fp8" "--tokens 15T" "--price 2.5" \
    "--frameworks megatron" "--distinct none" "--convention full" "--hw h200" "--model llama3-8b"; do
    b=$(key "$T/issue.json" $flags)
    check "key changes with $flags" bash -c "[ ${#b} = 64 ] && [ '$a' != '$b' ]"
done
check "--tokens 15T (decimal) != 15Ti (binary)" [ "$(key "$T/all.json" --tokens 15T)" != "$(key "$T/all.json" --tokens 15Ti)" ]
check "--tokens 15T = 15e12 = 15000000000000" bash -c \
    "[ '$(key "$T/all.json" --tokens 15T)' = '$(key "$T/all.json" --tokens 15e12)' ] && [ '$(key "$T/all.json" --tokens 15e12)' = '$(key "$T/all.json" --tokens 15000000000000)' ]"
# options override a FILE's fields
same_key "FILE + options override" "$T/issue.json" "$S" --devices 512 --batch-tokens 4M
same_key "--model replaces the FILE's model" "$T/issue.json" "$T/hf.json" --model llama3-70b --hw h100-sxm \
    --devices 512 --seq 8192 --batch-tokens 4M --top-k 5

# the request as built, suffixes as documented
"$MFU" search --print-request --model llama3-8b --hw h100-sxm --devices 1.5Ki --seq 8K --batch-tokens 4M \
    --tokens 1.5T --price 2 --top-k 5 --frameworks megatron,torchtitan --distinct none --dtype fp8 \
    --convention none >"$T/pr.json" 2>"$T/err"
check "--print-request: exit 0" [ $? = 0 ]
check "--print-request: the request, suffixes applied" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
want = {"model": {"preset": "llama3-8b"}, "hardware": {"preset": "h100-sxm"}, "devices": 1536,
        "training": {"seq_len": 8192, "global_batch_tokens": 4194304, "tokens": 1500000000000, "dtype": "fp8"},
        "cost": {"price_per_device_hour": 2.0}, "mfu_convention": "none",
        "search": {"top_k": 5, "frameworks": ["megatron", "torchtitan"], "distinct": "none"}}
assert d == want, d
assert isinstance(d["devices"], int) and isinstance(d["training"]["tokens"], int)' "$T/pr.json"
"$MFU" key --print-request "$S" --devices 64 >"$T/pr2.json"
check "--print-request with a FILE: its fields, the option's override" "$PY" -c '
import json, sys
d, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
f["devices"] = 64
assert d == f, d' "$T/pr2.json" "$S"

# the same answers
"$MFU" roofline "$R" >"$T/r1.json"
"$MFU" roofline --model llama3-8b --hw h100-sxm --seq 8K --batch-tokens 4M >"$T/r2.json"
check "roofline: flags answer = FILE answer (byte for byte)" cmp -s "$T/r1.json" "$T/r2.json"
"$MFU" roofline "$R" --table >"$T/r1.txt"
"$MFU" roofline --model llama3-8b --hw h100-sxm --seq 8K --batch-tokens 4M --table >"$T/r2.txt"
check "roofline --table: flags = FILE" cmp -s "$T/r1.txt" "$T/r2.txt"
"$MFU" search "$T/issue.json" >"$T/s1.json"
"$MFU" search --model llama3-70b --hw h100-sxm --devices 512 --seq 8192 --batch-tokens 4M --top-k 5 >"$T/s2.json"
check "search: flags answer = FILE answer (but the elapsed time)" "$PY" -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b): d["search"].pop("elapsed_s", None)
assert a == b and len(a["configs"]) == 5' "$T/s1.json" "$T/s2.json"
finish
