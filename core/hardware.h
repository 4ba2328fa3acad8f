/* core/hardware.h -- the hardware IR: peak FLOPs per dtype, HBM, network tiers,
 * and an efficiency profile that turns bounds into expected values.
 *
 * Presets and their sources live as data in presets/hardware/ (read by
 * api/); the core only sees this struct. Its JSON form: docs/model-ir.md and
 * docs/hardware-presets.md.
 */
#ifndef MFU_HARDWARE_H
#define MFU_HARDWARE_H

#include <stdint.h>

typedef enum { MFU_DT_BF16 = 0, MFU_DT_FP16, MFU_DT_FP8, MFU_DT_FP32, MFU_DT_COUNT } mfu_dtype;

#define MFU_MAX_TIERS 4
#define MFU_MAX_EFF_POINTS 12

typedef struct mfu_net_tier {
    char name[24];
    int64_t domain_size;   /* devices reachable on this tier (cumulative, innermost first) */
    double bw_bytes_s;     /* per device, one direction */
    double latency_s;      /* per hop / per collective step */
} mfu_net_tier;

/* Efficiency profile (docs/model.md F-TIME-OP: "GEMM efficiency by size, HBM and per-tier
 * network efficiency, fixed per-step overhead"). The ideal profile is all 1
 * with no overhead; gemm curve points are (FLOPs of one GEMM, efficiency),
 * interpolated in log(FLOPs), clamped at both ends. */
/* The key length the presets' attention efficiencies are stated at ("typical
 * training lengths": docs/hardware-presets.md) */
#define MFU_ATTN_REF_TOKENS 4096.0
/* The reduction length the GEMM curve's plateau stands for (the square
 * shapes of its sources reach it at 4096: docs/hardware-presets.md) */
#define MFU_GEMM_REF_K 4096.0

typedef struct mfu_efficiency {
    int n_gemm;
    double gemm_flops[MFU_MAX_EFF_POINTS];
    double gemm_eff[MFU_MAX_EFF_POINTS];
    double gemm_ln_flops[MFU_MAX_EFF_POINTS]; /* log(gemm_flops[i]): set with them by
                                               * mfu_efficiency_set_gemm (the search
                                               * reads the curve per GEMM of every shape) */
    double attn_eff;        /* fused attention kernels vs peak, at MFU_ATTN_REF_TOKENS keys */
    /* F-TIME-ATTN-LEN: a fused attention kernel over S < MFU_ATTN_REF_TOKENS
     * keys runs at attn_eff * g(S) / g(MFU_ATTN_REF_TOKENS), g(S) = S / (S +
     * this); 0: no length dependence */
    double attn_half_tokens;
    /* F-TIME-WAVE: output elements one wave of a GEMM kernel covers (the
     * GPU's SMs x one output tile each); a GEMM whose output spans w such
     * waves runs at w / (w + 1/2) of the curve. 0: no wave term (TPUs) */
    double gemm_wave_elems;
    /* F-TIME-GEMM-K: a GEMM whose reduction dimension K is shorter than
     * MFU_GEMM_REF_K runs at the curve x k(K) / k(MFU_GEMM_REF_K), k(K) =
     * K / (K + this): each output tile's fixed prologue and epilogue
     * against a main loop over K. 16-bit GEMMs and FP8 GEMMs; 0: no K
     * dependence (TPUs) */
    double gemm_half_k;
    double fp8_gemm_half_k;
    double hbm_eff;         /* achieved / peak HBM bandwidth */
    double net_eff[MFU_MAX_TIERS];
    /* message-size dependence of collective bandwidth per tier: a collective
     * of S bytes runs at net_eff * bw * S / (S + half), half = 0: none
     * (docs/collective-efficiency.md has the calibration) */
    double net_half_bytes[MFU_MAX_TIERS];
    double step_overhead_s; /* fixed per step: launch, data loader, sync */
    /* docs/model.md F-TIME-*: */
    double gemm_scale;      /* multiplies the GEMM curve (a calibrated parameter; 1 = as measured) */
    double fp8_gemm_scale;  /* FP8 GEMMs reach this fraction of the curve's efficiency at FP8 peak */
    /* F-TIME-FP8-ACC: FP8 data- and weight-gradient GEMMs reach this
     * fraction of the forward's efficiency (Hopper: split accumulation,
     * promoted to FP32 every few k-steps; 1 where the tensor cores keep
     * full-precision sums) */
    double fp8_bwd_gemm_scale;
    double kernel_overhead_s;    /* per non-GEMM kernel: launch and tail (GEMMs carry theirs in the curve) */
    double gemm_overhead_s;      /* per GEMM beyond the curve's own fixed cost (calibrated; 0 = the curve) */
    double microbatch_overhead_s;/* per micro-batch and pipeline stage: host-side scheduling */
    /* F-TIME-DISPATCH: host (CPU) time to issue one kernel from an eager
     * framework (Python, dispatcher, launch). The GPU waits for the host
     * where the host issues slower than the GPU runs: after every MoE
     * layer's device-to-host sync, or for a whole micro-batch of tiny
     * kernels. 0: the host always keeps ahead (XLA's compiled step). */
    double host_op_s;
    /* relative half-width of the expected step time's interval: the
     * calibration's cross-validated error (0: no interval known) */
    double uncertainty;
    /* compute throughput lost while a collective runs underneath it (the
     * collective kernels occupy SMs/CUs and HBM bandwidth): hidden
     * communication time x this is added back as exposed time */
    double overlap_slowdown;
} mfu_efficiency;

