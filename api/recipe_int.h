/* api/recipe_int.h -- what the launch-recipe files share (api/recipe.c:
 * the entry points; api/recipe_parts.c: the builders, the model view, the
 * refusals; recipe_megatron.c, recipe_torchtitan.c, recipe_maxtext.c: one
 * framework each). */
#ifndef MFU_RECIPE_INT_H
#define MFU_RECIPE_INT_H

#include <stdint.h>

#include "internal.h"

/* Steps of the throughput run every recipe asks for (synthetic data). */
#define RECIPE_STEPS 100

/* The model as the recipes need it. */
typedef struct model_view {
    const mfu_model *m;
    int64_t L;
    const mfu_attention *at;    /* the first run's attention */
    int attn_same;              /* every run's attention has at's shape (windows aside) */
    int64_t window;             /* the windowed layers' window (0: none has one) */
    int64_t windowed;           /* layers with a window */
    int windows_same;           /* one window size for every windowed layer */
    const mfu_mlp *dense, *moe; /* the first dense / MoE run's MLP (NULL: none) */
    int mlp_same;               /* the dense runs agree with each other, and the MoE runs */
    int act_same;               /* every MLP and shared expert: one gating and activation */
    int gated;
    mfu_act act;
    int64_t moe_layers;
    int64_t lead_dense;         /* dense layers before the first MoE one when every later
                                 * layer is MoE; -1 for any other pattern */
} model_view;

/* The framework a refusal is for. */
enum { FW_R_MEGATRON = 0, FW_R_TORCHTITAN, FW_R_MAXTEXT };

/* A note: one sentence on what the framework does differently. */
void rcp_note(json_t *notes, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* {"unavailable": why} */
json_t *rcp_unavailable(const char *why);
/* argv words: a word, "--name value", MaxText's "key=value" */
void rcp_word(json_t *argv, const char *w);
void rcp_opt_int(json_t *argv, const char *name, int64_t v);
void rcp_opt_str(json_t *argv, const char *name, const char *v);
void rcp_kv_int(json_t *argv, const char *key, int64_t v);
void rcp_kv_str(json_t *argv, const char *key, const char *v);
void rcp_model_view_of(const mfu_system *sys, model_view *v);
/* The refusal of a framework that cannot build the model (NULL: none). */
json_t *rcp_feature_refused(const model_view *v, int fw, const char *framework);
json_t *rcp_refused(const char *why_not, const model_view *v, const char *says);
int64_t rcp_global_batch_seqs(const mfu_config *c);

/* One framework's recipe for c (why_not: the rule that refuses it, or NULL). */
json_t *rcp_megatron(const mfu_system *sys, const mfu_config *c, const model_view *v, const char *why_not);
json_t *rcp_torchtitan(const mfu_system *sys, const mfu_config *c, const model_view *v, const char *why_not);
json_t *rcp_maxtext(const mfu_system *sys, const mfu_config *c, const model_view *v, const char *why_not);
/* Model layers per decoder layer of the MaxText model this one is (its
 * models/<name>.yml: gemma2's merges a local and a global layer), 1 for
 * any other. */
int64_t rcp_maxtext_layer_unit(const mfu_system *sys);

#endif
