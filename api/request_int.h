/* api/request_int.h -- inside the request code (docs/model-ir.md, docs/model.md
 * F-SEARCH): what api/request.c (parsing), api/prepared.c (the normal
 * form, its key, the prepared request), api/search_opts.c (a request's
 * "search") and api/engines.c (running the roofline and the search) give
 * one another. Nothing else includes it. */
#ifndef MFU_API_REQUEST_INT_H
#define MFU_API_REQUEST_INT_H

#include "api.h"
#include "internal.h"

/* names of enumerations as requests spell them (api/request.c) */
extern const char *const rq_convs[], *const rq_impls[], *const rq_dtypes[], *const rq_frameworks[],
    *const rq_grad_dtypes[], *const rq_axes[], *const rq_ranks[], *const rq_distinct[], *const rq_fp8_recipes[];

/* A search request parsed once (api_prepare_search), run by the engines. */
struct api_prepared {
    api_request r;
    mfu_system sys;             /* points into r: the object does not move */
    mfu_search_opts o;
    double deadline;
    mfu_op *ops;
    json_t *request;            /* owned by api_prepare_search's object */
    json_t *normal;
};

/* api/request.c */
/* echo (RQ_ECHO): a measured configuration, which may give back what an
 * answer lists with a named policy (its recompute_modules, a fixed-names
 * policy's remat), checked against the model by rq_parse_config; with
 * RQ_ECHO_TPU too, a TPU run's, whose minimal and save_dot_except_mlp
 * are MaxText's (no context) unless given back with their modules */
enum { RQ_ECHO = 1, RQ_ECHO_TPU = 2 };
int rq_parse_recompute(json_t *obj, const char *ptr, int def, int echo, unsigned *custom, unsigned mx[2],
                       api_status *st);
int rq_parse_remat(json_t *rj, const char *ptr, unsigned *device, unsigned *host, api_status *st);
/* The frameworks a search's options admit (MFU_FW_ANY: every one). */
static inline unsigned admitted_of(const mfu_search_opts *o)
{
    return (o->frameworks & MFU_FW_ANY) ? MFU_FW_ALL : o->frameworks;
}
/* A configuration (measured or compared), its zero stage defaulted for the
 * frameworks `admitted` (MFU_FW_MASK bits) as rq_default_zero says. */
int rq_parse_config(json_t *cj, const char *ptr, const mfu_system *sys, mfu_config *c, unsigned admitted,
                    api_status *st);
/* The zero stage of a configuration that names none and whose only data
 * axis is cp (dp 1, fsdp 1): its ranks shard the model (zero 3) where the
 * admitted frameworks that run that are at least as many as those that run
 * the replicas (zero 0); with a replica axis too (dp > 1, fsdp 1: HSDP over
 * cp), only where no admitted framework runs the replicas. torchtitan (FSDP over dp_shard x cp,
 * parallel_dims.py) and MaxText (the weights' embed axis over context,
 * base.yml) never replicate over cp; Megatron-LM runs both, FSDP only
 * without pp and with untied embeddings: a Megatron-only request, or a
 * pipelined layout no other admitted framework takes, keeps 0. Others:
 * unchanged. */
void rq_default_zero(const mfu_system *sys, mfu_config *c, unsigned admitted);
/* The schedule of a configuration that names none: 1F1B without pp; with
 * pp, interleaved where vpp > 1 and 1F1B otherwise (Megatron-LM,
 * torchtitan), GPipe where MaxText is the platform's only admitted
 * framework (its pipelines are GPipe, circular with vpp). */
mfu_schedule rq_default_schedule(const mfu_system *sys, const mfu_config *c, unsigned admitted);
int rq_default_recompute(const mfu_system *sys, unsigned admitted);
/* The sp and etp of a configuration that names them not, with tp > 1:
 * sequence parallel, and expert TP = tp on an MoE model, where some
 * admitted framework runs the layout so and none as it was given, and
 * the layout stays legal (sp needs tp to divide seq/cp) --
 * MaxText, whose activations always split over the tensor axis (FW-X7)
 * and whose experts split over it too (FW-X2), alone on TPUs. On GPUs
 * Megatron-LM runs a dense model's tp without sp (--sequence-parallel is
 * off unless given, megatron/training/arguments.py) and etp 1, so a
 * configuration that does not say keeps sp 0 and etp 1; an MoE model's tp
 * it runs only with sp (FW-M3), so there sp. */
void rq_default_sp_etp(const mfu_system *sys, mfu_config *c, unsigned admitted, int sp_given, int etp_given);

/* api/search_opts.c */
int rq_parse_search(json_t *sj, const mfu_system *sys, mfu_search_opts *o, double *deadline, api_status *st);

/* api/prepared.c */
/* The request's system over `devices` (its remat names, MaxText's decoder
 * layer on TPUs): an MFU_* code. */
int rq_system_setup(mfu_system *sys, const api_request *r, int64_t devices, mfu_op *ops);
int rq_system_init(mfu_system *sys, const api_request *r, mfu_op *ops, api_status *st);
void rq_set_recompute(json_t *obj, const mfu_system *sys, int slot);
int rq_parse_measured(json_t *meas, int engine, double *t, json_t **trace, api_status *st);
void rq_prepared_fini(struct api_prepared *p);
int rq_prepare(json_t *request, int need, struct api_prepared *p, api_status *st);
json_t *rq_normal_form(struct api_prepared *p, json_t *request, api_status *st);


#endif