/* What runs on the chip: the frameworks a configuration may name depend on
 * it (GPU: Megatron-LM, torchtitan; TPU: MaxText). */
typedef enum { MFU_PLATFORM_GPU = 0, MFU_PLATFORM_TPU, MFU_PLATFORM_COUNT } mfu_platform;

/* Memory a training process cannot use for its tensors (docs/model.md
 * F-MEM-RESERVE). hbm_bytes itself is the capacity the runtime exposes to
 * the process (CUDA/HIP total, XLA bytes_limit), not the marketed figure. */
typedef struct mfu_mem_reserve {
    double context_bytes;     /* CUDA/HIP context, library workspaces (fixed) */
    double comm_buffer_bytes; /* collective library buffers per communicator */
    double fragmentation;     /* allocator fragmentation, fraction of what is allocated */
} mfu_mem_reserve;

typedef struct mfu_hardware {
    char name[48];
    mfu_platform platform;
    double peak_flops[MFU_DT_COUNT]; /* dense, no sparsity; 0 = unsupported */
    double hbm_bytes;       /* as the runtime exposes it to one process */
    double hbm_bw_bytes_s;
    /* the device's link to its host's memory, one direction (PCIe on
     * TPUs and most GPUs): what offloaded tensors cross. 0: unknown, and
     * nothing is offloaded (docs/model.md F-RC-MAXTEXT) */
    double host_bw_bytes_s;
    mfu_mem_reserve reserve;
    int n_tiers;
    mfu_net_tier tiers[MFU_MAX_TIERS];
    int has_profile;        /* eff was given (else expected = bound) */
    mfu_efficiency eff;
    double tdp_w;           /* datasheet board power per device, W (0 = unknown);
                             * the default power of energy estimates only */
    /* F-TIME-MXU: the side of a systolic matrix unit (TPU MXU: 128 on
     * v4, v5e, v5p; 256 on v6e), 0 = none modelled (GPU tensor cores'
     * tiles are inside the GEMM curve). A fused attention kernel's
     * per-head products use min(1, d / (ceil(d / side) * side)) of it. */
    double mxu_dim;
} mfu_hardware;

static inline double mfu_dtype_bytes(mfu_dtype d)
{
    return d == MFU_DT_FP8 ? 1.0 : d == MFU_DT_FP32 ? 4.0 : 2.0;
}

/* Ridge point (docs/model.md F-ROOF): peak / HBM bandwidth, FLOPs per byte. */
double mfu_ridge_point(const mfu_hardware *hw, mfu_dtype dt);

/* GEMM efficiency for one GEMM of `flops` under profile e (1 if no points). */
double mfu_gemm_eff(const mfu_efficiency *e, double flops);

/* The ideal profile: every efficiency 1, no overhead. */
void mfu_efficiency_ideal(mfu_efficiency *e);
/* Point i of the GEMM curve (flops increasing with i; n_gemm is the
 * caller's): keeps gemm_ln_flops in step. */
void mfu_efficiency_set_gemm(mfu_efficiency *e, int i, double flops, double eff);

/* Index of the innermost tier whose domain holds a group of `span` devices
 * (placed contiguously from the innermost axis); the outermost if none. */
int mfu_tier_for_span(const mfu_hardware *hw, int64_t span);

#endif
