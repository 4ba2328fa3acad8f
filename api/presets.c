/* api/presets.c -- the preset library: data files under presets/models and
 * presets/hardware, embedded at build time by tools/embed.c. Parsed on
 * first use into a read-only table shared by all threads -- both tables or
 * neither: an allocation that fails while building them leaves the library
 * unloaded and the next caller tries again, so a passing out-of-memory
 * cannot empty the preset list for the life of the process (it did when
 * the table was built once, come what may; tests/unit/test_oom.c). And the
 * resolution of a request's model and hardware against it
 * (api_resolve_model, api_resolve_hardware): api/request.c calls in here,
 * nothing here calls request.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "internal.h"

struct mfu_embedded_file { const char *path; const char *data; size_t len; };
extern const struct mfu_embedded_file mfu_embedded_files[];
extern const size_t mfu_embedded_count;

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int loaded;  /* 1 once both tables are complete (release/acquire) */
static json_t *models;     /* name -> preset file JSON */
static json_t *hardware;   /* name -> preset file JSON */

/* Both tables from the embedded files, or -1 (out of memory) and neither. */
static int build(json_t **mo, json_t **hw)
{
    *mo = json_object();
    *hw = json_object();
    int ok = *mo && *hw;
    for (size_t i = 0; ok && i < mfu_embedded_count; i++) {
        const struct mfu_embedded_file *f = &mfu_embedded_files[i];
        json_error_t err;
        json_t *j = json_loadb(f->data, f->len, 0, &err);
        json_t *name = json_object_get(j, "name");
        if (!j && json_error_code(&err) == json_error_out_of_memory) {
            ok = 0;
        } else if (!j || !json_is_string(name)) {
            /* A broken preset is a build defect; tests/unit/test_presets.c
             * loads every file, so it never ships. Skip it here. */
            json_decref(j);
        } else {
            json_t *dst = strstr(f->path, "presets/hardware/") ? *hw : *mo;
            ok = json_object_set_new(dst, json_string_value(name), j) == 0;
        }
    }
    if (ok) return 0;
    json_decref(*mo);
    json_decref(*hw);
    *mo = *hw = NULL;
    return -1;
}

/* 0 when the library is loaded (loading it if needed), -1 if it could not
 * be (out of memory; a later call tries again). */
