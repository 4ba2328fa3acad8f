/* api/hf_read.c -- the HuggingFace importer's field readers: a key looked
 * up in the text config, else the wrapper; typed, bounded, defaulted,
 * every failure under its JSON pointer (api/hf_int.h). */
#include "hf_int.h"

/* ---- reading fields ----------------------------------------------------- */



/* Say what the import approximates (docs/model-ir.md "approximations"). */
void hf_approx(hf_ctx *c, const char *text)
{
    if (!c->approx) c->approx = json_array();
    json_array_append_new(c->approx, json_string(text));
}

/* Look `key` up in cfg, then (nested configs) at the top level. A JSON null
 * counts as absent (config.json writes null for "not set"). Sets *ptr_out to
 * the pointer of the field where it was found, or where it should be. */
json_t *hf_lookup(hf_ctx *c, const char *key, char *ptr_out, size_t n)
{
    json_t *v = json_object_get(c->cfg, key);
    if (v && !json_is_null(v)) {
        snprintf(ptr_out, n, "%.200s/%.50s", c->cfg_ptr, key);
        return v;
    }
    if (c->top != c->cfg) {
        json_t *t = json_object_get(c->top, key);
        if (t && !json_is_null(t)) {
            snprintf(ptr_out, n, "%.200s/%.50s", c->top_ptr, key);
            return t;
        }
    }
    snprintf(ptr_out, n, "%.200s/%.50s", c->cfg_ptr, key);
    return NULL;
}

void hf_fail(hf_ctx *c, const char *ptr, const char *fmt, ...)
{
    char detail[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    api_fail(c->st, 422, ptr, "%s", detail);
    c->failed++;
}

/* layer_types (HF's per-layer list): each entry "full_attention" or
 * `other`, whose layers get flag[i] = 1. 1: read; 0: absent; -1: invalid
 * (reported at its pointer). */
int hf_layer_kinds(hf_ctx *c, long long n, const char *other, unsigned char *flag)
{
    char ptr[256];
    json_t *lt = hf_lookup(c, "layer_types", ptr, sizeof ptr);
    if (!lt) return 0;
    if (!json_is_array(lt) || (long long)json_array_size(lt) != n) {
        hf_fail(c, ptr, "layer_types must be an array with num_hidden_layers (%lld) entries", n);
        return -1;
    }
    for (long long i = 0; i < n; i++) {
        const char *t = json_string_value(json_array_get(lt, (size_t)i));
        if (t && !strcmp(t, other)) flag[i] = 1;
        else if (!t || strcmp(t, "full_attention")) {
            char q[300];
            snprintf(q, sizeof q, "%s/%lld", ptr, i);
            hf_fail(c, q, "layer_types entries must be \"full_attention\" or \"%s\"", other);
            return -1;
        }
    }
    return 1;
}

/* A JSON integer, or a real with an integral value (4096.0). 0 on success. */
int hf_as_int(json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = (long long)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9.0e15) return -1;
        *out = (long long)d;
        return 0;
    }
    return -1;
}

/* Read an integer field in [lo, hi]. `required`: absent is an error; else
 * *out = dflt. Returns 1 when present and valid, 0 when absent (default
 * used), -1 on error (recorded). */
int hf_int(hf_ctx *c, const char *key, int required, long long dflt,
                  long long lo, long long hi, long long *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) {
        if (required) {
            hf_fail(c, ptr, "%s is required", key);
            return -1;
        }
        return 0;
    }
    long long x;
    if (hf_as_int(v, &x) != 0) {
        hf_fail(c, ptr, "%s must be an integer", key);
        return -1;
    }
    if (x < lo || x > hi) {
        hf_fail(c, ptr, "%s must be in [%lld, %lld]", key, lo, hi);
        return -1;
    }
    *out = x;
    return 1;
}

/* A positive finite number (expand_k, hidden_ratio). */
int hf_num(hf_ctx *c, const char *key, double dflt, double hi, double *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_number(v)) {
        hf_fail(c, ptr, "%s must be a number", key);
        return -1;
    }
    double d = json_number_value(v);
    if (!isfinite(d) || d <= 0.0 || d > hi) {
        hf_fail(c, ptr, "%s must be a positive number (at most %lld)", key, (long long)hi);
        return -1;
    }
    *out = d;
    return 1;
}

int hf_bool(hf_ctx *c, const char *key, int dflt, int *out)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    *out = dflt;
    if (!v) return 0;
    if (!json_is_boolean(v)) {
        hf_fail(c, ptr, "%s must be true or false", key);
        return -1;
    }
    *out = json_is_true(v);
    return 1;
}

/* hidden_act / hidden_activation -> our activation (gated MLPs only). */
const char *hf_activation(hf_ctx *c, const char *key, const char *dflt)
{
    char ptr[256];
    json_t *v = hf_lookup(c, key, ptr, sizeof ptr);
    const char *s = v ? json_string_value(v) : dflt;
    if (!s) {
        hf_fail(c, ptr, "%s must be a string", key);
        return "silu";
    }
    if (!strcmp(s, "silu") || !strcmp(s, "swish")) return "silu";
    if (!strncmp(s, "gelu", 4)) return "gelu"; /* gelu, gelu_new, gelu_pytorch_tanh, ... */
    if (!strcmp(s, "relu")) return "relu";
    hf_fail(c, ptr, "%s: unsupported activation (supported: silu, swish, gelu*, relu)", key);
    return "silu";
}

/* ---- per-layer attention windows (softmax families) --------------------- */

/* config.layer_types (transformers >= 4.53): "sliding_attention" /
 * "full_attention" per layer. Returns 1 if present and valid (is_sliding
 * filled), 0 if absent, -1 on error. */
int hf_layer_types(hf_ctx *c, long long n_layers, unsigned char *is_sliding)
{
    char ptr[256];
    json_t *lt = hf_lookup(c, "layer_types", ptr, sizeof ptr);
    if (!lt) return 0;
    if (!json_is_array(lt) || (long long)json_array_size(lt) != n_layers) {
        hf_fail(c, ptr, "%s must be an array with num_hidden_layers (%lld) entries",
                "layer_types", n_layers);
        return -1;
    }
    for (long long i = 0; i < n_layers; i++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)i));
        if (s && !strcmp(s, "sliding_attention")) is_sliding[i] = 1;
        else if (s && !strcmp(s, "full_attention")) is_sliding[i] = 0;
        else {
            char p[300];
            snprintf(p, sizeof p, "%s/%lld", ptr, i);
            hf_fail(c, p, "%s entries must be \"full_attention\" or \"sliding_attention\"",
                    "layer_types");
            return -1;
        }
    }
    return 1;
}
