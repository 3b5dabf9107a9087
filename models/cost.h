/*
 * Step-time cost model of one destination: how long one engine iteration
 * (a batch of prefill chunks and decodes) takes.
 *
 * The roofline model of docs/design.md §6: per GPU, the step takes the larger of
 * its compute time and its memory time, plus tensor-parallel all-reduces and
 * a fixed per-step overhead (scheduler, sampling, kernel launches).  The
 * engine describes each step by a few sums (cost_batch) accumulated while it
 * forms the batch, so evaluating the model is O(1) per step.
 *
 * Two models sit behind one interface, selected by name (cost_kind_parse):
 *
 *   "roofline"  max(compute, memory) + all-reduce + overhead, from the model
 *               and GPU specs and four efficiency factors (cost_params);
 *   "linear"    t = a + b·prefill_tokens + c·prefill_attn + d·decode_tokens
 *               + e·decode_ctx, five fitted coefficients (cost_linear),
 *               the form Vidur/DistServe-style simulators fit to profiles.
 *
 * Both sets of constants come from a per-deployment cost profile
 * (models/cost_profile.h, files in models/specs/cost/), fitted by
 * tests/calibrate.c as docs/calibration.md describes.
 *
 * Dispatch is a switch on `cost_model.kind`, not a vtable (STYLE.md §3):
 * cost_step_time runs once per engine step, both models are a dozen
 * multiply-adds on the same plain struct, the kind never changes during a
 * run (so the branch is perfectly predicted) and a switch lets the compiler
 * inline both bodies, where an indirect call could not be.  A third model
 * that needs state would justify a `cost_type` descriptor.
 *
 * Left out of the roofline model (stated so nobody relies on it):
 * activation memory traffic, attention kernel efficiency differing from
 * GEMM efficiency (one MFU for both), overlap of communication with
 * compute, and CPU-side scheduling time growing with batch size (the linear
 * model's per-decode coefficient absorbs part of the latter).
 */
#ifndef CRSIM_MODELS_COST_H
#define CRSIM_MODELS_COST_H

#include <stdint.h>

#include "models/spec.h"
#include "sim/core/xenum.h"

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

/* Efficiency factors of the roofline model (docs/design.md §6), calibrated in
 * docs/calibration.md. */
typedef struct cost_params {
    double mfu;                 /* achieved / peak tensor FLOP/s, (0, 1] */
    double mbu;                 /* achieved / peak HBM bandwidth, (0, 1] */
    double step_overhead_s;     /* fixed time per step, seconds */
    double allreduce_latency_s; /* fixed latency of one all-reduce, seconds */
} cost_params;

/* Coefficients of the linear step-time model (docs/design.md §6):
 *   t = a_s + b_s_per_token·prefill_tokens + c_s_per_attn·prefill_attn
 *       + d_s_per_decode·decode_tokens + e_s_per_ctx·decode_ctx
 * with the cost_batch sums as defined above.  a_s > 0, the others >= 0, so
 * every step takes a positive time. */
typedef struct cost_linear {
    double a_s;            /* fixed time per step, s */
    double b_s_per_token;  /* per prefill token, s/token */
    double c_s_per_attn;   /* per unit of Σ c·(p + c/2), s/token² */
    double d_s_per_decode; /* per decoding sequence, s/sequence */
    double e_s_per_ctx;    /* per context token read by a decode, s/token */
} cost_linear;

/* The step-time models, defined once (X-macro, sim/core/xenum.h): X(constant, name
 * of cost.model).  The order is the enum value and the index stored by the
 * config key; append only.  ROOFLINE is first (0) so that a zeroed
 * cost_model whose roofline fields are set by hand (as tests do) is a
 * roofline model. */
#define COST_KINDS(X) X(COST_ROOFLINE, roofline) X(COST_LINEAR, linear)

/* Which step-time model a cost_model evaluates (indexes cost_kind_names);
 * COST_KIND_N is their number. */
enum cost_kind { COST_KINDS(SIM_XENUM_CONST) COST_KIND_N };

/* Names of the cost models by enum cost_kind (from COST_KINDS),
 * NULL-terminated: {"roofline", "linear", NULL}.  Usable as the `choices`
 * of a SIM_CFG_ENUM config key, whose stored index is then the enum
 * value. */
extern const char *const cost_kind_names[];

/* A step-time model bound to one deployment, with every coefficient
 * precomputed.  Plain data: copy freely.  Only the fields of `kind` are
 * read. */
typedef struct cost_model {
    enum cost_kind kind;
    /* roofline (kind == COST_ROOFLINE) */
    double lin_s_per_token;   /* linear-layer compute time per token, s */
    double head_s_per_sample; /* LM-head compute per sampled token, s */
    double attn_s_per_unit;   /* attention compute per token² unit, s */
    double weight_s;          /* time to stream the weights once, s */
    double kv_s_per_token;    /* time to read or write one token's KV, s */
    double ar_s_per_token;    /* all-reduce transfer time per token, s */
    double ar_fixed_s;        /* all-reduce latency per step, s */
    double overhead_s;        /* fixed per-step overhead, s */
    /* linear (kind == COST_LINEAR) */
    cost_linear linear;
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
 * none when tp = 1.  Sources: docs/design.md §6; H100 figures in
 * models/specs/h100-sxm.yaml.  Sets m->kind = COST_ROOFLINE and zeroes
 * the linear coefficients.  Cannot fail (inputs are validated when the
 * spec is loaded).
 */
void cost_roofline_init(cost_model *m, const spec_deploy *d, const cost_params *p);

/* Bind the linear model with coefficients `c` (copied; a_s > 0 and the
 * others >= 0, as cost_profile_load checks).  Sets m->kind = COST_LINEAR
 * and zeroes the roofline fields.  Cannot fail. */
void cost_linear_init(cost_model *m, const cost_linear *c);

/* Parse a model name ("roofline" or "linear") into *out.  Returns 0, or
 * -1 for an unknown name (*out unchanged); callers report the error with
 * cost_kind_names as the expected values.  Cannot fail otherwise. */
int cost_kind_parse(const char *name, enum cost_kind *out);

/* Name of a kind ("roofline", "linear"; "?" if out of range).  Cannot
 * fail. */
const char *cost_kind_name(enum cost_kind kind);

/* Duration of one step with composition `b`, seconds (> 0 for any
 * non-empty batch of a model bound by the functions above).  O(1): one
 * predictable branch and a few multiply-adds.  Cannot fail. */
double cost_step_time(const cost_model *m, const cost_batch *b);

#endif