static int ensure_loaded(void)
{
    if (atomic_load_explicit(&loaded, memory_order_acquire)) return 0;
    pthread_mutex_lock(&load_mu);
    int rc = 0;
    if (!atomic_load_explicit(&loaded, memory_order_relaxed)) {
        json_t *mo, *hw;
        rc = build(&mo, &hw);
        if (rc == 0) {
            models = mo;
            hardware = hw;
            atomic_store_explicit(&loaded, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&load_mu);
    return rc;
}

static int presets_loaded(void) { return ensure_loaded() == 0; }

json_t *api_preset_model(const char *name)
{
    return ensure_loaded() ? NULL : json_object_get(models, name);
}

json_t *api_preset_hardware(const char *name)
{
    return ensure_loaded() ? NULL : json_object_get(hardware, name);
}

static json_t *names_of(json_t *table)
{
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(table, k, v) json_array_append_new(a, json_string(k));
    return a;
}

json_t *api_preset_model_names(void)
{
    return ensure_loaded() ? json_array() : names_of(models);
}

json_t *api_preset_hardware_names(void)
{
    return ensure_loaded() ? json_array() : names_of(hardware);
}

/* The table's names in byte order (a stable listing); malloc'd, *n set. */
static const char **sorted_names(json_t *table, size_t *n)
{
    *n = json_object_size(table);
    const char **v = api_malloc((*n ? *n : 1) * sizeof *v);
    if (!v) { *n = 0; return NULL; }
    size_t i = 0;
    const char *k;
    json_t *x;
    json_object_foreach(table, k, x) v[i++] = k;
    for (size_t a = 1; a < *n; a++)
        for (size_t b = a; b > 0 && strcmp(v[b - 1], v[b]) > 0; b--) {
            const char *t = v[b]; v[b] = v[b - 1]; v[b - 1] = t;
        }
    return v;
}

json_t *api_presets_models(void)
{
    if (ensure_loaded()) return NULL;
    json_t *out = json_array();
    const char *k;
    json_t *v;
    size_t n;
    const char **sorted = sorted_names(models, &n);
    for (size_t i = 0; i < n; i++) {
        k = sorted[i];
        v = json_object_get(models, k);
        api_status st;
        api_status_init(&st);
        json_t *req = json_pack("{s:s}", "preset", k);
        json_t *src = NULL, *ovr = NULL;
        json_t *ir = api_resolve_model(req, &src, &ovr, &st);
        json_t *item = json_pack("{s:s,s:O,s:O}", "name", k, "description",
                                 json_object_get(v, "description") ? json_object_get(v, "description") : json_null(),
                                 "source", json_object_get(v, "source") ? json_object_get(v, "source") : json_null());
        mfu_model m;
        if (ir && api_model_from_ir(ir, "/model", &m, &st) == 0) {
            mfu_params p;
            mfu_model_params(&m, &p);
            json_object_set_new(item, "params_total", json_integer(api_json_count(p.total)));
            json_object_set_new(item, "params_active", json_integer(api_json_count(p.active)));
            json_object_set_new(item, "layers", json_integer(mfu_model_layers(&m)));
            json_object_set_new(item, "d_model", json_integer(m.d_model));
            json_object_set_new(item, "format", json_string(json_object_get(v, "hf_config") ? "hf_config" : "ir"));
        } else {
            json_object_set_new(item, "error", json_string(st.n_errors ? st.errors[0].detail : "unresolved"));
        }
        json_array_append_new(out, item);
        json_decref(req);
        json_decref(ir);
        json_decref(src);
        json_decref(ovr);
    }
    free(sorted);
    return out;
}

json_t *api_presets_hardware(void)
{
    if (ensure_loaded()) return NULL;
    json_t *out = json_array();
    size_t n;
    const char **sorted = sorted_names(hardware, &n);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(hardware, sorted[i]);
        json_t *hw = json_object_get(v, "hardware");
        json_t *tiers = json_object_get(hw, "tiers");
        json_t *item = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:I,s:b}", "name", sorted[i],
                                 "description", json_object_get(v, "description") ? json_object_get(v, "description") : json_null(),
                                 "source", json_object_get(v, "source") ? json_object_get(v, "source") : json_null(),
                                 "peak_flops", json_object_get(hw, "peak_flops") ? json_object_get(hw, "peak_flops") : json_null(),
                                 "hbm_bytes", json_object_get(hw, "hbm_bytes") ? json_object_get(hw, "hbm_bytes") : json_null(),
                                 "hbm_bw_bytes_s", json_object_get(hw, "hbm_bw_bytes_s") ? json_object_get(hw, "hbm_bw_bytes_s") : json_null(),
                                 "tiers", (json_int_t)json_array_size(tiers),
                                 "efficiency_profile", json_object_get(hw, "efficiency") != NULL);
        json_array_append_new(out, item);
    }
    free(sorted);
    return out;
}

/* ---- model and hardware resolution (a request's "model" and "hardware":
 * a preset with overrides, a HuggingFace config.json, or the IR) -------- */

/* A 422 at ptr naming the presets there are (model or hardware). */
/* No preset by that name: 422 with the known names; or, while the library
 * cannot be loaded (out of memory), 503. Takes names. */
static void unknown_preset(api_status *st, const char *ptr, const char *kind, const char *name,
                           json_t *names)
{
    if (!presets_loaded()) {
        json_decref(names);
        api_fail(st, 503, ptr, "out of memory loading the preset library; try again");
        return;
    }
    char *list = json_dumps(names, JSON_COMPACT);
    api_fail(st, 422, ptr, "unknown %s preset \"%.64s\"; known: %s", kind, name, list ? list : "");
    free(list);
    json_decref(names);
}

