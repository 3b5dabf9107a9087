/*
 * Step-time cost model of one destination: how long one engine iteration
 * (a batch of prefill chunks and decodes) takes.
 *
 * The roofline model of DESIGN.md §4: per GPU, the step takes the larger of
 * its compute time and its memory time, plus tensor-parallel all-reduces and
 * a fixed per-step overhead (scheduler, sampling, kernel launches).  The
 * engine describes each step by a few sums (cost_batch) accumulated while it
 * forms the batch, so evaluating the model is O(1) per step.
 *
 * Left out (stated so nobody relies on it): activation memory traffic,
 * attention kernel efficiency differing from GEMM efficiency (one MFU for
 * both), overlap of communication with compute, and CPU-side scheduling
 * time growing with batch size.  Issue "Engine fidelity" adds a fitted
 * linear model behind the same interface.
 */
#ifndef CRSIM_MODELS_COST_H
#define CRSIM_MODELS_COST_H

#include <stdint.h>

#include "spec.h"

/* Composition of one engine step, as sums over its sequences. */
typedef struct cost_batch {
    uint64_t prefill_tokens;  /* Σ c over prefill chunks (tokens) */
    uint64_t decode_tokens;   /* number of decoding sequences (1 token each) */
    uint64_t sampled;         /* sequences that emit a token this step
                                 (decodes + prefills completing their prompt) */
    double prefill_attn;      /* Σ c·(p + c/2) over chunks of c tokens after p
                                 earlier tokens (token²) */
    uint64_t prefill_ctx;     /* Σ p: earlier tokens whose KV prefill chunks read */
    uint64_t decode_ctx;      /* Σ context length over decodes (tokens) */
} cost_batch;

/* Efficiency factors of the roofline model (DESIGN.md §4), calibrated in
 * docs/calibration.md. */
typedef struct cost_params {
    double mfu;                 /* achieved / peak tensor FLOP/s, (0, 1] */
    double mbu;                 /* achieved / peak HBM bandwidth, (0, 1] */
    double step_overhead_s;     /* fixed time per step, seconds */
    double allreduce_latency_s; /* fixed latency of one all-reduce, seconds */
} cost_params;

/* A roofline model bound to one deployment, with every per-token
 * coefficient precomputed.  Plain data: copy freely. */
typedef struct cost_model {
    double lin_s_per_token;   /* linear-layer compute time per token, s */
    double head_s_per_sample; /* LM-head compute per sampled token, s */
    double attn_s_per_unit;   /* attention compute per token² unit, s */
    double weight_s;          /* time to stream the weights once, s */
    double kv_s_per_token;    /* time to read or write one token's KV, s */
    double ar_s_per_token;    /* all-reduce transfer time per token, s */
    double ar_fixed_s;        /* all-reduce latency per step, s */
    double overhead_s;        /* fixed per-step overhead, s */
} cost_model;

/*
 * Bind the roofline model to a deployment.  Per GPU (divide by tp):
 *   linear FLOPs   2·(P − E)·N + 2·V·d·S     (P params, E embedding params,
 *                                             N tokens, S sampled sequences)
 *   attention FLOPs 4·L·(H·h)·Σ c·(p + c/2) for prefill, 4·L·(H·h)·ctx per
 *                   decode (H query heads of dim h)
 *   bytes          weights once + KV read (Σp + Σctx) + KV written (N)
 *   t = max(FLOPs_lin/(peak_w·mfu) + FLOPs_attn/(peak_bf16·mfu),
 *           bytes/(bw·mbu)) + all-reduce + overhead
 * peak_w is the fp8 peak for fp8 weights (W8A8 GEMMs), else the bf16 peak;
 * attention runs at the bf16 peak.  All-reduce: 2 per layer of N·d·2 bytes
 * (bf16 activations), ring algorithm 2·(tp−1)/tp·size/link_bw plus latency;
 * none when tp = 1.  Sources: DESIGN.md §4; H100 figures in
 * models/specs/h100-sxm.yaml.  Cannot fail (inputs are validated when the
 * spec is loaded).
 */
void cost_roofline_init(cost_model *m, const spec_deploy *d, const cost_params *p);

/* Duration of one step with composition `b`, seconds (> 0).  Cannot fail. */
double cost_step_time(const cost_model *m, const cost_batch *b);

#endif
