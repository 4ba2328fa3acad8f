/* api/internal.h -- shared between the api/ sources, not part of the api. */
#ifndef MFU_API_INTERNAL_H
#define MFU_API_INTERNAL_H

#include "api.h"
#include "roofline.h"
#include "search.h"
#include "system.h"

typedef struct api_request {
    json_t *model_ir;          /* resolved IR (new reference) */
    json_t *model_source;      /* "preset" | "hf_config" | "ir" */
    json_t *model_overridden;  /* array or NULL */
    json_t *hw_json;
    json_t *hw_overridden;
    mfu_model model;
    mfu_hardware hw;
    int64_t devices;
    mfu_training train;
    int tp_overlap, ep_overlap;
    unsigned rc_custom;        /* the one module set no named recompute policy has */
    unsigned rc_mx_device, rc_mx_host; /* the "maxtext" remat names (MFU_MX_*), 0 if none */
    /* time and cost to train (training.tokens, cost): 0 = not asked */
    double train_tokens;
    double price_per_device_hour;   /* 0 = no price */
    char currency[8];
    double power_per_device_w;      /* the request's, else the chip's tdp_w (0 = unknown) */
    int power_given;
    double pue;                     /* facility power usage effectiveness (1 = chips only) */
} api_request;

extern const char *const api_schedule_names[];
extern const char *const api_recompute_names[];
extern const char *const api_split_names[];

int api_parse_request(json_t *req, int need_devices, api_request *r, api_status *st);
/* A request with a measured block: the request, its system (sys->hw points
 * into r: keep r where it is), the measured configuration and step time. */
int api_request_measured(json_t *request, api_request *r, mfu_system *sys, mfu_config *c,
                         double *step_time_s, mfu_op *ops, api_status *st);
void api_request_free(api_request *r);

/* answers people act on (api/plan.c): tiers of tied configurations (each
 * config of `configs` gets tier, tie_with_best, variants and, when
 * distinct, variants_search; returns the ties list), time and cost to
 * train (NULL when training.tokens is not given), and the no-fit answer
 * (closest miss, fewest devices that fit; the device scan stops after
 * budget_s). */
json_t *api_plan_ranking(json_t *configs, const mfu_ranked *top, int n, double u, int distinct);
json_t *api_plan_cost(const api_request *r, const mfu_eval *ev, double u);
json_t *api_plan_no_fit(const api_request *r, const mfu_system *sys, const mfu_search_opts *o,
                        const mfu_search_stats *stats, mfu_op *ops, double budget_s);

/* The predicted step of c as Chrome trace JSON (api/trace_export.c); ops:
 * scratch of MFU_SCRATCH_OPS. otherData.figures holds the times it drew. */
json_t *api_trace_export(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev, mfu_op *ops);

/* rendering (api/render.c) */
/* A whole-valued quantity held in a double (parameter counts, tokens per
 * batch, steps) for json_integer: rounded, clamped to json_int_t */
json_int_t api_json_count(double x);
/* A MaxText name policy's families: {name: "device" | "offload" | "remat"}. */
json_t *api_remat_json(const mfu_rc_policy *rp);
json_t *api_render_model(const api_request *r);
json_t *api_render_hardware(const api_request *r);
/* ops NULL: summary only */
json_t *api_render_roofline(const api_request *r, const mfu_roofline *roof, const mfu_op *ops);
/* Configurations ranked below this one carry only the binding stage's
 * memory, not every stage's (a top 1,000 of 64-stage pipelines would be
 * megabytes of per-stage figures). */
#define API_STAGES_RANKS 20
/* ops: scratch of MFU_MAX_OPS for the per-stage memory report, or NULL to
 * leave it out */
json_t *api_render_config(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev, int rank,
                          mfu_op *ops);
/* trace: the run's trace measurement (api/trace.c), or NULL: with one, the
 * gap is also named per component from the trace against the prediction. */
json_t *api_render_measured(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev,
                            double step_time_s, mfu_op *ops, json_t *trace);
/* The switches a measured configuration leaves out, where their defaults
 * do not fit, and its micro-batch where it gives none (api/measured.c):
 * the fastest variant of them that fits. cj: the configuration's JSON
 * (what it gives); returns API_INFER_* bits. */
#define API_INFER_SP 1u
#define API_INFER_ZERO 2u
#define API_INFER_RECOMPUTE 4u
#define API_INFER_VPP 8u
#define API_INFER_MBS 16u
unsigned api_infer_measured(const mfu_system *sys, mfu_config *c, json_t *cj, unsigned admitted, mfu_op *ops);
/* ["sp", "zero", "recompute", "vpp", "mbs"] as the bits say */
json_t *api_inferred_json(unsigned bits);
/* Why a configuration pinned by search.fix is not in the ranking. */
json_t *api_render_pinned(const mfu_system *sys, const mfu_search_opts *o, const mfu_config *c,
                          mfu_op *ops);

/* launch recipes (api/recipe.c, docs/recipes.md) */
/* {"megatron": R, "torchtitan": R, "maxtext": R}: each R is {"argv": [...],
 * "notes": [...]} (Megatron-LM, MaxText), {"toml": "...", "notes": [...]}
 * (torchtitan) or {"unavailable": reason}. */
json_t *api_render_recipes(const mfu_system *sys, const mfu_config *c, const mfu_eval *ev);
/* A recipe's argv as one POSIX shell line (null without an argv). */
json_t *api_recipe_shell_line(const json_t *recipe);
/* The modules of a recompute policy that act on this model: "act" (a dense
 * MLP's activation) means nothing without a dense MLP or shared experts. */
unsigned api_rc_effective_modules(const mfu_system *sys, unsigned modules);

#endif