static json_t *overrides_of(json_t *obj, const char *skip)
{
    json_t *o = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) if (strcmp(k, skip)) json_array_append_new(o, json_string(k));
    return o;
}

json_t *api_resolve_model(json_t *model, json_t **source, json_t **overridden, api_status *st)
{
    *source = NULL;
    *overridden = NULL;
    if (!json_is_object(model)) {
        api_fail(st, 422, "/model", "must be an object: {\"preset\": name}, {\"hf_config\": {...}} or the model IR");
        return NULL;
    }
    json_t *preset = json_object_get(model, "preset");
    json_t *hf = json_object_get(model, "hf_config");
    if (preset) {
        if (!json_is_string(preset)) {
            api_fail(st, 422, "/model/preset", "must be a string");
            return NULL;
        }
        json_t *p = api_preset_model(json_string_value(preset));
        if (!p) {
            unknown_preset(st, "/model/preset", "model", json_string_value(preset), api_preset_model_names());
            return NULL;
        }
        *source = json_string("preset");
        *overridden = overrides_of(model, "preset");
        json_t *base = json_object_get(p, "hf_config");
        if (base) {
            json_t *merged = json_deep_copy(base);
            const char *k;
            json_t *v;
            json_object_foreach(model, k, v) if (strcmp(k, "preset")) json_object_set(merged, k, v);
            json_t *ir = api_hf_to_ir(merged, "/model", st);
            json_decref(merged);
            /* the preset's name, not the file's model_type */
            if (ir) json_object_set_new(ir, "name", json_string(json_string_value(preset)));
            return ir;
        }
        json_t *ir = json_deep_copy(json_object_get(p, "model"));
        const char *k;
        json_t *v;
        json_object_foreach(model, k, v) if (strcmp(k, "preset")) json_object_set(ir, k, v);
        if (!json_object_get(ir, "name")) json_object_set_new(ir, "name", json_string(json_string_value(preset)));
        return ir;
    }
    if (hf) {
        *source = json_string("hf_config");
        return api_hf_to_ir(hf, "/model/hf_config", st);
    }
    *source = json_string("ir");
    return json_incref(model);
}

json_t *api_resolve_hardware(json_t *hw, json_t **overridden, api_status *st)
{
    *overridden = NULL;
    if (!json_is_object(hw)) {
        api_fail(st, 422, "/hardware", "must be an object: {\"preset\": name} or a hardware description");
        return NULL;
    }
    if (json_object_get(hw, "profile")) {
        /* a stored calibrated profile: mfud replaces it by its description
         * before the request gets here (server/commands.c); anywhere else
         * (the CLI) it names nothing */
        api_fail(st, 422, "/hardware/profile",
                 "a stored calibrated profile (POST /calibrate's profile.id) is resolved by mfud; here give the "
                 "description itself (mfu calibrate --hardware writes it; mfu search --hw-file reads it)");
        return NULL;
    }
    json_t *preset = json_object_get(hw, "preset");
    if (!preset) return json_incref(hw);
    if (!json_is_string(preset)) {
        api_fail(st, 422, "/hardware/preset", "must be a string");
        return NULL;
    }
    json_t *p = api_preset_hardware(json_string_value(preset));
    if (!p) {
        unknown_preset(st, "/hardware/preset", "hardware", json_string_value(preset), api_preset_hardware_names());
        return NULL;
    }
    json_t *out = json_deep_copy(json_object_get(p, "hardware"));
    *overridden = overrides_of(hw, "preset");
    const char *k;
    json_t *v;
    json_object_foreach(hw, k, v) if (strcmp(k, "preset")) json_object_set(out, k, v);
    return out;
}
