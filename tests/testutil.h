/* tests/testutil.h -- load presets into core structs for unit tests. */
#ifndef MFU_TESTUTIL_H
#define MFU_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "system.h"

/* A configuration with these axes and every switch at its plainest. */
static inline mfu_config test_cfg(int64_t dp, int64_t fsdp, int64_t tp, int64_t ep, int64_t pp, int64_t cp)
{
    mfu_config c;
    memset(&c, 0, sizeof c);
    c.ax[MFU_AX_DP] = dp; c.ax[MFU_AX_FSDP] = fsdp; c.ax[MFU_AX_TP] = tp;
    c.ax[MFU_AX_EP] = ep; c.ax[MFU_AX_PP] = pp; c.ax[MFU_AX_CP] = cp;
    c.etp = 1; c.vpp = 1; c.mbs = 1; c.grad_accum = 1; c.recompute_layers = -1;
    return c;
}

static inline int load_model(const char *preset, mfu_model *m)
{
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", preset);
    json_t *src = NULL, *ovr = NULL;
    json_t *ir = api_resolve_model(req, &src, &ovr, &st);
    int rc = ir ? api_model_from_ir(ir, "/model", m, &st) : -1;
    if (rc) fprintf(stderr, "load_model(%s): %s %s\n", preset, st.n_errors ? st.errors[0].pointer : "",
                    st.n_errors ? st.errors[0].detail : "");
    json_decref(req); json_decref(src); json_decref(ovr); json_decref(ir);
    return rc;
}

/* A model from its IR, written out in a test: 0, or -1 (said on stderr). */
static inline int load_model_ir(const char *ir, mfu_model *m)
{
    api_status st;
    api_status_init(&st);
    json_error_t je;
    json_t *j = json_loads(ir, 0, &je);
    int rc = j ? api_model_from_ir(j, "/model", m, &st) : -1;
    if (rc) fprintf(stderr, "load_model_ir: %s %s\n", j ? (st.n_errors ? st.errors[0].pointer : "") : je.text,
                    j && st.n_errors ? st.errors[0].detail : "");
    json_decref(j);
    return rc;
}

static inline int load_hw(const char *preset, mfu_hardware *hw)
{
    api_status st;
    api_status_init(&st);
    json_t *req = json_pack("{s:s}", "preset", preset);
    json_t *ovr = NULL;
    json_t *j = api_resolve_hardware(req, &ovr, &st);
    int rc = j ? api_hardware_from_json(j, "/hardware", hw, &st) : -1;
    json_decref(req); json_decref(ovr); json_decref(j);
    return rc;
}

/* A preset model on a preset chip, bf16, flash attention, causal: the
 * system every published-run test starts from. 0 on success. */
static inline int test_system(mfu_system *s, mfu_model *m, mfu_hardware *hw, const char *model,
                              const char *chip, int64_t seq, double batch_tokens, int64_t devices,
                              mfu_op *ops)
{
    if (load_model(model, m) || load_hw(chip, hw)) return -1;
    mfu_training t = {seq, batch_tokens, MFU_DT_BF16, MFU_ATTN_FLASH, MFU_CONV_CAUSAL, 0, 0, 0};
    return mfu_system_init(s, m, hw, &t, devices, 0, ops) == MFU_OK ? 0 : -1;
}

#endif
