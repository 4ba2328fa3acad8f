/* api/recipe.c -- launch recipes: what to give Megatron-LM, torchtitan and
 * MaxText so that each runs one configuration as mfud modelled it
 * (docs/recipes.md has the mapping, field by field, with its sources).
 *
 * Every argument name written here comes from the framework's own source,
 * read at these versions:
 *   Megatron-LM  NVIDIA/Megatron-LM tag core_v0.15.0
 *                (0d7e02bd26d3eb347ad8d1bef625002babfa6df7):
 *                megatron/training/arguments.py, the last release whose
 *                parser spells every flag out (from core_v0.16 the model
 *                flags are generated from TransformerConfig's fields, same
 *                names); tests/data/megatron_arguments.txt lists them.
 *   torchtitan   pytorch/torchtitan tag v0.2.2
 *                (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce):
 *                torchtitan/config/job_config.py (tests/data/torchtitan_keys.txt);
 *                flavors from torchtitan/models/{llama3,qwen3,deepseek_v3}/__init__.py.
 *   MaxText      AI-Hypercomputer/maxtext main, 2026
 *                (e591f30cbbf217ed67ef71263ec0538239f9c3b8):
 *                src/maxtext/configs/base.yml (tests/data/maxtext_keys.txt);
 *                models from src/maxtext/configs/models/NAME.yml.
 *
 * A recipe is {"argv": [...], "notes": [...]} (Megatron-LM, MaxText),
 * {"toml": "...", "notes": [...]} (torchtitan), or {"unavailable": why}.
 * Notes say, one sentence each, what the framework does differently from
 * what the estimate assumes, or what the launch needs besides the argv.
 *
 * This file: the entry points; the builders, the model view and the
 * refusals are api/recipe_parts.c's; one file per framework
 * (api/recipe_megatron.c, api/recipe_torchtitan.c, api/recipe_maxtext.c),
 * api/recipe_int.h between them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_int.h"

json_t *api_render_recipes(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev)
{
    /* the first rule each framework that does not launch c breaks
     * (docs/frameworks.md) */
    const char *why_not[MFU_FW_COUNT] = {NULL, NULL, NULL};
    unsigned fw = ev->frameworks;
    if (fw != MFU_FW_ALL) (void)mfu_config_frameworks(sys, c, why_not);
    for (int f = 0; f < MFU_FW_COUNT; f++) {
        if (fw & MFU_FW_MASK(f)) why_not[f] = NULL;
        else if (!why_not[f]) why_not[f] = "no rule of docs/frameworks.md admits it";
    }
    model_view v;
    rcp_model_view_of(sys, &v);
    return json_pack("{s:o,s:o,s:o}", "megatron", rcp_megatron(sys, c, &v, why_not[MFU_FW_MEGATRON]),
                     "torchtitan", rcp_torchtitan(sys, c, &v, why_not[MFU_FW_TORCHTITAN]), "maxtext",
                     rcp_maxtext(sys, c, &v, why_not[MFU_FW_MAXTEXT]));
}

/* One POSIX shell word: as it is when it holds only characters no shell
 * treats specially, else in single quotes ('\'' for a quote inside). */
static void shell_word(FILE *f, const char *w)
{
    static const char SAFE[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/:=+@%";
    if (*w && strspn(w, SAFE) == strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (; *w; w++) {
        if (*w == '\'') fputs("'\\''", f);
        else fputc(*w, f);
    }
    fputc('\'', f);
}

json_t *api_recipe_shell_line(const json_t *recipe)
{
    const json_t *argv = json_object_get(recipe, "argv");
    if (!json_is_array(argv)) return json_null();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return json_null();
    for (size_t i = 0; i < json_array_size(argv); i++) {
        if (i) fputc(' ', f);
        shell_word(f, json_string_value(json_array_get(argv, i)));
    }
    fclose(f);
    json_t *s = json_string(buf ? buf : "");
    free(buf);
    return s;
}
