/*
 * Cost profiles: the fitted constants of both step-time models for one
 * deployment (model, GPU, tensor parallelism, weight and KV dtypes), read
 * from a YAML file in models/specs/cost/.
 *
 * A profile exists because the efficiency of a real engine depends on the
 * whole deployment, not on the GPU alone: fp8 GEMMs reach a lower share of
 * their doubled peak than bf16 ones, a TP=2 step pays all-reduces, and a
 * small model spends a larger share of each step in fixed overhead.  Each
 * file records, as comments written by tests/calibrate.c, the measurements
 * its constants were fitted to and the residuals (docs/calibration.md).
 */
#ifndef CRSIM_MODELS_COST_PROFILE_H
#define CRSIM_MODELS_COST_PROFILE_H

#include <stdint.h>

#include "models/cost.h"
#include "models/spec.h"

/* One profile file, bound.  Strings are owned by the struct and freed by
 * cost_profile_fini. */
typedef struct cost_profile {
    char *name;                 /* "llama-3.3-70b_h100-sxm_tp2_fp8-fp8" */
    char *model;                /* model spec name, e.g. "llama-3.3-70b" */
    char *hardware;             /* GPU spec name, e.g. "h100-sxm" */
    int64_t tp;                 /* tensor-parallel degree */
    enum spec_dtype weight_dtype;
    enum spec_dtype kv_dtype;
    cost_params roofline;       /* mfu, mbu, step_overhead_s, allreduce_latency_s */
    cost_linear linear;         /* a..e of the linear model */
    char *source;               /* one line: what it was fitted to */
    char *transferred;          /* "" when every factor was fitted to this
                                   deployment's measurements; else which
                                   factors come from which other profile
                                   (key `transferred`, optional) */
} cost_profile;

/*
 * Path of profile `name_or_path` into *out: a string containing '/' or
 * ending in ".yaml" is a path and copied as is; otherwise
 * "<spec dir>/cost/<name>.yaml" (spec dir as spec_dir()).  *out is a new
 * string the caller frees.  Returns SIM_OK, or spec_dir's SIM_EIO (*out
 * NULL).  Aborts on OOM.
 */
int cost_profile_path(const char *name_or_path, char **out);

/*
 * Load a cost profile into *out (zeroed first).  Keys (all required except
 * where noted): name, model, hardware, tp (1..64), weight_dtype and
 * kv_dtype (bf16, fp16 or fp8), roofline.{mfu (0,1], mbu (0,1],
 * step_overhead_s [0,10] s, allreduce_latency_s [0,1] s},
 * linear.{a_s (0,10] s, b_s_per_token, c_s_per_attn, d_s_per_decode,
 * e_s_per_ctx, each [0,1] in seconds per unit}, source; optional
 * transferred (default "": what was not fitted to this deployment).
 * Returns SIM_OK; SIM_EIO if the file cannot be read; SIM_EINVAL for a
 * YAML error, an unknown, missing, mistyped or out-of-range key, with a
 * message naming the file, line and key path ("x.yaml:9: key
 * 'roofline.mfu' is -0.5; expected a number in (0, 1]").  On error *out
 * holds no allocations.  Failure class: see codes.
 */
int cost_profile_load(const char *name_or_path, cost_profile *out);

/* Free the strings of a profile.  Safe on a zeroed profile and twice.
 * Cannot fail. */
void cost_profile_fini(cost_profile *p);

/*
 * Name of the default profile of a deployment:
 * "<model>_<hardware>_tp<N>_<weight dtype>-<kv dtype>", model and hardware
 * being the spec names lower-cased ("Llama-3.3-70B" -> "llama-3.3-70b") and
 * fp16 written "bf16" (both 16-bit formats run at the same tensor-core peak
 * and move the same bytes on H100, so they share a profile).  Example:
 * "llama-3.3-70b_h100-sxm_tp2_fp8-fp8".  Returns a new string the caller
 * frees.  Cannot fail (aborts on OOM).
 */
char *cost_profile_default_name(const spec_deploy *d);

/*
 * Check that profile `p` was fitted for deployment `d` (model and hardware
 * names equal ignoring case, same tp, same dtypes with fp16 == bf16), then
 * bind a model of `kind` from it into *m: the roofline model from the
 * deployment's specs and p->roofline (cost_roofline_init), or the linear
 * model from p->linear (cost_linear_init).  Returns SIM_OK, or SIM_EINVAL
 * naming the profile and the mismatching field (*m unchanged).
 */
int cost_model_from_profile(cost_model *m, enum cost_kind kind, const spec_deploy *d,
                            const cost_profile *p);

#endif
